#include "image/preprocessor_config.h"

#include <array>
#include <cstdint>
#include <limits>

#include <nlohmann/json.hpp>

#include "base/error.h"

namespace qmlx::image {
namespace {

using json = nlohmann::json;

[[noreturn]] void bad_key(const std::string& file, const std::string& key, const std::string& why) {
  throw Error(file + ": \"" + key + "\" " + why);
}

// A positive integer at `key` of `object` into `out`; absent or null leaves `out` as it is.
template <typename Int>
void read_positive(const json& object, const char* key, const std::string& file,
                   const std::string& path, Int& out) {
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) return;
  if (!it->is_number_integer() || it->get<int64_t>() <= 0 ||
      it->get<int64_t>() > int64_t(std::numeric_limits<Int>::max())) {
    bad_key(file, path + key, "must be a positive integer");
  }
  out = Int(it->get<int64_t>());
}

// image_mean / image_std: three numbers (one per RGB channel), or one for all three.
void read_channels(const json& object, const char* key, const std::string& file,
                   std::array<float, 3>& out) {
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) return;
  if (it->is_number()) {
    out.fill(it->get<float>());
    return;
  }
  if (!it->is_array() || it->size() != 3) bad_key(file, key, "must be 3 numbers (R, G, B)");
  for (size_t c = 0; c < 3; ++c) {
    if (!(*it)[c].is_number()) bad_key(file, key, "must be 3 numbers (R, G, B)");
    out[c] = (*it)[c].get<float>();
  }
}

}  // namespace

VisionPreprocessConfig parse_preprocessor_config(std::string_view json_text,
                                                 const std::string& file) {
  const json config = json::parse(json_text, nullptr, false);
  if (config.is_discarded() || !config.is_object()) throw Error(file + ": not a JSON object");
  VisionPreprocessConfig out;
  read_positive(config, "patch_size", file, "", out.patch_size);
  read_positive(config, "temporal_patch_size", file, "", out.temporal_patch_size);
  read_positive(config, "merge_size", file, "", out.merge_size);
  if (auto size = config.find("size"); size != config.end() && size->is_object()) {
    read_positive(*size, "shortest_edge", file, "size.", out.min_pixels);
    read_positive(*size, "longest_edge", file, "size.", out.max_pixels);
    read_positive(*size, "min_pixels", file, "size.", out.min_pixels);
    read_positive(*size, "max_pixels", file, "size.", out.max_pixels);
  }
  read_positive(config, "min_pixels", file, "", out.min_pixels);
  read_positive(config, "max_pixels", file, "", out.max_pixels);
  if (out.min_pixels > out.max_pixels) {
    throw Error(file + ": the smallest image (" + std::to_string(out.min_pixels) +
                " pixels) is larger than the largest (" + std::to_string(out.max_pixels) + ")");
  }
  if (auto it = config.find("rescale_factor"); it != config.end() && !it->is_null()) {
    if (!it->is_number() || it->get<double>() <= 0) {
      bad_key(file, "rescale_factor", "must be a positive number");
    }
    out.rescale_factor = it->get<double>();
  }
  read_channels(config, "image_mean", file, out.mean);
  read_channels(config, "image_std", file, out.std);
  for (float s : out.std) {
    if (!(s > 0)) bad_key(file, "image_std", "must be positive");
  }
  return out;
}

}  // namespace qmlx::image
