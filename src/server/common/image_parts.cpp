#include "server/common/image_parts.h"

#include <span>

#include "base/base64.h"
#include "base/error.h"
#include "image/image_decode.h"
#include "image/image_error.h"
#include "server/common/data_url.h"
#include "server/common/request_fields.h"

namespace qmlx::server {
namespace {

using json = nlohmann::ordered_json;

// The key that carries an image's place in the order met until finish() puts it in order.
constexpr char kOrderKey[] = "qmlx_image_order";

[[noreturn]] void refuse(const std::string& path, const std::string& what) {
  throw ApiError(400, "'" + path + "' " + what, path);
}

// The ImageError reasons in the words of a refusal.
std::string refusal_of(const image::ImageError& e) {
  switch (e.reason()) {
    case image::ImageErrorReason::kTooManyBytes:
    case image::ImageErrorReason::kTooManyPixels:
    case image::ImageErrorReason::kAspectRatio:
      return std::string("is an image over a limit: ") + e.what();
    case image::ImageErrorReason::kUnsupported:
    case image::ImageErrorReason::kCorrupt:
      break;
  }
  return std::string("is not an image this server can read: ") + e.what();
}

}  // namespace

void RequestImages::check_readable(const std::string& part_path) const {
  if (!reading_.vision_unavailable.empty()) {
    refuse(part_path,
           "is an image, and this model reads no images: " + reading_.vision_unavailable);
  }
  if (int(images_.size()) >= reading_.max_images) {
    refuse(part_path, "is image " + std::to_string(images_.size() + 1) +
                          " of this request, over the limit of " +
                          std::to_string(reading_.max_images) + " (--max-images-per-request)");
  }
}

json RequestImages::from_url(const json& url, const std::string& part_path,
                             const std::string& url_path) {
  check_readable(part_path);
  if (!url.is_string()) refuse(url_path, "must be a string");
  const std::string& text = url.get_ref<const std::string&>();
  const auto data_url = parse_data_url(text);
  if (!data_url) {
    refuse(url_path,
           "is not a data URL: this server fetches nothing; send the image inline as "
           "data:image/png;base64,...");
  }
  if (!data_url->base64) refuse(url_path, "is a data URL without ;base64: send the image base64");
  return decode(data_url->data, part_path, url_path);
}

json RequestImages::from_anthropic_source(const json& source, const std::string& part_path) {
  check_readable(part_path);
  const std::string source_path = part_path + ".source";
  if (!source.is_object()) refuse(source_path, "must be an object");
  const json& type = required_field(source, "type", source_path + ".type");
  if (type == "url") {
    refuse(source_path,
           "is a URL source: this server fetches nothing; send the image as a "
           "base64 source");
  }
  if (type == "file") {
    refuse(source_path,
           "is a file source: this server stores no files; send the image as a "
           "base64 source");
  }
  if (type != "base64") refuse(source_path + ".type", "must be base64");
  const json& data = required_field(source, "data", source_path + ".data");
  if (!data.is_string()) refuse(source_path + ".data", "must be a string");
  return decode(data.get_ref<const std::string&>(), part_path, source_path + ".data");
}

json RequestImages::decode(std::string_view base64, const std::string& part_path,
                           const std::string& data_path) {
  const std::optional<std::string> bytes = base64_decode(base64);
  if (!bytes) refuse(data_path, "is not valid base64");
  try {
    const std::span<const uint8_t> view(reinterpret_cast<const uint8_t*>(bytes->data()),
                                        bytes->size());
    const image::RgbImage decoded = image::decode_image(view, reading_.limits);
    images_.push_back(std::make_shared<const image::VisionInput>(
        image::preprocess_for_vision(decoded, reading_.preprocess)));
  } catch (const image::ImageError& e) {
    refuse(part_path, refusal_of(e));
  }
  return {{"type", "image"}, {kOrderKey, images_.size() - 1}};
}

void RequestImages::finish(GenerationRequest& r) {
  r.images.clear();
  for (json& message : r.messages) {
    auto content = message.find("content");
    if (content == message.end() || !content->is_array()) continue;
    for (json& part : *content) {
      auto order = part.find(kOrderKey);
      if (order == part.end()) continue;
      r.images.push_back(images_.at(order->get<size_t>()));
      part.erase(order);
    }
  }
  // Every part the parser was given went into a message: a lost one would leave pads unmatched.
  if (r.images.size() != images_.size()) {
    throw Error("internal: " + std::to_string(images_.size()) + " images read but " +
                std::to_string(r.images.size()) + " placed in the messages");
  }
}

[[noreturn]] void image_out_of_place(const std::string& part_path, const std::string& where) {
  refuse(part_path, "is an image, and " + where + " cannot hold images");
}

}  // namespace qmlx::server
