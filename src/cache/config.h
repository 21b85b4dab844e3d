// CacheConfig: the `cache` object of cache_config.json (qMLX's keys plus qmlx's own), parsed
// and validated once at start-up. Every bad value is a qmlx::Error naming the key, because a
// cache silently running with a setting the user did not mean is the failure this project
// exists to avoid; unknown keys are kept as warnings so a typo is visible but not fatal.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/config_key_doc.h"

namespace qmlx {

enum class EvictionPolicy { kUnmatchableFirst, kLru, kOldest };

std::string_view eviction_policy_name(EvictionPolicy policy);

// The `shared` object inside `cache`: the tier several servers share (Redis Cluster).
struct SharedTierConfig {
  bool enabled = false;  // the `shared` object is present
  std::string backend = "redis-cluster";
  std::vector<std::string> nodes;  // "host:port" seeds; the other nodes are discovered
  std::string password_env;        // the environment variable holding the password ("" = none)
  std::string username_env;        // the environment variable holding the ACL user ("" = none)
  bool tls = false;
  std::string tls_ca_file;              // PEM CAs to trust ("" = the system's store)
  std::string tls_cert_file;            // PEM client certificate (mutual TLS), with tls_key_file
  std::string tls_key_file;             // its private key
  std::string tls_server_name;          // name to verify and send as SNI ("" = each node's host)
  int64_t timeout_ms = 250;             // each connect, read and write
  bool read = true;                     // restore from the shared tier
  bool write = true;                    // publish every checkpoint to it
  int64_t part_mb = 8;                  // values are split into parts of at most this many MiB
  int64_t ttl_seconds = 7 * 24 * 3600;  // 0: keys never expire (maxmemory may still evict)
  int64_t breaker_failures = 3;         // failed calls in a row before a node is skipped
  int64_t breaker_cooldown_ms = 5000;   // how long a skipped node is left alone

  uint64_t part_bytes() const { return uint64_t(part_mb) << 20; }
};

struct CacheConfig {
  bool memory_prefix_cache = true;
  bool disk_kv_cache = true;
  std::string disk_cache_dir;  // default: qmlx_home()/cache; "~" expanded
  double disk_cache_max_gb = 64;
  int64_t checkpoint_interval_tokens = 0;  // 0: no `interval` snapshots
  EvictionPolicy eviction_policy = EvictionPolicy::kUnmatchableFirst;
  bool restore_guard_enabled = true;
  bool token_blob_checksum = true;  // compare the token blob with the prompt byte for byte
  int chunk_tokens = 256;
  int64_t prefill_checkpoint_tokens = 4096;
  int64_t memory_cache_max_mb = 2048;
  double low_water_fraction = 0.8;  // eviction stops at this fraction of the cap
  int64_t guard_margin_mb = 1024;
  bool fsync = true;
  int writer_queue_capacity = 16;  // pending snapshot writes before the least valuable drops
  // `edit_point` snapshots per request, where an injected <system-reminder> block starts in the
  // part of the prompt it prefills (agents drop or move those blocks next turn): at most this many,
  // the deepest first, and no more than edit_point_max_mb of snapshot bytes (each costs the
  // recurrent state plus under one chunk of K/V). 0 = off.
  int64_t edit_point_checkpoints = 4;
  int64_t edit_point_max_mb = 1024;
  SharedTierConfig shared;

  // Sizes in bytes of the caps above.
  uint64_t disk_cap_bytes() const { return uint64_t(disk_cache_max_gb * (1ull << 30)); }
  uint64_t memory_cap_bytes() const { return uint64_t(memory_cache_max_mb) << 20; }
  uint64_t guard_margin_bytes() const { return uint64_t(guard_margin_mb) << 20; }
  uint64_t edit_point_max_bytes() const { return uint64_t(edit_point_max_mb) << 20; }
  // Neither tier on: nothing at all is reused between requests (the cold baseline).
  bool enabled() const { return memory_prefix_cache || disk_kv_cache || shared.enabled; }

  static CacheConfig defaults();
};

struct ParsedCacheConfig {
  CacheConfig config;
  std::vector<std::string> warnings;
};

// `root` is the whole cache_config.json document; its "cache" object is read (other top-level
// keys belong to other parts of the server). Throws qmlx::Error naming `source` and the key.
ParsedCacheConfig parse_cache_config(const nlohmann::json& root, std::string_view source);
ParsedCacheConfig load_cache_config_file(const std::string& path);

// Every key of the "cache" object, from the table the parser reads (for `qmlx cache --help`).
std::vector<ConfigKeyDoc> cache_config_keys();

}  // namespace qmlx
