// Images in a rendered prompt. The chat template writes one <|image_pad|> per image; the
// model reads one pad per 2 x 2 merged patches, so each is widened here to the image's pads,
// written as image pad keys (engine/image_pad_keys.h: the cache then tells images apart by
// their pixels), and RenderedPrompt::images records where each image's pads start. The token
// offsets the cache keeps (message ends, edit points) move with the rows they name.
#pragma once

#include <cstdint>
#include <memory>
#include <span>

#include "image/vision_preprocess.h"
#include "server/scheduling/model_runtime.h"

namespace qmlx::server {

// `images` are the request's, in the order the template rendered their pads. Throws
// qmlx::Error when the prompt holds another number of <|image_pad|> tokens than images (a
// client that wrote the token as text, a template that drops or repeats an image). A prompt
// without images is left as it is.
void place_prompt_images(RenderedPrompt& prompt,
                         std::span<const std::shared_ptr<const image::VisionInput>> images,
                         int32_t image_pad_id);

}  // namespace qmlx::server
