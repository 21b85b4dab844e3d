#include "model/optional_parts.h"

#include "base/error.h"
#include "base/logging.h"

namespace qmlx {
namespace {

// A head with per-expert tensors can lack dozens; the first few say enough.
constexpr size_t kMissingNamesShown = 8;

std::string missing_list(const std::vector<std::string>& names) {
  std::string out;
  for (size_t i = 0; i < names.size() && i < kMissingNamesShown; ++i)
    out += (i ? ", " : "") + names[i];
  if (names.size() > kMissingNamesShown)
    out += " and " + std::to_string(names.size() - kMissingNamesShown) + " more";
  return out;
}

}  // namespace

const OptionalPart& mtp_head_part() {
  static const OptionalPart part{
      "MTP head", {"mtp.", "language_model.mtp.", "model.mtp."}, "multi-token prediction is off"};
  return part;
}

const OptionalPart& vision_tower_part() {
  static const OptionalPart part{
      "vision tower",
      {"model.visual.", "visual.", "vision_tower.", "model.vision_tower."},
      "images are not read"};
  return part;
}

const OptionalPart* optional_part_of(std::string_view tensor) {
  for (const OptionalPart* part : {&mtp_head_part(), &vision_tower_part()})
    for (const char* root : part->roots)
      if (tensor.starts_with(root)) return part;
  return nullptr;
}

std::string gguf_mtp_block(int num_layers) { return "blk." + std::to_string(num_layers) + "."; }

std::string load_optional_part(const OptionalPart& part,
                               const std::function<void(MissingTensors&)>& load) {
  MissingTensors missing;
  std::string malformed;
  try {
    load(missing);
  } catch (const Error& e) {
    malformed = e.what();
  }
  std::string reason;
  if (!missing.empty()) reason = "incomplete (missing " + missing_list(missing.names()) + ")";
  if (!malformed.empty())
    reason += (reason.empty() ? "" : " and ") + ("malformed (" + malformed + ")");
  if (!reason.empty())
    log_warn(std::string("model: ") + part.name + " " + reason + "; " + part.without);
  return reason;
}

}  // namespace qmlx
