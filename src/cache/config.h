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

  // Sizes in bytes of the caps above.
  uint64_t disk_cap_bytes() const { return uint64_t(disk_cache_max_gb * (1ull << 30)); }
  uint64_t memory_cap_bytes() const { return uint64_t(memory_cache_max_mb) << 20; }
  uint64_t guard_margin_bytes() const { return uint64_t(guard_margin_mb) << 20; }
  uint64_t edit_point_max_bytes() const { return uint64_t(edit_point_max_mb) << 20; }
  // Neither tier on: nothing at all is reused between requests (the cold baseline).
  bool enabled() const { return memory_prefix_cache || disk_kv_cache; }

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
