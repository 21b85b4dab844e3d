#include "server/scheduling/reply_grammars.h"

#include "base/logging.h"
#include "grammar/grammar.h"
#include "server/common/api_error.h"

namespace qmlx::server {

ReplyGrammars::ReplyGrammars(std::shared_ptr<const Tokenizer> tokenizer,
                             std::vector<int32_t> stop_token_ids,
                             std::function<void(const std::string&)> dropped, size_t cache_bytes)
    : tokenizer_(std::move(tokenizer)),
      stop_token_ids_(std::move(stop_token_ids)),
      dropped_(std::move(dropped)),
      cache_(cache_bytes) {}

std::shared_ptr<const grammar::TokenVocabulary> ReplyGrammars::vocabulary() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!vocabulary_) {
    vocabulary_ = grammar::TokenVocabulary::from_tokenizer(*tokenizer_, stop_token_ids_);
  }
  return vocabulary_;
}

std::shared_ptr<const grammar::TokenMaskTables> ReplyGrammars::bind(const ReplyFormat& format,
                                                                    uint64_t uid) {
  if (!format.constrained()) return nullptr;
  grammar::BoundGrammar bound;
  try {
    if (format.kind == ReplyFormat::Kind::kGrammar) {
      bound = cache_.grammar(format.grammar, vocabulary());
    } else {
      bound = cache_.json_schema(format.schema, grammar::SchemaOptions{}, vocabulary());
    }
  } catch (const grammar::GrammarError& e) {
    // The message names the limit when one was hit ("... (limit max_compile_ms)").
    throw ApiError(400, format.path + ": " + e.what(), format.path);
  }
  if (bound.unsupported.empty()) return bound.tables;
  const grammar::UnsupportedKeyword& first = bound.unsupported.front();
  if (format.strict) {
    throw ApiError(400,
                   format.path + ": the keyword '" + first.keyword + "' at '" +
                       (first.path.empty() ? "#" : first.path) +
                       "' cannot be enforced, and strict asks for a reply guaranteed to match "
                       "the schema (leave strict off to have it dropped from the constraint)",
                   format.path);
  }
  std::string keywords;
  for (const grammar::UnsupportedKeyword& k : bound.unsupported) {
    keywords += (keywords.empty() ? "" : ",") + k.keyword + "@" + (k.path.empty() ? "#" : k.path);
    if (dropped_) dropped_(k.keyword);
  }
  bool first_time;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    first_time = warned_.size() < 10000 && warned_.insert(format.schema.dump()).second;
  }
  if (first_time) {
    log_warn("uid=" + std::to_string(uid) + " " + format.path +
             ": keywords not enforced, dropped from the constraint (the reply is held to the "
             "rest of the schema): " +
             keywords);
  }
  return bound.tables;
}

}  // namespace qmlx::server
