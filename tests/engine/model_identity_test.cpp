// The model identity that keys a cache store: equal for the same model files (wherever they
// are), different when anything that changes a cached byte's meaning changes: the weights, the
// storage format or quantization, the architecture.
#include <gtest/gtest.h>

#include <filesystem>

#include "engine/model_identity.h"
#include "tiny_model.h"

namespace qmlx {
namespace {

std::string identity_of(const testing::TinyModelSpec& spec, const std::string& tag) {
  const std::string dir = testing::make_temp_dir(tag);
  testing::write_tiny_model(dir, spec);
  std::string id = model_identity(*Model::load(dir));
  std::filesystem::remove_all(dir);
  return id;
}

TEST(ModelIdentity, SameFilesSameIdentityAnythingElseDiffers) {
  testing::TinyModelSpec base{"qwen3_5", "mlx"};
  base.bits = 4;
  const std::string a = identity_of(base, "identity-a");
  EXPECT_EQ(a, identity_of(base, "identity-b")) << "another folder, same files";

  testing::TinyModelSpec other_weights = base;
  other_weights.seed = 2;
  EXPECT_NE(a, identity_of(other_weights, "identity-seed"));

  testing::TinyModelSpec other_bits = base;
  other_bits.bits = 8;
  EXPECT_NE(a, identity_of(other_bits, "identity-bits"));

  testing::TinyModelSpec other_arch = base;
  other_arch.arch = "qwen3_5_moe";
  EXPECT_NE(a, identity_of(other_arch, "identity-arch"));

  testing::TinyModelSpec float_layout{"qwen3_5", "hf"};
  EXPECT_NE(a, identity_of(float_layout, "identity-float"));
}

}  // namespace
}  // namespace qmlx
