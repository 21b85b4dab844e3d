// A checkpoint's preprocessor_config.json read into VisionPreprocessConfig: the patch geometry,
// the pixel bounds smart_resize keeps the image within, and the normalisation. Keys a file
// leaves out keep Qwen3.5's values (the struct's defaults), as transformers' processor falls
// back to its own defaults. Knows nothing of a model folder: the loader hands it the text.
#pragma once

#include <string>
#include <string_view>

#include "image/vision_preprocess.h"

namespace qmlx::image {

// Reads patch_size, temporal_patch_size, merge_size, the pixel bounds, rescale_factor,
// image_mean and image_std. The bounds, as transformers' Qwen2-VL image processor takes them:
// size.shortest_edge / size.longest_edge (pixel counts despite the names) or, in older files,
// size.min_pixels / size.max_pixels; top-level min_pixels / max_pixels override both. Throws
// qmlx::Error naming `file` and the key on invalid JSON or a value the preprocessing cannot use.
VisionPreprocessConfig parse_preprocessor_config(std::string_view json_text,
                                                 const std::string& file);

}  // namespace qmlx::image
