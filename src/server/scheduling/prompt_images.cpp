#include "server/scheduling/prompt_images.h"

#include <algorithm>
#include <string>
#include <vector>

#include "base/error.h"
#include "engine/image_pad_keys.h"

namespace qmlx::server {
namespace {

// An offset into the prompt before widening, as it is after: moved by the pads added before it.
// `pads_at` are the rendered pads' offsets, `added` how many rows each pad's image added (its
// pads - 1). -1 (unknown) stays -1.
int64_t widened(int64_t offset, const std::vector<int64_t>& pads_at,
                const std::vector<int64_t>& added) {
  if (offset < 0) return offset;
  int64_t shift = 0;
  for (size_t k = 0; k < pads_at.size() && pads_at[k] < offset; ++k) shift += added[k];
  return offset + shift;
}

}  // namespace

void place_prompt_images(RenderedPrompt& prompt,
                         std::span<const std::shared_ptr<const image::VisionInput>> images,
                         int32_t image_pad_id) {
  if (images.empty()) return;
  if (image_pad_id < 0) throw Error("the model's tokenizer has no <|image_pad|> token");
  std::vector<int64_t> pads_at;
  for (size_t i = 0; i < prompt.ids.size(); ++i) {
    if (prompt.ids[i] == image_pad_id) pads_at.push_back(int64_t(i));
  }
  if (pads_at.size() != images.size()) {
    throw Error("the prompt has " + std::to_string(pads_at.size()) + " <|image_pad|> tokens for " +
                std::to_string(images.size()) +
                " images (an image pad written as text, or a chat template that does not render "
                "each image once)");
  }
  std::vector<int64_t> added(images.size());
  std::vector<int32_t> ids;
  std::vector<PromptImage> placed;
  size_t from = 0;
  for (size_t k = 0; k < images.size(); ++k) {
    ids.insert(ids.end(), prompt.ids.begin() + int64_t(from), prompt.ids.begin() + pads_at[k]);
    PromptImage image{int64_t(ids.size()), images[k]};
    const int64_t pads = image.pads();
    if (pads < 1) throw Error("image " + std::to_string(k + 1) + " has no patches");
    ids.resize(ids.size() + size_t(pads));
    const image::ImageIdentity& identity = images[k]->identity;
    write_image_pad_keys(identity.low, identity.high,
                         std::span<int32_t>(ids).subspan(size_t(image.first_row), size_t(pads)));
    added[k] = pads - 1;
    placed.push_back(std::move(image));
    from = size_t(pads_at[k]) + 1;
  }
  ids.insert(ids.end(), prompt.ids.begin() + int64_t(from), prompt.ids.end());
  prompt.last_message_end = widened(prompt.last_message_end, pads_at, added);
  prompt.last_user_start = widened(prompt.last_user_start, pads_at, added);
  for (int64_t& point : prompt.edit_points) point = widened(point, pads_at, added);
  prompt.ids = std::move(ids);
  prompt.images = std::move(placed);
}

}  // namespace qmlx::server
