#include "modelgen/tokenizer_files.h"

#include <algorithm>
#include <map>
#include <mutex>

#include "base/error.h"
#include "modelgen/byte_level.h"

namespace qmlx::modelgen {

namespace {

using nlohmann::json;

// tokenization_qwen2.py; Qwen3.5 adds the combining marks \p{M} (model-spec §6).
constexpr const char* kQwen3Regex =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr const char* kQwen35Regex =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

json byte_level_component() {
  return {{"type", "ByteLevel"},
          {"add_prefix_space", false},
          {"trim_offsets", false},
          {"use_regex", false}};
}

json added_token(int id, const std::string& content, bool special) {
  return {{"id", id},        {"content", content},  {"single_word", false}, {"lstrip", false},
          {"rstrip", false}, {"normalized", false}, {"special", special}};
}

}  // namespace

const std::vector<std::string>& qwen_special_tokens() {
  static const std::vector<std::string> tokens = {
      "<|endoftext|>", "<|im_start|>", "<|im_end|>", "<tool_call>", "</tool_call>",
      "<tool_response>", "</tool_response>", "<think>", "</think>",
      // Last, so the ids of the tokens above stay those of older generated models.
      "<|vision_start|>", "<|vision_end|>", "<|image_pad|>", "<|video_pad|>"};
  return tokens;
}

constexpr int kVisionSpecialCount = 4;  // the last four of qwen_special_tokens()

bool qwen_special_is_flagged(size_t index) {
  const std::string& token = qwen_special_tokens().at(index);
  return token.starts_with("<|") && token.ends_with("|>");
}

Vocabulary Vocabulary::demo(int merge_count) {
  // Training takes a moment and its result never changes: learn each size once per process.
  static std::mutex mutex;
  static std::map<int, Vocabulary> learned;
  std::lock_guard<std::mutex> lock(mutex);
  const auto it = learned.find(merge_count);
  if (it != learned.end()) return it->second;
  Vocabulary vocabulary;
  for (unsigned char byte : byte_order()) vocabulary.tokens_.push_back(byte_symbol(byte));
  vocabulary.merges_ = train_bpe_merges(builtin_corpus(), merge_count);
  for (const auto& [left, right] : vocabulary.merges_) {
    if (!vocabulary.plain_id(left + right)) vocabulary.tokens_.push_back(left + right);
  }
  learned.emplace(merge_count, vocabulary);
  return vocabulary;
}

int Vocabulary::add_plain_token(const std::string& byte_level) {
  tokens_.push_back(byte_level);
  return static_cast<int>(tokens_.size()) - 1;
}

std::optional<int> Vocabulary::plain_id(const std::string& byte_level) const {
  const auto it = std::find(tokens_.begin(), tokens_.end(), byte_level);
  if (it == tokens_.end()) return std::nullopt;
  return static_cast<int>(it - tokens_.begin());
}

int Vocabulary::special_id(const std::string& content) const {
  const auto& specials = qwen_special_tokens();
  const auto it = std::find(specials.begin(), specials.end(), content);
  if (it == specials.end()) throw Error("not a special token: " + content);
  return plain_count() + static_cast<int>(it - specials.begin());
}

int Vocabulary::size() const {
  return plain_count() + static_cast<int>(qwen_special_tokens().size());
}

int Vocabulary::rows_in_use(bool vision) const {
  return vision ? size() : size() - kVisionSpecialCount;
}

json tokenizer_json(const Vocabulary& vocabulary, Arch arch) {
  json added = json::array();
  const auto& specials = qwen_special_tokens();
  for (size_t i = 0; i < specials.size(); ++i) {
    added.push_back(
        added_token(vocabulary.special_id(specials[i]), specials[i], qwen_special_is_flagged(i)));
  }
  json vocab = json::object();
  for (int id = 0; id < vocabulary.plain_count(); ++id) vocab[vocabulary.plain_token(id)] = id;
  json merges = json::array();
  for (const auto& [left, right] : vocabulary.merges()) merges.push_back({left, right});
  const char* regex = is_qwen35_family(arch) ? kQwen35Regex : kQwen3Regex;
  return {{"version", "1.0"},
          {"truncation", nullptr},
          {"padding", nullptr},
          {"added_tokens", added},
          {"normalizer", {{"type", "NFC"}}},
          {"pre_tokenizer",
           {{"type", "Sequence"},
            {"pretokenizers",
             {{{"type", "Split"},
               {"pattern", {{"Regex", regex}}},
               {"behavior", "Isolated"},
               {"invert", false}},
              byte_level_component()}}}},
          {"post_processor", byte_level_component()},
          {"decoder", byte_level_component()},
          {"model",
           {{"type", "BPE"},
            {"dropout", nullptr},
            {"unk_token", nullptr},
            {"continuing_subword_prefix", ""},
            {"end_of_word_suffix", ""},
            {"fuse_unk", false},
            {"byte_fallback", false},
            {"ignore_merges", false},
            {"vocab", vocab},
            {"merges", merges}}}};
}

json tokenizer_config_json(const Vocabulary& vocabulary, const std::string& chat_template) {
  json decoder = json::object();
  const auto& specials = qwen_special_tokens();
  for (size_t i = 0; i < specials.size(); ++i) {
    json entry = added_token(0, specials[i], qwen_special_is_flagged(i));
    entry.erase("id");
    decoder[std::to_string(vocabulary.special_id(specials[i]))] = entry;
  }
  return {{"add_bos_token", false},
          {"add_prefix_space", false},
          {"added_tokens_decoder", decoder},
          {"additional_special_tokens", {"<|im_start|>", "<|im_end|>"}},
          {"bos_token", nullptr},
          {"chat_template", chat_template},
          {"clean_up_tokenization_spaces", false},
          {"eos_token", "<|im_end|>"},
          {"errors", "replace"},
          {"model_max_length", 262144},
          {"pad_token", "<|endoftext|>"},
          {"split_special_tokens", false},
          {"tokenizer_class", "Qwen2Tokenizer"},
          {"unk_token", nullptr}};
}

}  // namespace qmlx::modelgen
