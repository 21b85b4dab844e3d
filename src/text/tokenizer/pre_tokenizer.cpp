#include "text/tokenizer/pre_tokenizer.h"

#include <functional>
#include <vector>

#include <nlohmann/json.hpp>

#include "text/tokenizer/byte_level.h"
#include "text/tokenizer/component_json.h"
#include "text/tokenizer/regex.h"
#include "text/tokenizer/unicode.h"
#include "text/tokenizer/utf8.h"

namespace qmlx {
namespace {

// A stretch of a piece, flagged when the splitting pattern matched it.
struct Span {
  size_t start, end;
  bool match;
};

enum class Behavior { kRemoved, kIsolated, kMergedWithPrevious, kMergedWithNext, kContiguous };

Behavior parse_behavior(const std::string& name, const std::string& context) {
  if (name == "Removed") return Behavior::kRemoved;
  if (name == "Isolated") return Behavior::kIsolated;
  if (name == "MergedWithPrevious") return Behavior::kMergedWithPrevious;
  if (name == "MergedWithNext") return Behavior::kMergedWithNext;
  if (name == "Contiguous") return Behavior::kContiguous;
  throw Error(context + ": unsupported Split behavior \"" + name + "\"");
}

// Folds spans into the pieces a behavior keeps, mirroring Hugging Face's NormalizedString::split.
std::vector<Span> apply_behavior(const std::vector<Span>& spans, Behavior behavior) {
  std::vector<Span> out;
  out.reserve(spans.size());
  bool previous_match = false;
  switch (behavior) {
    case Behavior::kIsolated:
      return spans;
    case Behavior::kRemoved:
      for (const Span& s : spans) {
        if (!s.match) out.push_back(s);
      }
      return out;
    case Behavior::kMergedWithPrevious:
      for (const Span& s : spans) {
        if (s.match && !previous_match && !out.empty()) {
          out.back().end = s.end;
        } else {
          out.push_back(s);
        }
        previous_match = s.match;
      }
      return out;
    case Behavior::kMergedWithNext:
      for (auto it = spans.rbegin(); it != spans.rend(); ++it) {
        if (it->match && !previous_match && !out.empty()) {
          out.back().start = it->start;
        } else {
          out.push_back(*it);
        }
        previous_match = it->match;
      }
      return {out.rbegin(), out.rend()};
    case Behavior::kContiguous:
      for (const Span& s : spans) {
        if (s.match == previous_match && !out.empty()) {
          out.back().end = s.end;
        } else {
          out.push_back(s);
        }
        previous_match = s.match;
      }
      return out;
  }
  return out;
}

// Matched stretches plus the gaps between them, covering the whole piece.
std::vector<Span> regex_spans(const Regex& regex, std::string_view piece, bool invert) {
  std::vector<Span> spans;
  size_t previous = 0;
  regex.for_each_match(piece, [&](size_t start, size_t end) {
    if (start > previous) spans.push_back({previous, start, invert});
    spans.push_back({start, end, !invert});
    previous = end;
  });
  if (previous < piece.size()) spans.push_back({previous, piece.size(), invert});
  return spans;
}

void add_spans(std::string_view piece, const std::vector<Span>& spans, PieceList& out) {
  for (const Span& s : spans) out.add(piece.substr(s.start, s.end - s.start));
}

class Split : public PreTokenizer {
 public:
  Split(std::unique_ptr<Regex> pattern, Behavior behavior, bool invert)
      : pattern_(std::move(pattern)), behavior_(behavior), invert_(invert) {}

  void pre_tokenize(const PieceList& in, PieceList& out) const override {
    out.clear();
    out.starts_at_origin = in.starts_at_origin;
    for (size_t i = 0; i < in.size(); ++i) {
      std::string_view piece = in.piece(i);
      add_spans(piece, apply_behavior(regex_spans(*pattern_, piece, invert_), behavior_), out);
    }
  }

 private:
  std::unique_ptr<Regex> pattern_;
  Behavior behavior_;
  bool invert_;
};

// GPT-2's own split, used when ByteLevel has use_regex (tokenizers' ByteLevel default).
constexpr const char* kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

class ByteLevel : public PreTokenizer {
 public:
  ByteLevel(bool add_prefix_space, bool use_regex, const std::string& context)
      : add_prefix_space_(add_prefix_space),
        regex_(use_regex ? std::make_unique<Regex>(kGpt2Pattern, false, context) : nullptr) {}

  void pre_tokenize(const PieceList& in, PieceList& out) const override {
    out.clear();
    out.starts_at_origin = in.starts_at_origin;
    std::string prefixed, mapped;
    for (size_t i = 0; i < in.size(); ++i) {
      std::string_view piece = in.piece(i);
      if (add_prefix_space_ && piece.front() != ' ') {
        prefixed = " ";
        prefixed.append(piece);
        piece = prefixed;
      }
      if (!regex_) {
        add_mapped(piece, mapped, out);
        continue;
      }
      for (const Span& s : regex_spans(*regex_, piece, false)) {
        add_mapped(piece.substr(s.start, s.end - s.start), mapped, out);
      }
    }
  }

 private:
  static void add_mapped(std::string_view piece, std::string& scratch, PieceList& out) {
    scratch.clear();
    byte_level::encode(piece, scratch);
    out.add(scratch);
  }

  bool add_prefix_space_;
  std::unique_ptr<Regex> regex_;
};

// Splits on per-character classes: consecutive characters of one class form a run; runs of
// class 0 are dropped; `isolate` classes give one piece per character.
class CharClassSplit : public PreTokenizer {
 public:
  using Classifier = std::function<int(char32_t)>;
  CharClassSplit(Classifier classify, int isolate)
      : classify_(std::move(classify)), isolate_(isolate) {}

  void pre_tokenize(const PieceList& in, PieceList& out) const override {
    out.clear();
    out.starts_at_origin = in.starts_at_origin;
    for (size_t p = 0; p < in.size(); ++p) {
      std::string_view piece = in.piece(p);
      size_t i = 0, run_start = 0;
      int run_class = -1;
      while (i < piece.size()) {
        size_t at = i;
        int cls = classify_(utf8::decode_at(piece, i));
        if (cls != run_class || cls == isolate_) {
          if (run_class > 0) out.add(piece.substr(run_start, at - run_start));
          run_start = at;
          run_class = cls;
        }
      }
      if (run_class > 0) out.add(piece.substr(run_start));
    }
  }

 private:
  Classifier classify_;
  int isolate_;
};

std::unique_ptr<PreTokenizer> whitespace_split() {
  return std::make_unique<CharClassSplit>(
      [](char32_t c) { return unicode::is_whitespace(c) ? 0 : 1; }, -1);
}

// Hugging Face's Whitespace: the regex \w+|[^\w\s]+, keeping only the matches.
std::unique_ptr<PreTokenizer> whitespace() {
  return std::make_unique<CharClassSplit>(
      [](char32_t c) {
        if (unicode::is_word_char(c)) return 1;
        return unicode::is_whitespace(c) ? 0 : 2;
      },
      -1);
}

std::unique_ptr<PreTokenizer> digits(bool individual) {
  return std::make_unique<CharClassSplit>([](char32_t c) { return unicode::is_numeric(c) ? 2 : 1; },
                                          individual ? 2 : -1);
}

class Metaspace : public PreTokenizer {
 public:
  enum class Prepend { kAlways, kFirst, kNever };
  Metaspace(std::string replacement, Prepend prepend, bool split)
      : replacement_(std::move(replacement)),
        prepend_(prepend),
        split_(split),
        replacement_regex_(replacement_, true, "Metaspace") {}

  void pre_tokenize(const PieceList& in, PieceList& out) const override {
    out.clear();
    out.starts_at_origin = in.starts_at_origin;
    static const Regex space(" ", true, "Metaspace");
    for (size_t i = 0; i < in.size(); ++i) {
      std::string replaced = replace_all(space, in.piece(i), replacement_);
      bool first = i == 0 && in.starts_at_origin;
      bool prepend = prepend_ == Prepend::kAlways || (prepend_ == Prepend::kFirst && first);
      if (prepend && !replaced.starts_with(replacement_)) replaced.insert(0, replacement_);
      if (!split_) {
        out.add(replaced);
        continue;
      }
      auto spans = regex_spans(replacement_regex_, replaced, false);
      add_spans(replaced, apply_behavior(spans, Behavior::kMergedWithNext), out);
    }
  }

 private:
  std::string replacement_;
  Prepend prepend_;
  bool split_;
  Regex replacement_regex_;
};

Metaspace::Prepend parse_prepend_scheme(const nlohmann::json& spec, const std::string& context) {
  if (spec.contains("prepend_scheme")) {
    std::string scheme = spec["prepend_scheme"].get<std::string>();
    if (scheme == "always") return Metaspace::Prepend::kAlways;
    if (scheme == "first") return Metaspace::Prepend::kFirst;
    if (scheme == "never") return Metaspace::Prepend::kNever;
    throw Error(context + ": unsupported Metaspace prepend_scheme \"" + scheme + "\"");
  }
  return spec.value("add_prefix_space", true) ? Metaspace::Prepend::kAlways
                                              : Metaspace::Prepend::kNever;
}

class Sequence : public PreTokenizer {
 public:
  explicit Sequence(std::vector<std::unique_ptr<PreTokenizer>> steps) : steps_(std::move(steps)) {}

  void pre_tokenize(const PieceList& in, PieceList& out) const override {
    if (steps_.empty()) {
      out = in;
      return;
    }
    PieceList scratch;
    const PieceList* source = &in;
    for (size_t i = 0; i < steps_.size(); ++i) {
      // Alternate buffers so the last step writes straight into `out`.
      bool to_out = (steps_.size() - i) % 2 == 1;
      PieceList& target = to_out ? out : scratch;
      steps_[i]->pre_tokenize(*source, target);
      source = &target;
    }
  }

 private:
  std::vector<std::unique_ptr<PreTokenizer>> steps_;
};

}  // namespace

std::unique_ptr<PreTokenizer> make_pre_tokenizer(const nlohmann::json& spec,
                                                 const std::string& context) {
  if (spec.is_null()) return nullptr;
  std::string type = component_type(spec, "pre_tokenizer", context);
  if (type == "Split") {
    return std::make_unique<Split>(regex_from_pattern(spec.at("pattern"), context),
                                   parse_behavior(spec.at("behavior").get<std::string>(), context),
                                   spec.value("invert", false));
  }
  if (type == "ByteLevel") {
    return std::make_unique<ByteLevel>(spec.value("add_prefix_space", true),
                                       spec.value("use_regex", true), context);
  }
  if (type == "Sequence") {
    std::vector<std::unique_ptr<PreTokenizer>> steps;
    for (const auto& step : spec.at("pretokenizers")) {
      if (auto p = make_pre_tokenizer(step, context)) steps.push_back(std::move(p));
    }
    return std::make_unique<Sequence>(std::move(steps));
  }
  if (type == "Metaspace") {
    return std::make_unique<Metaspace>(spec.value("replacement", std::string("\xE2\x96\x81")),
                                       parse_prepend_scheme(spec, context),
                                       spec.value("split", true));
  }
  if (type == "Whitespace") return whitespace();
  if (type == "WhitespaceSplit") return whitespace_split();
  if (type == "Digits") return digits(spec.value("individual_digits", false));
  throw unsupported_component("pre_tokenizer", type, context);
}

}  // namespace qmlx
