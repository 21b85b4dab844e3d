#include "server/scheduling/image_encoding.h"

#include <string>

#include "base/error.h"

namespace qmlx::server {

std::function<PlacedImages(std::span<const PromptImage>, int64_t)> make_image_encoder(
    std::shared_ptr<const Model> model, std::shared_ptr<ImageEmbeddingCache> cache) {
  return [model = std::move(model), cache = std::move(cache)](std::span<const PromptImage> images,
                                                              int64_t from_row) {
    PlacedImages placed;
    for (const PromptImage& image : images) {
      const image::VisionInput& input = *image.input;
      const int merge = input.merge_size;  // one pad per merge x merge patches
      if (merge < 1 || input.grid.t != 1 || input.grid.h % merge != 0 ||
          input.grid.w % merge != 0) {
        throw Error("an image's patch grid " + std::to_string(input.grid.t) + "x" +
                    std::to_string(input.grid.h) + "x" + std::to_string(input.grid.w) +
                    " is not a still image in " + std::to_string(merge) + " x " +
                    std::to_string(merge) + " merge blocks");
      }
      SequenceImage s;
      s.first_row = image.first_row;
      s.grid_h = input.grid.h / merge;
      s.grid_w = input.grid.w / merge;
      if (s.rows() != image.pads()) throw Error("an image's pads do not match its patch grid");
      placed.images.push_back(std::move(s));
    }
    place_images(placed.images);
    for (size_t i = 0; i < images.size(); ++i) {
      SequenceImage& s = placed.images[i];
      if (s.end_row() <= from_row) continue;  // restored with the cache: not needed
      const image::VisionInput& input = *images[i].input;
      bool hit = false;
      s.embeddings = cache->get_or_encode(
          {input.identity.low, input.identity.high},
          [&] {
            return model->encode_image(input.pixel_values,
                                       PatchGrid{input.grid.t, input.grid.h, input.grid.w});
          },
          &hit);
      placed.encoded += hit ? 0 : 1;
    }
    return placed;
  };
}

}  // namespace qmlx::server
