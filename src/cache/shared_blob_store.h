// SharedBlobStore: the cache's BlobStore over Redis Cluster, the tier several servers share.
// A blob "chunks/ab/<hash>.kv" of fingerprint F is a small meta key `qmlx:{F:<name>}` naming a
// write generation, a part count and a size, plus parts `qmlx:{F:<name>}:<gen>:<i>` of at most
// part_bytes each (a snapshot can be hundreds of MB; Redis values should stay small). The hash
// tag puts a blob's meta and parts in one slot, so a blob lives on one node; the fingerprint in
// every key keeps servers with other models apart. put() writes the parts, then the meta, so a
// reader never sees a meta without its parts unless Redis evicted some since: then get() is a
// NotFound whose message says "partial", never a short blob. Every key gets the configured TTL
// (none with ttl 0); pin() removes it. Every call is bounded by the client's timeout and goes
// through the client's per-node circuit breakers, and is counted in SharedTierStats. Thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "cache/blob_store.h"
#include "cache/hash.h"
#include "cache/metrics.h"
#include "redis/redis_cluster.h"

namespace qmlx {

struct SharedStoreOptions {
  RedisClusterOptions cluster;
  Hash128 fingerprint;
  uint64_t part_bytes = 8 << 20;
  int64_t ttl_seconds = 0;  // 0: keys never expire (Redis's own eviction may still drop them)
};

// The fields of one index hash (field -> value).
using SharedIndexEntries = std::vector<std::pair<std::string, std::string>>;

class SharedBlobStore final : public BlobStore {
 public:
  explicit SharedBlobStore(SharedStoreOptions options);

  Status put(const std::string& name, std::span<const uint8_t> bytes) override;
  Status get(const std::string& name, std::vector<uint8_t>* out) override;
  Status read_range(const std::string& name, uint64_t offset, size_t n, uint8_t* out) override;
  bool exists(const std::string& name) override;
  Status size(const std::string& name, uint64_t* bytes) override;
  Status list(const std::string& folder, std::vector<BlobInfo>* out) override;
  Status remove(const std::string& name) override;
  // A value that failed verification is deleted (other servers would fail on it too).
  Status quarantine(const std::string& name) override;

  // Whether each blob exists, in one pipelined round trip.
  Status exists_many(const std::vector<std::string>& names, std::vector<bool>* present);
  // Removes (pinned) or restores (unpinned) the TTL of a blob's keys.
  Status set_persistent(const std::string& name, bool persistent);

  // Small hashes beside the blobs (the resume-point index): add a field, remove one, and read
  // many hashes in one pipelined round trip (absent hashes read as empty).
  Status index_add(const std::string& index, const std::string& field, const std::string& value);
  Status index_remove(const std::string& index, const std::string& field);
  Status index_read_many(const std::vector<std::string>& indexes,
                         std::vector<SharedIndexEntries>* out);

  // The Redis key of a blob's meta (tests corrupt and delete values through it).
  std::string meta_key(const std::string& name) const;
  std::string part_key(const std::string& name, const std::string& generation, size_t i) const;

  // Why the client cannot connect at all (TLS files that do not load), or Ok.
  const Status& setup_status() const { return cluster_.setup_status(); }

  SharedTierStats stats() const;
  void count_lookup();
  void count_hit();
  void count_chunks_skipped(uint64_t n);
  void count_corrupt_deleted();

 private:
  struct Meta {
    std::string generation;
    uint64_t parts = 0;
    uint64_t bytes = 0;
    uint64_t part_bytes = 1;
  };
  // Runs `call`, timing it and counting its errors (a NotFound is an answer, not an error).
  template <class Call>
  Status guarded(Call&& call);
  Status read_meta(const std::string& name, Meta* meta);
  Status check(const RedisResult& result, const std::string& what);
  std::vector<std::string_view> with_ttl(std::vector<std::string_view> args) const;
  std::string new_generation();

  SharedStoreOptions options_;
  std::string prefix_;  // "qmlx:{<F hex>:"
  std::string ttl_ms_;
  RedisCluster cluster_;
  mutable std::mutex mutex_;  // guards stats_ and random_
  SharedTierStats stats_;
  std::mt19937_64 random_;
};

}  // namespace qmlx
