#include "cache/config.h"

#include <algorithm>
#include <cmath>
#include <fstream>

#include "base/error.h"
#include "base/process.h"

namespace qmlx {
namespace {

class KeyReader {
 public:
  KeyReader(const nlohmann::json& object, std::string_view source)
      : object_(object), source_(source) {}

  [[noreturn]] void fail(const std::string& key, const std::string& what) const {
    throw Error(std::string(source_) + ": cache." + key + " " + what);
  }

  void read_bool(const std::string& key, bool* out) const {
    const nlohmann::json* value = find(key);
    if (value == nullptr) return;
    if (!value->is_boolean()) fail(key, "must be true or false, got " + value->dump());
    *out = value->get<bool>();
  }

  void read_int(const std::string& key, int64_t min, int64_t max, int64_t* out) const {
    const nlohmann::json* value = find(key);
    if (value == nullptr) return;
    if (!value->is_number_integer()) fail(key, "must be an integer, got " + value->dump());
    int64_t v = value->get<int64_t>();
    if (v < min || v > max) {
      fail(key, "must be in [" + std::to_string(min) + ", " + std::to_string(max) + "], got " +
                    std::to_string(v));
    }
    *out = v;
  }

  void read_number(const std::string& key, double min, double max, bool min_exclusive,
                   double* out) const {
    const nlohmann::json* value = find(key);
    if (value == nullptr) return;
    if (!value->is_number()) fail(key, "must be a number, got " + value->dump());
    double v = value->get<double>();
    bool too_low = min_exclusive ? v <= min : v < min;
    if (!std::isfinite(v) || too_low || v > max) {
      fail(key, std::string("must be in ") + (min_exclusive ? "(" : "[") + format(min) + ", " +
                    format(max) + "], got " + value->dump());
    }
    *out = v;
  }

  void read_string(const std::string& key, std::string* out) const {
    const nlohmann::json* value = find(key);
    if (value == nullptr) return;
    if (!value->is_string() || value->get<std::string>().empty()) {
      fail(key, "must be a non-empty string, got " + value->dump());
    }
    *out = value->get<std::string>();
  }

 private:
  const nlohmann::json* find(const std::string& key) const {
    auto it = object_.find(key);
    return it == object_.end() ? nullptr : &*it;
  }
  static std::string format(double v) {
    std::string s = std::to_string(v);
    s.erase(s.find_last_not_of('0') + 1);
    if (!s.empty() && s.back() == '.') s.pop_back();
    return s;
  }

  const nlohmann::json& object_;
  std::string_view source_;
};

void read_policy(const KeyReader& reader, EvictionPolicy* out) {
  std::string name;
  reader.read_string("eviction_policy", &name);
  if (name.empty()) return;
  for (EvictionPolicy p :
       {EvictionPolicy::kUnmatchableFirst, EvictionPolicy::kLru, EvictionPolicy::kOldest}) {
    if (eviction_policy_name(p) == name) {
      *out = p;
      return;
    }
  }
  reader.fail("eviction_policy",
              "must be one of unmatchable_first, lru, oldest, got \"" + name + "\"");
}

const std::vector<std::string>& known_keys() {
  static const std::vector<std::string> keys = {"memory_prefix_cache",
                                                "disk_kv_cache",
                                                "disk_cache_dir",
                                                "disk_cache_max_gb",
                                                "checkpoint_interval_tokens",
                                                "eviction_policy",
                                                "restore_guard_enabled",
                                                "token_blob_checksum",
                                                "chunk_tokens",
                                                "prefill_checkpoint_tokens",
                                                "memory_cache_max_mb",
                                                "low_water_fraction",
                                                "guard_margin_mb",
                                                "fsync",
                                                "writer_queue_capacity",
                                                "edit_point_checkpoints",
                                                "edit_point_max_mb"};
  return keys;
}

}  // namespace

std::string_view eviction_policy_name(EvictionPolicy policy) {
  switch (policy) {
    case EvictionPolicy::kUnmatchableFirst:
      return "unmatchable_first";
    case EvictionPolicy::kLru:
      return "lru";
    case EvictionPolicy::kOldest:
      return "oldest";
  }
  return "?";
}

CacheConfig CacheConfig::defaults() {
  CacheConfig config;
  config.disk_cache_dir = qmlx_home() + "/cache";
  return config;
}

ParsedCacheConfig parse_cache_config(const nlohmann::json& root, std::string_view source) {
  ParsedCacheConfig parsed{CacheConfig::defaults(), {}};
  if (!root.is_object()) throw Error(std::string(source) + ": must be a JSON object");
  auto it = root.find("cache");
  if (it == root.end()) {
    parsed.warnings.push_back(std::string(source) + ": no \"cache\" object; using defaults");
    return parsed;
  }
  const nlohmann::json& cache = *it;
  if (!cache.is_object()) throw Error(std::string(source) + ": cache must be a JSON object");

  CacheConfig& c = parsed.config;
  KeyReader reader(cache, source);
  reader.read_bool("memory_prefix_cache", &c.memory_prefix_cache);
  reader.read_bool("disk_kv_cache", &c.disk_kv_cache);
  reader.read_string("disk_cache_dir", &c.disk_cache_dir);
  c.disk_cache_dir = expand_user(c.disk_cache_dir);
  reader.read_number("disk_cache_max_gb", 0, 1 << 20, true, &c.disk_cache_max_gb);
  reader.read_int("checkpoint_interval_tokens", 0, int64_t(1) << 30, &c.checkpoint_interval_tokens);
  read_policy(reader, &c.eviction_policy);
  reader.read_bool("restore_guard_enabled", &c.restore_guard_enabled);
  reader.read_bool("token_blob_checksum", &c.token_blob_checksum);
  int64_t chunk_tokens = c.chunk_tokens;
  reader.read_int("chunk_tokens", 16, 65536, &chunk_tokens);
  c.chunk_tokens = int(chunk_tokens);
  reader.read_int("prefill_checkpoint_tokens", 0, int64_t(1) << 30, &c.prefill_checkpoint_tokens);
  reader.read_int("memory_cache_max_mb", 0, int64_t(1) << 30, &c.memory_cache_max_mb);
  reader.read_number("low_water_fraction", 0, 1, true, &c.low_water_fraction);
  reader.read_int("guard_margin_mb", 0, int64_t(1) << 30, &c.guard_margin_mb);
  reader.read_bool("fsync", &c.fsync);
  int64_t queue = c.writer_queue_capacity;
  reader.read_int("writer_queue_capacity", 1, 4096, &queue);
  c.writer_queue_capacity = int(queue);
  // Default 4 snapshots and 1 GiB per request: Qwen Code's first message carries four reminder
  // blocks; a Qwen3.5-122B snapshot is about 150 MB of recurrent state.
  reader.read_int("edit_point_checkpoints", 0, 64, &c.edit_point_checkpoints);
  reader.read_int("edit_point_max_mb", 0, int64_t(1) << 30, &c.edit_point_max_mb);

  for (const auto& [key, value] : cache.items()) {
    const auto& keys = known_keys();
    if (std::find(keys.begin(), keys.end(), key) == keys.end()) {
      parsed.warnings.push_back(std::string(source) + ": unknown key cache." + key + " ignored");
    }
  }
  return parsed;
}

ParsedCacheConfig load_cache_config_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Error(path + ": cannot open cache config");
  nlohmann::json root;
  try {
    root = nlohmann::json::parse(in);
  } catch (const nlohmann::json::parse_error& e) {
    throw Error(path + ": invalid JSON: " + e.what());
  }
  return parse_cache_config(root, path);
}

}  // namespace qmlx
