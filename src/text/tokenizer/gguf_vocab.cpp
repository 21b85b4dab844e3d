#include "text/tokenizer/gguf_vocab.h"

#include "base/error.h"

namespace qmlx {
namespace {

using nlohmann::json;

constexpr int kNormal = 1, kControl = 3, kUserDefined = 4;

// llama.cpp's pre-tokenizer names and the regexes of the tokenizers they stand for
// (tokenization_qwen2.py; Qwen3.5 adds combining marks \p{M}).
const char* split_regex(const std::string& pre) {
  if (pre == "qwen2")
    return R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
  if (pre == "qwen35")
    return R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
  return nullptr;
}

json byte_level() {
  return {{"type", "ByteLevel"},
          {"add_prefix_space", false},
          {"trim_offsets", false},
          {"use_regex", false}};
}

const json& array_of(const GgufFile& file, const std::string& key) {
  const auto& m = file.metadata();
  const auto it = m.find(key);
  if (it == m.end() || !it->is_array())
    throw Error(file.path() + ": GGUF tokenizer metadata " + key + " is missing");
  return *it;
}

}  // namespace

json tokenizer_json_from_gguf(const GgufFile& file) {
  const auto& m = file.metadata();
  const std::string model = m.value("tokenizer.ggml.model", std::string());
  if (model != "gpt2")
    throw Error(file.path() + ": GGUF tokenizer model '" + model +
                "' is not supported (only gpt2 byte-level BPE)");
  const std::string pre = m.value("tokenizer.ggml.pre", std::string());
  const char* regex = split_regex(pre);
  if (!regex)
    throw Error(file.path() + ": GGUF pre-tokenizer '" + pre +
                "' is not supported (qwen2, qwen35)");
  const json& tokens = array_of(file, "tokenizer.ggml.tokens");
  const json& types = array_of(file, "tokenizer.ggml.token_type");
  const json& merges = array_of(file, "tokenizer.ggml.merges");
  if (types.size() != tokens.size())
    throw Error(file.path() + ": GGUF token_type and tokens differ in length");

  json vocab = json::object();
  json added = json::array();
  for (size_t id = 0; id < tokens.size(); ++id) {
    const int type = types[id].get<int>();
    const std::string& text = tokens[id].get_ref<const std::string&>();
    if (type == kNormal) {
      vocab[text] = id;
    } else if (type == kControl || type == kUserDefined) {
      added.push_back({{"id", id},
                       {"content", text},
                       {"single_word", false},
                       {"lstrip", false},
                       {"rstrip", false},
                       {"normalized", false},
                       {"special", type == kControl}});
    }
  }
  json merge_pairs = json::array();
  for (const auto& merge : merges) {
    const std::string& text = merge.get_ref<const std::string&>();
    const size_t space = text.find(' ');
    if (space == std::string::npos)
      throw Error(file.path() + ": GGUF merge '" + text + "' has no space");
    merge_pairs.push_back({text.substr(0, space), text.substr(space + 1)});
  }
  return {{"version", "1.0"},
          {"added_tokens", added},
          {"normalizer", {{"type", "NFC"}}},
          {"pre_tokenizer",
           {{"type", "Sequence"},
            {"pretokenizers",
             {{{"type", "Split"},
               {"pattern", {{"Regex", regex}}},
               {"behavior", "Isolated"},
               {"invert", false}},
              byte_level()}}}},
          {"post_processor", byte_level()},
          {"decoder", byte_level()},
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
            {"merges", merge_pairs}}}};
}

}  // namespace qmlx
