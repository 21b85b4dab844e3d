// GrammarCache: grammars bound to a vocabulary, kept for reuse across requests. The key is a
// hash of the schema (as written, member order included: it decides the output's order) or of
// the grammar text, of the compile options, and of the vocabulary's fingerprint. The cache is
// bounded in bytes (TokenMaskTables::memory_bytes), least recently used out first; an entry in
// use by a matcher stays alive through its shared_ptr after eviction. Thread-safe. Callers
// missing a key that another caller is building wait for that build (its result, or its error)
// instead of building again: concurrent requests with one schema bind it once. The wait is
// bounded by the build's own time limit.
#pragma once

#include <cstdint>
#include <future>
#include <list>
#include <memory>
#include <mutex>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "grammar/json_schema_compiler.h"
#include "grammar/token_mask_tables.h"

namespace qmlx::grammar {

struct BoundGrammar {
  std::shared_ptr<const TokenMaskTables> tables;
  std::vector<UnsupportedKeyword> unsupported;
};

class GrammarCache {
 public:
  explicit GrammarCache(size_t max_bytes) : max_bytes_(max_bytes) {}

  // Compiles and binds on a miss; GrammarError from compiling propagates (nothing is cached).
  BoundGrammar json_schema(const nlohmann::ordered_json& schema, const SchemaOptions& options,
                           const std::shared_ptr<const TokenVocabulary>& vocab);
  BoundGrammar grammar(std::string_view text, const std::shared_ptr<const TokenVocabulary>& vocab);

  size_t bytes() const;
  size_t entries() const;
  uint64_t hits() const;    // found, or waited for another caller's build
  uint64_t misses() const;  // built

 private:
  template <typename Build>
  BoundGrammar get_or_build(uint64_t key, Build build);
  void insert(uint64_t key, const BoundGrammar& value);
  void finish(uint64_t key);  // the build of `key` is over: later callers look it up

  // A build under way, which later callers of the same key wait for.
  struct InFlight {
    std::promise<BoundGrammar> promise;
    std::shared_future<BoundGrammar> result = promise.get_future().share();
  };
  struct Slot {
    uint64_t key;
    BoundGrammar value;
    size_t bytes;
  };
  size_t max_bytes_;
  mutable std::mutex mutex_;
  std::list<Slot> lru_;  // front: most recently used
  std::unordered_map<uint64_t, std::list<Slot>::iterator> index_;
  std::unordered_map<uint64_t, std::shared_ptr<InFlight>> in_flight_;
  size_t bytes_ = 0;
  uint64_t hits_ = 0, misses_ = 0;
};

}  // namespace qmlx::grammar
