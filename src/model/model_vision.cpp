// Model's entry to the vision tower: the encoder itself is vision_encoder.cpp.
#include "base/error.h"
#include "base/logging.h"
#include "model/gguf_file.h"
#include "model/mmproj_weights.h"
#include "model/model.h"

namespace qmlx {

std::string Model::vision_unavailable_reason() const {
  if (has_vision()) return "";
  if (!weights_.vision_dropped.empty())
    return "the model's vision tower is " + weights_.vision_dropped + " and was not loaded";
  return "the model has no vision tower";
}

void Model::attach_mmproj(const std::string& path) {
  auto file = std::make_shared<GgufFile>(path);
  if (weights_.vision)
    log_info("model: the vision tower of --mmproj " + path + " replaces the checkpoint's");
  weights_.vision.reset();
  weights_.vision =
      load_mmproj_vision(*file, config_.hidden_size, weights_, weights_.vision_dropped);
  file->release_metadata();
  mmproj_ = std::move(file);
}

std::vector<float> Model::encode_image(std::span<const float> pixel_values,
                                       const PatchGrid& grid) const {
  if (!has_vision()) throw Error(directory_ + ": " + vision_unavailable_reason());
  return qmlx::encode_image(*weights_.vision, pixel_values, grid);
}

}  // namespace qmlx
