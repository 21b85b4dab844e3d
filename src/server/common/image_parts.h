// RequestImages: the images of one request, as its route's parser meets them in the content
// parts (OpenAI image_url, Responses input_image, Anthropic image blocks, in messages and in
// tool results alike). Each is decoded and preprocessed once, here, with the model's
// preprocessing and the server's bounds (image_reading.h); every refusal is a 400 that names
// the content part. Only images sent inline are read: the server fetches no URL and stores no
// file. The parser puts the part this returns where the image was; finish() then hands the
// images to the GenerationRequest in the order its messages hold them, which is the order the
// chat template renders their pads in (Anthropic's tool results become messages of their own
// before the text around them, so the order met is not always that order).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "image/vision_preprocess.h"
#include "server/common/generation_request.h"
#include "server/common/image_reading.h"

namespace qmlx::server {

class RequestImages {
 public:
  explicit RequestImages(const ImageReading& reading) : reading_(reading) {}

  // An image given by URL, `url` at `url_path` (OpenAI's image_url.url or image_url as a
  // string, Responses' input_image.image_url): a data URL is read; any other is a 400.
  // `part_path` names the content part in the other refusals.
  nlohmann::ordered_json from_url(const nlohmann::ordered_json& url, const std::string& part_path,
                                  const std::string& url_path);
  // An Anthropic image block's `source` ({"type": "base64", "media_type", "data"}).
  nlohmann::ordered_json from_anthropic_source(const nlohmann::ordered_json& source,
                                               const std::string& part_path);

  // Moves the images into r.images in the order r.messages holds their parts, and leaves each
  // part as {"type": "image"}, the form the chat template reads.
  void finish(GenerationRequest& r);

 private:
  void check_readable(const std::string& part_path) const;
  nlohmann::ordered_json decode(std::string_view base64, const std::string& part_path,
                                const std::string& data_path);

  const ImageReading& reading_;
  std::vector<std::shared_ptr<const image::VisionInput>> images_;  // in the order met
};

// The 400 for an image where the template takes none (a system prompt, an assistant turn).
[[noreturn]] void image_out_of_place(const std::string& part_path, const std::string& where);

}  // namespace qmlx::server
