// ReplyGrammars: the server's grammars for constrained replies, bound to the served model's
// vocabulary. A request's ReplyFormat is compiled (or found in the cache, bounded in bytes)
// when the request arrives, so a bad schema, a limit or an unenforceable keyword under
// `strict` is the client's 400 before anything is queued. Keywords dropped without `strict` are
// logged once per schema and counted. Thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "grammar/grammar_cache.h"
#include "grammar/token_mask_tables.h"
#include "server/common/generation_request.h"
#include "server/common/reply_format.h"
#include "text/output/output_format.h"
#include "text/tokenizer/tokenizer.h"

namespace qmlx::server {

// The compiled grammars' cache bound, in bytes (their token tables dominate).
inline constexpr size_t kReplyGrammarCacheBytes = size_t(256) << 20;

class ReplyGrammars {
 public:
  // `dropped` hears each keyword dropped from a non-strict schema (the metric); may be empty.
  ReplyGrammars(std::shared_ptr<const Tokenizer> tokenizer, std::vector<int32_t> stop_token_ids,
                std::function<void(const std::string& keyword)> dropped = {},
                size_t cache_bytes = kReplyGrammarCacheBytes);

  // The format's grammar bound to the vocabulary; null for free text. Throws ApiError(400)
  // naming the field and the reason (a schema that is not one, a limit, and under strict a
  // keyword the engine cannot enforce, with its path).
  std::shared_ptr<const grammar::TokenMaskTables> bind(const ReplyFormat& format, uint64_t uid);

  // The request's tool-call grammar (tool_call_grammar.h) bound to the vocabulary; null when
  // its calls are free. `every_tool`: the server's tool_call_grammar (else strict tools only).
  // Throws ApiError(400) for a strict tool whose schema has a keyword the engine cannot
  // enforce, or a grammar over a limit (size, compile or bind time) when a tool is strict;
  // without strict tools such a grammar is not used (calls free, logged once, not retried).
  // Other tools' unenforceable keywords are dropped, logged once and counted, as for reply
  // formats.
  std::shared_ptr<const grammar::TokenMaskTables> bind_tool_calls(const GenerationRequest& request,
                                                                  ToolCallFormat format,
                                                                  bool every_tool, uint64_t uid);

  const grammar::GrammarCache& cache() const { return cache_; }

 private:
  std::shared_ptr<const grammar::TokenVocabulary> vocabulary();
  // Logs (once per `key`) and counts keywords dropped from the constraint of `where`.
  void report_dropped(const std::vector<grammar::UnsupportedKeyword>& keywords,
                      const std::string& key, const std::string& where, uint64_t uid);

  std::shared_ptr<const Tokenizer> tokenizer_;
  std::vector<int32_t> stop_token_ids_;
  std::function<void(const std::string&)> dropped_;
  grammar::GrammarCache cache_;
  std::mutex mutex_;
  // Built on the first constrained request: 150k-250k token byte strings and their trie.
  std::shared_ptr<const grammar::TokenVocabulary> vocabulary_;
  std::set<std::string> warned_;  // schemas whose dropped keywords were logged
  // Tool-call grammars (hashes of their text) that hit a limit binding; not tried again.
  std::set<size_t> unbindable_;
};

}  // namespace qmlx::server
