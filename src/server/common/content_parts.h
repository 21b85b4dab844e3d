// ContentParts: a message's content as the chat template gets it, built part by part by every
// route's parser. Text parts are joined with "\n" (as vLLM and llama.cpp join them for text
// templates); an image stands as its own part between the texts. A message without images is
// one string, exactly as before images were read, so text prompts render as they always did.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace qmlx::server {

class ContentParts {
 public:
  // Where "\n" goes between the texts of one run (the texts between two images): kAfterText
  // only after text that is not empty (the chat and Anthropic routes), kBetweenParts between
  // any two parts (the Responses route).
  enum class Join { kAfterText, kBetweenParts };
  explicit ContentParts(Join join = Join::kAfterText) : join_(join) {}

  void add_text(const std::string& text);
  // `part` is what RequestImages gave for the image.
  void add_image(nlohmann::ordered_json part);
  // No image and no text (texts that are all empty count as none).
  bool empty() const { return run_.empty() && parts_.empty(); }
  bool has_images() const { return !parts_.empty(); }
  // A string without images, else the parts: {"type": "text", "text"} and the images'.
  nlohmann::ordered_json take();

 private:
  Join join_;
  std::string run_;           // the text since the last image
  bool run_started_ = false;  // a text part has been added to run_
  nlohmann::ordered_json parts_ = nlohmann::ordered_json::array();
};

}  // namespace qmlx::server
