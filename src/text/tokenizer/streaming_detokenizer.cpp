#include "text/tokenizer/tokenizer.h"
#include "text/tokenizer/utf8.h"

namespace qmlx {
namespace {

constexpr std::string_view kReplacementUtf8 = "\xEF\xBF\xBD";

}  // namespace

StreamingDetokenizer::StreamingDetokenizer(const Tokenizer& tokenizer, bool skip_special)
    : tokenizer_(tokenizer), skip_special_(skip_special) {}

std::string StreamingDetokenizer::push(int32_t id) {
  if (skip_special_ && tokenizer_.is_special(id)) return {};
  if (!tokenizer_.decodes_per_token()) {
    // Position-dependent decoders: re-decode everything and emit the new stable tail; a
    // trailing U+FFFD may still be an unfinished character, so it waits.
    ids_.push_back(id);
    std::string text = tokenizer_.decode(ids_, skip_special_);
    size_t stable = text.size();
    while (stable >= emitted_bytes_ + kReplacementUtf8.size() &&
           std::string_view(text).substr(0, stable).ends_with(kReplacementUtf8)) {
      stable -= kReplacementUtf8.size();
    }
    holds_partial_ = stable < text.size();
    if (stable <= emitted_bytes_) return {};
    std::string out = text.substr(emitted_bytes_, stable - emitted_bytes_);
    emitted_bytes_ = stable;
    return out;
  }
  pending_ += tokenizer_.token_bytes(id);
  size_t complete = utf8::complete_prefix_length(pending_);
  std::string out = utf8::to_valid_lossy(std::string_view(pending_).substr(0, complete));
  pending_.erase(0, complete);
  holds_partial_ = !pending_.empty();
  return out;
}

std::string StreamingDetokenizer::finish() {
  holds_partial_ = false;
  if (!tokenizer_.decodes_per_token()) {
    std::string text = tokenizer_.decode(ids_, skip_special_);
    std::string out = text.size() > emitted_bytes_ ? text.substr(emitted_bytes_) : std::string();
    emitted_bytes_ = text.size();
    return out;
  }
  std::string out = utf8::to_valid_lossy(pending_);
  pending_.clear();
  return out;
}

}  // namespace qmlx
