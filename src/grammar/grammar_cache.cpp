#include "grammar/grammar_cache.h"

#include <xxhash.h>

namespace qmlx::grammar {
namespace {

uint64_t hash_with(std::string_view kind, std::string_view content, const std::string& options,
                   uint64_t vocab) {
  std::string all = std::string(kind) + '\0' + options + '\0' + std::to_string(vocab) + '\0';
  all.append(content);
  return XXH3_64bits(all.data(), all.size());
}

std::string options_text(const SchemaOptions& o) {
  return std::to_string(o.max_schema_bytes) + "," + std::to_string(o.max_depth) + "," +
         std::to_string(o.max_string_length) + "," + std::to_string(o.max_item_count) + "," +
         std::to_string(o.grammar_limits.max_nodes) + "," +
         std::to_string(o.grammar_limits.max_unrolled_repeat) + ",[" + o.item_space + "],[" +
         o.key_space + "]";
}

}  // namespace

BoundGrammar GrammarCache::json_schema(const nlohmann::ordered_json& schema,
                                       const SchemaOptions& options,
                                       const std::shared_ptr<const TokenVocabulary>& vocab) {
  std::string text = schema.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
  uint64_t key = hash_with("schema", text, options_text(options), vocab->fingerprint());
  return get_or_build(key, [&] {
    CompiledGrammar g = compile_json_schema(schema, options);
    return BoundGrammar{
        TokenMaskTables::build(g.grammar, vocab, {.max_build_time = options.max_compile_time}),
        std::move(g.unsupported)};
  });
}

BoundGrammar GrammarCache::grammar(std::string_view text,
                                   const std::shared_ptr<const TokenVocabulary>& vocab) {
  uint64_t key = hash_with("grammar", text, "", vocab->fingerprint());
  return get_or_build(key, [&] {
    return BoundGrammar{TokenMaskTables::build(compile_grammar(text).grammar, vocab), {}};
  });
}

template <typename Build>
BoundGrammar GrammarCache::get_or_build(uint64_t key, Build build) {
  std::shared_ptr<InFlight> flight;
  bool builder = false;
  {
    std::lock_guard lock(mutex_);
    auto it = index_.find(key);
    if (it != index_.end()) {
      ++hits_;
      lru_.splice(lru_.begin(), lru_, it->second);
      return it->second->value;
    }
    auto [building, first] = in_flight_.try_emplace(key);
    if (first) {
      ++misses_;
      building->second = std::make_shared<InFlight>();
      builder = true;
    } else {
      ++hits_;
    }
    flight = building->second;
  }
  if (!builder) return flight->result.get();  // the builder's result, or its error rethrown
  // Outside the lock: binding to a vocabulary takes up to max_compile_ms.
  try {
    BoundGrammar value = build();
    insert(key, value);
    finish(key);
    flight->promise.set_value(value);
    return value;
  } catch (...) {
    finish(key);  // not cached: the next caller tries again
    flight->promise.set_exception(std::current_exception());
    throw;
  }
}

void GrammarCache::finish(uint64_t key) {
  std::lock_guard lock(mutex_);
  in_flight_.erase(key);
}

void GrammarCache::insert(uint64_t key, const BoundGrammar& value) {
  std::lock_guard lock(mutex_);
  if (index_.count(key)) return;
  size_t bytes = value.tables->memory_bytes();
  if (bytes > max_bytes_) return;  // would evict everything and still not fit
  lru_.push_front({key, value, bytes});
  index_[key] = lru_.begin();
  bytes_ += bytes;
  while (bytes_ > max_bytes_) {
    bytes_ -= lru_.back().bytes;
    index_.erase(lru_.back().key);
    lru_.pop_back();
  }
}

size_t GrammarCache::bytes() const {
  std::lock_guard lock(mutex_);
  return bytes_;
}
size_t GrammarCache::entries() const {
  std::lock_guard lock(mutex_);
  return lru_.size();
}
uint64_t GrammarCache::hits() const {
  std::lock_guard lock(mutex_);
  return hits_;
}
uint64_t GrammarCache::misses() const {
  std::lock_guard lock(mutex_);
  return misses_;
}

}  // namespace qmlx::grammar
