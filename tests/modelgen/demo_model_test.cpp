#include "modelgen/demo_model.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

namespace qmlx {
namespace {

namespace fs = std::filesystem;

TEST(DemoModel, WrittenOnceAtomicallyUnderQmlxHome) {
  const fs::path home = fs::temp_directory_path() / "qmlx_demo_home_test";
  fs::remove_all(home);
  const char* previous = std::getenv("QMLX_HOME");
  const std::string saved = previous ? previous : "";
  ::setenv("QMLX_HOME", home.c_str(), 1);

  const std::string path = ensure_demo_model();
  EXPECT_EQ(fs::path(path), home / "models" / "demo-qwen3_5_moe");
  std::ifstream config_file(fs::path(path) / "config.json");
  const auto config = nlohmann::json::parse(config_file);
  EXPECT_EQ(config["model_type"], "qwen3_5_moe");
  EXPECT_EQ(config["quantization"]["bits"], 4);
  const auto written = fs::last_write_time(fs::path(path) / "model.safetensors");
  EXPECT_LT(fs::file_size(fs::path(path) / "model.safetensors"), 8u << 20);

  EXPECT_EQ(ensure_demo_model(), path);  // second call: nothing rewritten
  EXPECT_EQ(fs::last_write_time(fs::path(path) / "model.safetensors"), written);
  int entries = 0;
  for (const auto& entry : fs::directory_iterator(home / "models")) {
    (void)entry;
    ++entries;
  }
  EXPECT_EQ(entries, 1);  // no temporary folder left behind

  if (previous) {
    ::setenv("QMLX_HOME", saved.c_str(), 1);
  } else {
    ::unsetenv("QMLX_HOME");
  }
  fs::remove_all(home);
}

}  // namespace
}  // namespace qmlx
