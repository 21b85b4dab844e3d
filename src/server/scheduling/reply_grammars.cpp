#include "server/scheduling/reply_grammars.h"

#include "base/logging.h"
#include "grammar/grammar.h"
#include "server/common/api_error.h"
#include "server/scheduling/tool_call_grammar.h"

namespace qmlx::server {
namespace {

[[noreturn]] void refuse_unenforceable(const std::string& where,
                                       const grammar::UnsupportedKeyword& keyword,
                                       const std::string& field) {
  throw ApiError(400,
                 where + ": the keyword '" + keyword.keyword + "' at '" +
                     (keyword.path.empty() ? "#" : keyword.path) +
                     "' cannot be enforced, and strict asks for a reply guaranteed to match "
                     "the schema (leave strict off to have it dropped from the constraint)",
                 field);
}

}  // namespace

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
    // The tool-call tags are text the tool-call grammar spells, whether or not the tokenizer
    // flags them special (Qwen3's are ordinary; a model writes each as its one token).
    std::vector<int32_t> tags;
    for (std::string_view tag : {kToolCallOpenTag, kToolCallCloseTag}) {
      if (std::optional<int32_t> id = tokenizer_->token_id(tag)) tags.push_back(*id);
    }
    vocabulary_ = grammar::TokenVocabulary::from_tokenizer(*tokenizer_, stop_token_ids_, tags);
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
  if (format.strict) refuse_unenforceable(format.path, first, format.path);
  report_dropped(bound.unsupported, format.schema.dump(), format.path, uid);
  return bound.tables;
}

std::shared_ptr<const grammar::TokenMaskTables> ReplyGrammars::bind_tool_calls(
    const GenerationRequest& request, ToolCallFormat format, bool every_tool, uint64_t uid) {
  ToolCallGrammar built;
  grammar::BoundGrammar bound;
  try {
    built = build_tool_call_grammar(request, format, every_tool);
    if (built.text.empty()) return nullptr;
    for (const ToolCallGrammar::Dropped& d : built.dropped) {
      if (d.strict) refuse_unenforceable(d.field, d.keyword, "tools");
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (unbindable_.count(std::hash<std::string>{}(built.text))) return nullptr;
    }
    bound = cache_.grammar(built.text, vocabulary());
  } catch (const grammar::GrammarError& e) {
    // Strict tools were promised conforming calls: the client hears why not. Without them the
    // grammar was the server's own choice (tool_call_grammar): the calls go free instead, and
    // this tool set is not tried again.
    if (!request.strict_tools.empty()) {
      throw ApiError(400, std::string("tools: a tool's parameters: ") + e.what(), "tools");
    }
    bool first_time;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      first_time = unbindable_.size() < 10000 &&
                   unbindable_.insert(std::hash<std::string>{}(built.text)).second;
    }
    if (first_time) {
      log_warn("uid=" + std::to_string(uid) + " tools: the tool-call grammar is not used for " +
               "this tool set, its calls are free: " + e.what());
    }
    return nullptr;
  }
  std::vector<grammar::UnsupportedKeyword> dropped;
  std::string where;
  for (const ToolCallGrammar::Dropped& d : built.dropped) {
    dropped.push_back(d.keyword);
    if (where.find(d.field) == std::string::npos) where += (where.empty() ? "" : ", ") + d.field;
  }
  if (!dropped.empty()) report_dropped(dropped, built.text, where, uid);
  return bound.tables;
}

void ReplyGrammars::report_dropped(const std::vector<grammar::UnsupportedKeyword>& unsupported,
                                   const std::string& key, const std::string& where, uint64_t uid) {
  std::string keywords;
  for (const grammar::UnsupportedKeyword& k : unsupported) {
    keywords += (keywords.empty() ? "" : ",") + k.keyword + "@" + (k.path.empty() ? "#" : k.path);
    if (dropped_) dropped_(k.keyword);
  }
  bool first_time;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    first_time = warned_.size() < 10000 && warned_.insert(key).second;
  }
  if (first_time) {
    log_warn("uid=" + std::to_string(uid) + " " + where +
             ": keywords not enforced, dropped from the constraint (the reply is held to the "
             "rest of the schema): " +
             keywords);
  }
}

}  // namespace qmlx::server
