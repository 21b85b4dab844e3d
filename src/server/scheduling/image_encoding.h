// The runtime's encode_images (model_runtime.h) over a loaded model: the vision tower, with its
// outputs kept per image in an ImageEmbeddingCache, and the images placed on M-RoPE positions.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>

#include "engine/image_embedding_cache.h"
#include "model/model.h"
#include "server/scheduling/model_runtime.h"

namespace qmlx::server {

// The encoder outputs kept: a 1920 x 1080 screenshot is ~2,000 rows of the model's width
// (16 MiB at 2,048), so this holds the screenshots of a few busy conversations.
constexpr uint64_t kImageEmbeddingCacheBytes = uint64_t(512) << 20;

std::function<PlacedImages(std::span<const PromptImage>, int64_t)> make_image_encoder(
    std::shared_ptr<const Model> model, std::shared_ptr<ImageEmbeddingCache> cache);

}  // namespace qmlx::server
