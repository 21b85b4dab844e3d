#include "modelgen/safetensors_writer.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace qmlx::modelgen {
namespace {

namespace fs = std::filesystem;

std::string read_file(const fs::path& path) {
  std::ifstream file(path, std::ios::binary);
  std::ostringstream text;
  text << file.rdbuf();
  return text.str();
}

TensorEntry counting_tensor(const std::string& name, TensorDType dtype, std::vector<int64_t> shape,
                            uint8_t first) {
  TensorEntry entry{name, dtype, std::move(shape), nullptr};
  entry.fill = [first](std::span<uint8_t> out) {
    for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<uint8_t>(first + i);
  };
  return entry;
}

class SafetensorsWriterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ =
        fs::temp_directory_path() /
        ("qmlx_st_" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Parses a file the way the safetensors spec defines it and checks its invariants.
  nlohmann::json check_file(const fs::path& path) {
    const std::string bytes = read_file(path);
    EXPECT_GE(bytes.size(), 8u);
    uint64_t header_size = 0;
    for (int i = 7; i >= 0; --i) header_size = header_size << 8 | uint8_t(bytes[i]);
    EXPECT_EQ(header_size % 8, 0u);
    EXPECT_LE(8 + header_size, bytes.size());
    const auto header = nlohmann::json::parse(bytes.substr(8, header_size));
    std::vector<std::pair<uint64_t, uint64_t>> ranges;
    for (const auto& [name, info] : header.items()) {
      if (name == "__metadata__") continue;
      ranges.emplace_back(info["data_offsets"][0], info["data_offsets"][1]);
    }
    std::sort(ranges.begin(), ranges.end());
    uint64_t expected = 0;
    for (const auto& [begin, end] : ranges) {
      EXPECT_EQ(begin, expected);  // contiguous, no gaps or overlaps
      expected = end;
    }
    EXPECT_EQ(8 + header_size + expected, bytes.size());
    data_ = bytes.substr(8 + header_size);
    return header;
  }

  fs::path dir_;
  std::string data_;
};

TEST_F(SafetensorsWriterTest, SingleFileHeaderOffsetsAndBytes) {
  std::vector<TensorEntry> tensors;
  tensors.push_back(counting_tensor("b.weight", TensorDType::kBF16, {3, 2}, 10));
  tensors.push_back(counting_tensor("a.weight", TensorDType::kF32, {5}, 100));
  tensors.push_back(counting_tensor("c.packed", TensorDType::kU32, {2, 1}, 200));
  write_safetensors_model(dir_.string(), std::move(tensors), 1, {{"format", "mlx"}});
  const auto header = check_file(dir_ / "model.safetensors");
  EXPECT_EQ(header["__metadata__"]["format"], "mlx");
  EXPECT_EQ(header["a.weight"]["dtype"], "F32");
  EXPECT_EQ(header["b.weight"]["dtype"], "BF16");
  EXPECT_EQ(header["c.packed"]["dtype"], "U32");
  EXPECT_EQ(header["b.weight"]["shape"], nlohmann::json({3, 2}));
  const uint64_t b_begin = header["b.weight"]["data_offsets"][0];
  const uint64_t b_end = header["b.weight"]["data_offsets"][1];
  ASSERT_EQ(b_end - b_begin, 12u);
  for (uint64_t i = 0; i < 12; ++i) EXPECT_EQ(uint8_t(data_[b_begin + i]), 10 + i);
}

TEST_F(SafetensorsWriterTest, ShardsWithIndexCoverEveryTensor) {
  std::vector<TensorEntry> tensors;
  for (int i = 0; i < 7; ++i) {
    tensors.push_back(counting_tensor("t" + std::to_string(i), TensorDType::kF32, {16}, i));
  }
  write_safetensors_model(dir_.string(), std::move(tensors), 3, {{"format", "pt"}});
  const auto index = nlohmann::json::parse(read_file(dir_ / "model.safetensors.index.json"));
  EXPECT_EQ(index["metadata"]["total_size"], 7 * 64);
  ASSERT_EQ(index["weight_map"].size(), 7u);
  std::set<std::string> files;
  for (const auto& [name, file] : index["weight_map"].items()) {
    files.insert(file);
    EXPECT_TRUE(check_file(dir_ / file.get<std::string>()).contains(name)) << name;
  }
  EXPECT_EQ(files.size(), 3u);
  EXPECT_TRUE(files.count("model-00001-of-00003.safetensors"));
}

}  // namespace
}  // namespace qmlx::modelgen
