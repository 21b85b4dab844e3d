#include "server/common/content_parts.h"

#include <utility>

namespace qmlx::server {

void ContentParts::add_text(const std::string& text) {
  const bool separate = join_ == Join::kAfterText ? !run_.empty() : run_started_;
  if (separate) run_ += "\n";
  run_ += text;
  run_started_ = true;
}

void ContentParts::add_image(nlohmann::ordered_json part) {
  if (!run_.empty()) parts_.push_back({{"type", "text"}, {"text", std::move(run_)}});
  run_.clear();
  run_started_ = false;
  parts_.push_back(std::move(part));
}

nlohmann::ordered_json ContentParts::take() {
  if (parts_.empty()) return std::exchange(run_, {});
  if (!run_.empty()) parts_.push_back({{"type", "text"}, {"text", std::move(run_)}});
  run_.clear();
  run_started_ = false;
  return std::exchange(parts_, nlohmann::ordered_json::array());
}

}  // namespace qmlx::server
