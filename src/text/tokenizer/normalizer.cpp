#include "text/tokenizer/normalizer.h"

#include <vector>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "text/tokenizer/component_json.h"
#include "text/tokenizer/regex.h"
#include "text/tokenizer/unicode.h"
#include "text/tokenizer/utf8.h"

namespace qmlx {
namespace {

class UnicodeForm : public Normalizer {
 public:
  explicit UnicodeForm(unicode::NormalForm form) : form_(form) {}
  void normalize(std::string& text) const override { unicode::normalize(form_, text); }

 private:
  unicode::NormalForm form_;
};

class Lowercase : public Normalizer {
 public:
  void normalize(std::string& text) const override { text = unicode::to_lower(text); }
};

class Replace : public Normalizer {
 public:
  Replace(std::unique_ptr<Regex> pattern, std::string content)
      : pattern_(std::move(pattern)), content_(std::move(content)) {}
  void normalize(std::string& text) const override {
    text = replace_all(*pattern_, text, content_);
  }

 private:
  std::unique_ptr<Regex> pattern_;
  std::string content_;
};

class Prepend : public Normalizer {
 public:
  explicit Prepend(std::string prefix) : prefix_(std::move(prefix)) {}
  void normalize(std::string& text) const override {
    if (!text.empty()) text.insert(0, prefix_);
  }

 private:
  std::string prefix_;
};

class Strip : public Normalizer {
 public:
  Strip(bool left, bool right) : left_(left), right_(right) {}
  void normalize(std::string& text) const override {
    size_t begin = 0, end = text.size();
    if (left_) begin = skip_leading_whitespace(text);
    if (right_) end = std::max(begin, trailing_whitespace_start(text));
    text = text.substr(begin, end - begin);
  }

 private:
  static size_t skip_leading_whitespace(std::string_view text) {
    size_t i = 0;
    while (i < text.size()) {
      size_t next = i;
      if (!unicode::is_whitespace(utf8::decode_at(text, next))) break;
      i = next;
    }
    return i;
  }
  static size_t trailing_whitespace_start(std::string_view text) {
    size_t start = text.size(), i = 0;
    while (i < text.size()) {
      size_t at = i;
      bool space = unicode::is_whitespace(utf8::decode_at(text, i));
      if (!space) start = text.size();
      if (space && start == text.size()) start = at;
    }
    return start;
  }

  bool left_, right_;
};

class Sequence : public Normalizer {
 public:
  explicit Sequence(std::vector<std::unique_ptr<Normalizer>> steps) : steps_(std::move(steps)) {}
  void normalize(std::string& text) const override {
    for (const auto& step : steps_) step->normalize(text);
  }

 private:
  std::vector<std::unique_ptr<Normalizer>> steps_;
};

}  // namespace

std::unique_ptr<Normalizer> make_normalizer(const nlohmann::json& spec,
                                            const std::string& context) {
  if (spec.is_null()) return nullptr;
  std::string type = component_type(spec, "normalizer", context);
  if (type == "NFC") return std::make_unique<UnicodeForm>(unicode::NormalForm::kNFC);
  if (type == "NFD") return std::make_unique<UnicodeForm>(unicode::NormalForm::kNFD);
  if (type == "NFKC") return std::make_unique<UnicodeForm>(unicode::NormalForm::kNFKC);
  if (type == "NFKD") return std::make_unique<UnicodeForm>(unicode::NormalForm::kNFKD);
  if (type == "Lowercase") return std::make_unique<Lowercase>();
  if (type == "Replace") {
    return std::make_unique<Replace>(regex_from_pattern(spec.at("pattern"), context),
                                     spec.at("content").get<std::string>());
  }
  if (type == "Prepend") return std::make_unique<Prepend>(spec.at("prepend").get<std::string>());
  if (type == "Strip") {
    return std::make_unique<Strip>(spec.value("strip_left", true), spec.value("strip_right", true));
  }
  if (type == "Sequence") {
    std::vector<std::unique_ptr<Normalizer>> steps;
    for (const auto& step : spec.at("normalizers")) {
      if (auto n = make_normalizer(step, context)) steps.push_back(std::move(n));
    }
    return std::make_unique<Sequence>(std::move(steps));
  }
  throw unsupported_component("normalizer", type, context);
}

}  // namespace qmlx
