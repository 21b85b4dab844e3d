#include "model/vision_config.h"

#include <cmath>

#include <nlohmann/json.hpp>

#include "base/error.h"

namespace qmlx {
namespace {

using nlohmann::json;

template <typename T>
void read(const json& v, const char* key, const std::string& source, T& field) {
  if (!v.contains(key) || v[key].is_null()) return;
  try {
    field = v[key].get<T>();
  } catch (const json::exception&) {
    throw Error(source + ": vision_config field '" + key + "' has the wrong type");
  }
}

}  // namespace

int VisionConfig::grid_side() const {
  return int(std::lround(std::sqrt(double(num_position_embeddings))));
}

VisionConfig VisionConfig::from_json(const json& v, const std::string& source) {
  if (!v.is_object()) throw Error(source + ": vision_config is not a JSON object");
  VisionConfig c;
  read(v, "depth", source, c.depth);
  read(v, "hidden_size", source, c.hidden_size);
  read(v, "num_heads", source, c.num_heads);
  read(v, "intermediate_size", source, c.intermediate_size);
  read(v, "patch_size", source, c.patch_size);
  read(v, "temporal_patch_size", source, c.temporal_patch_size);
  read(v, "spatial_merge_size", source, c.spatial_merge_size);
  read(v, "in_channels", source, c.in_channels);
  read(v, "out_hidden_size", source, c.out_hidden_size);
  read(v, "num_position_embeddings", source, c.num_position_embeddings);
  std::string act = "gelu_pytorch_tanh";
  read(v, "hidden_act", source, act);
  if (act != "gelu_pytorch_tanh" && act != "gelu")
    throw Error(source + ": vision_config hidden_act '" + act +
                "' is not supported (gelu_pytorch_tanh or gelu)");
  c.mlp_gelu_tanh = act == "gelu_pytorch_tanh";

  const auto fail = [&](const std::string& what) {
    throw Error(source + ": vision_config " + what);
  };
  for (auto [value, name] : {std::pair{c.depth, "depth"},
                             {c.hidden_size, "hidden_size"},
                             {c.num_heads, "num_heads"},
                             {c.intermediate_size, "intermediate_size"},
                             {c.patch_size, "patch_size"},
                             {c.temporal_patch_size, "temporal_patch_size"},
                             {c.spatial_merge_size, "spatial_merge_size"},
                             {c.in_channels, "in_channels"},
                             {c.out_hidden_size, "out_hidden_size"},
                             {c.num_position_embeddings, "num_position_embeddings"}})
    if (value <= 0) fail(std::string("field '") + name + "' must be positive");
  if (c.hidden_size % c.num_heads != 0) fail("num_heads must divide hidden_size");
  // The 2D rotary splits each head's rotated half between rows and columns.
  if (c.head_dim() % 4 != 0) fail("head dim (hidden_size / num_heads) must be a multiple of 4");
  if (c.grid_side() * c.grid_side() != c.num_position_embeddings)
    fail("num_position_embeddings must be a square (the learned position grid)");
  return c;
}

}  // namespace qmlx
