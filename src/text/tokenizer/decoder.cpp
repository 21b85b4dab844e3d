#include "text/tokenizer/decoder.h"

#include <nlohmann/json.hpp>

#include "text/tokenizer/byte_level.h"
#include "text/tokenizer/component_json.h"
#include "text/tokenizer/regex.h"

namespace qmlx {
namespace {

// Tokens outside the byte alphabet (added tokens such as "<|im_end|>" written with other
// characters) pass through as their own UTF-8, as in Hugging Face.
class ByteLevel : public Decoder {
 public:
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (auto& token : tokens) {
      if (auto bytes = byte_level::decode(token)) token = std::move(*bytes);
    }
  }
};

class Replace : public Decoder {
 public:
  Replace(std::unique_ptr<Regex> pattern, std::string content)
      : pattern_(std::move(pattern)), content_(std::move(content)) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (auto& token : tokens) token = replace_all(*pattern_, token, content_);
  }

 private:
  std::unique_ptr<Regex> pattern_;
  std::string content_;
};

// "<0x0A>"-style tokens become the byte they name.
class ByteFallback : public Decoder {
 public:
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (auto& token : tokens) {
      if (token.size() == 6 && token.starts_with("<0x") && token.back() == '>') {
        char* end = nullptr;
        long value = std::strtol(token.c_str() + 3, &end, 16);
        if (end == token.c_str() + 5) token = std::string(1, static_cast<char>(value));
      }
    }
  }
};

class Fuse : public Decoder {
 public:
  void decode_chain(std::vector<std::string>& tokens) const override {
    std::string joined;
    for (const auto& token : tokens) joined += token;
    tokens.assign(1, std::move(joined));
  }
};

// Removes up to `start` leading and `stop` trailing copies of `content` from each token.
class Strip : public Decoder {
 public:
  Strip(std::string content, size_t start, size_t stop)
      : content_(std::move(content)), start_(start), stop_(stop) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    if (content_.empty()) return;
    for (auto& token : tokens) {
      std::string_view view = token;
      for (size_t i = 0; i < start_ && view.starts_with(content_); ++i) {
        view.remove_prefix(content_.size());
      }
      for (size_t i = 0; i < stop_ && view.ends_with(content_); ++i) {
        view.remove_suffix(content_.size());
      }
      token = std::string(view);
    }
  }

 private:
  std::string content_;
  size_t start_, stop_;
};

// The first token loses its replacement characters (they were the prepended space); the
// rest turn them back into spaces. Position-dependent, so not per-token.
class Metaspace : public Decoder {
 public:
  Metaspace(std::string replacement, bool strip_first)
      : replacement_(std::move(replacement)), strip_first_(strip_first) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (size_t i = 0; i < tokens.size(); ++i) {
      std::string out;
      std::string_view token = tokens[i];
      size_t at;
      while ((at = token.find(replacement_)) != std::string_view::npos) {
        out.append(token.substr(0, at));
        if (i != 0 || !strip_first_) out.push_back(' ');
        token.remove_prefix(at + replacement_.size());
      }
      out.append(token);
      tokens[i] = std::move(out);
    }
  }
  bool is_per_token() const override { return !strip_first_; }

 private:
  std::string replacement_;
  bool strip_first_;
};

class Sequence : public Decoder {
 public:
  explicit Sequence(std::vector<std::unique_ptr<Decoder>> steps) : steps_(std::move(steps)) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (const auto& step : steps_) step->decode_chain(tokens);
  }
  bool is_per_token() const override {
    for (const auto& step : steps_) {
      if (!step->is_per_token()) return false;
    }
    return true;
  }

 private:
  std::vector<std::unique_ptr<Decoder>> steps_;
};

bool metaspace_strips_first(const nlohmann::json& spec) {
  if (spec.contains("prepend_scheme")) return spec["prepend_scheme"].get<std::string>() != "never";
  return spec.value("add_prefix_space", true);
}

}  // namespace

std::unique_ptr<Decoder> make_decoder(const nlohmann::json& spec, const std::string& context) {
  if (spec.is_null()) return nullptr;
  std::string type = component_type(spec, "decoder", context);
  if (type == "ByteLevel") return std::make_unique<ByteLevel>();
  if (type == "Replace") {
    return std::make_unique<Replace>(regex_from_pattern(spec.at("pattern"), context),
                                     spec.at("content").get<std::string>());
  }
  if (type == "ByteFallback") return std::make_unique<ByteFallback>();
  if (type == "Fuse") return std::make_unique<Fuse>();
  if (type == "Strip") {
    return std::make_unique<Strip>(spec.at("content").get<std::string>(),
                                   spec.value("start", size_t{0}), spec.value("stop", size_t{0}));
  }
  if (type == "Metaspace") {
    return std::make_unique<Metaspace>(spec.value("replacement", std::string("\xE2\x96\x81")),
                                       metaspace_strips_first(spec));
  }
  if (type == "Sequence") {
    std::vector<std::unique_ptr<Decoder>> steps;
    for (const auto& step : spec.at("decoders")) {
      if (auto d = make_decoder(step, context)) steps.push_back(std::move(d));
    }
    return std::make_unique<Sequence>(std::move(steps));
  }
  throw unsupported_component("decoder", type, context);
}

}  // namespace qmlx
