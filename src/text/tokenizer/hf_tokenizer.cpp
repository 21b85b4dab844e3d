#include "text/tokenizer/hf_tokenizer.h"
#include "text/tokenizer/gguf_vocab.h"

#include <algorithm>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "text/tokenizer/utf8.h"

namespace qmlx {
namespace {

const nlohmann::json& field_or_null(const nlohmann::json& j, const char* key) {
  static const nlohmann::json null_json;
  auto it = j.find(key);
  return it == j.end() ? null_json : *it;
}

}  // namespace

HfTokenizer::HfTokenizer(const nlohmann::json& tokenizer_json, const std::string& context) {
  if (!tokenizer_json.is_object() || !tokenizer_json.contains("model")) {
    throw Error(context + ": not a tokenizer.json (no \"model\")");
  }
  try {
    normalizer_ = make_normalizer(field_or_null(tokenizer_json, "normalizer"), context);
    pre_tokenizer_ = make_pre_tokenizer(field_or_null(tokenizer_json, "pre_tokenizer"), context);
    model_ = BpeModel::from_json(tokenizer_json["model"], context);
    decoder_ = make_decoder(field_or_null(tokenizer_json, "decoder"), context);
    added_ =
        AddedVocabulary(parse_added_tokens(field_or_null(tokenizer_json, "added_tokens"), context),
                        normalizer_.get());
  } catch (const nlohmann::json::exception& e) {
    throw Error(context + ": malformed tokenizer.json: " + e.what());
  }
}

std::vector<int32_t> HfTokenizer::encode(std::string_view text, bool parse_special) const {
  std::string repaired;
  if (!utf8::is_valid(text)) {
    repaired = utf8::to_valid_lossy(text);
    text = repaired;
  }
  std::vector<int32_t> ids;
  ids.reserve(text.size() / 3 + 8);
  std::vector<AddedVocabulary::Segment> segments;
  added_.split(text, /*normalized_pass=*/false, parse_special, segments);
  for (const auto& segment : segments) {
    if (segment.id >= 0) {
      ids.push_back(segment.id);
    } else {
      bool at_origin = segment.text.data() == text.data();
      encode_text(segment.text, at_origin, parse_special, ids);
    }
  }
  return ids;
}

void HfTokenizer::encode_text(std::string_view text, bool at_origin, bool parse_special,
                              std::vector<int32_t>& ids) const {
  std::string normalized(text);
  if (normalizer_) normalizer_->normalize(normalized);
  if (!added_.has_normalized_tokens()) return encode_normalized(normalized, at_origin, ids);
  std::vector<AddedVocabulary::Segment> segments;
  added_.split(normalized, /*normalized_pass=*/true, parse_special, segments);
  for (const auto& segment : segments) {
    if (segment.id >= 0) {
      ids.push_back(segment.id);
    } else {
      bool origin = at_origin && segment.text.data() == normalized.data();
      encode_normalized(segment.text, origin, ids);
    }
  }
}

void HfTokenizer::encode_normalized(std::string_view text, bool at_origin,
                                    std::vector<int32_t>& ids) const {
  PieceList whole;
  whole.add(text);
  whole.starts_at_origin = at_origin;
  if (!pre_tokenizer_) {
    if (whole.size() == 1) model_->tokenize(whole.piece(0), ids);
    return;
  }
  PieceList pieces;
  pre_tokenizer_->pre_tokenize(whole, pieces);
  for (size_t i = 0; i < pieces.size(); ++i) model_->tokenize(pieces.piece(i), ids);
}

const std::string* HfTokenizer::raw_token(int32_t id) const {
  if (const AddedToken* added = added_.find(id)) return &added->content;
  return model_->token_text(id);
}

std::string HfTokenizer::decode(std::span<const int32_t> ids, bool skip_special) const {
  std::vector<std::string> tokens;
  tokens.reserve(ids.size());
  for (int32_t id : ids) {
    if (skip_special && is_special(id)) continue;
    // Ids outside the vocabulary (padding rows of the embedding) decode to nothing.
    if (const std::string* token = raw_token(id)) tokens.push_back(*token);
  }
  if (decoder_) decoder_->decode_chain(tokens);
  std::string joined;
  for (const auto& token : tokens) joined += token;
  return utf8::to_valid_lossy(joined);
}

std::optional<int32_t> HfTokenizer::token_id(std::string_view token) const {
  if (auto id = added_.find(token)) return id;
  return model_->token_id(token);
}

std::string HfTokenizer::token_text(int32_t id) const {
  const std::string* token = raw_token(id);
  return token ? *token : std::string();
}

std::string HfTokenizer::token_bytes(int32_t id) const {
  const std::string* token = raw_token(id);
  if (!token) return {};
  std::vector<std::string> tokens{*token};
  if (decoder_) decoder_->decode_chain(tokens);
  std::string joined;
  for (const auto& t : tokens) joined += t;
  return joined;
}

bool HfTokenizer::is_special(int32_t id) const {
  const AddedToken* added = added_.find(id);
  return added && added->special;
}

int32_t HfTokenizer::vocab_size() const { return std::max(model_->id_limit(), added_.id_limit()); }

bool HfTokenizer::decodes_per_token() const { return !decoder_ || decoder_->is_per_token(); }

std::unique_ptr<Tokenizer> Tokenizer::from_json(const nlohmann::json& tokenizer_json) {
  return std::make_unique<HfTokenizer>(tokenizer_json, "tokenizer.json");
}

std::unique_ptr<Tokenizer> Tokenizer::from_file(const std::string& path) {
  if (is_gguf_path(path))
    return std::make_unique<HfTokenizer>(tokenizer_json_from_gguf(GgufFile(path)), path);
  std::string file = path;
  std::ifstream probe(file + "/tokenizer.json");
  if (probe.good()) file += "/tokenizer.json";
  probe.close();
  std::ifstream in(file, std::ios::binary);
  if (!in) throw Error(file + ": cannot open tokenizer file");
  std::stringstream buffer;
  buffer << in.rdbuf();
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(buffer.str());
  } catch (const nlohmann::json::exception& e) {
    throw Error(file + ": invalid JSON: " + e.what());
  }
  return std::make_unique<HfTokenizer>(j, file);
}

}  // namespace qmlx
