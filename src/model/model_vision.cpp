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
  if (device_) device_->detach_vision();  // it reads the tower being replaced
  weights_.vision.reset();
  weights_.vision =
      load_mmproj_vision(*file, config_.hidden_size, weights_, weights_.vision_dropped);
  file->release_metadata();
  mmproj_ = std::move(file);
}

void Model::upload_vision_tower(ModelLoadOptions::TowerOffload offload) {
  if (!device_ || !weights_.vision) return;
  if (offload == ModelLoadOptions::TowerOffload::kOff) {
    log_info("model: the vision tower runs on the CPU (--mmproj-offload off)");
    return;
  }
  if (offload == ModelLoadOptions::TowerOffload::kAuto && device_->runs_on_cpu_cores()) {
    log_info(
        "model: the vision tower runs on the CPU encoder: the device is the CPU's own "
        "cores, where the encoder is far faster (--mmproj-offload on puts it on the device)");
    return;
  }
  std::string why;
  try {
    if (device_->attach_vision(*weights_.vision, &why)) return;
  } catch (const Error& e) {  // e.g. the device's memory ran out after all
    device_->detach_vision();
    why = e.what();
  }
  log_warn("model: the vision tower stays on the CPU (" + why + ")");
}

std::vector<float> Model::encode_image(std::span<const float> pixel_values,
                                       const PatchGrid& grid) const {
  if (!has_vision()) throw Error(directory_ + ": " + vision_unavailable_reason());
  if (device_ && device_->has_vision()) {
    check_image_input(weights_.vision->config, pixel_values, grid);
    std::string why;
    if (std::optional<std::vector<float>> rows = device_->encode_image(pixel_values, grid, &why))
      return std::move(*rows);
    log_info("vision encoder: an image of " + std::to_string(grid.t) + "x" +
             std::to_string(grid.h) + "x" + std::to_string(grid.w) +
             " patches is encoded on the CPU: " + why);
  }
  return qmlx::encode_image(*weights_.vision, pixel_values, grid);
}

}  // namespace qmlx
