#include "cache/config.h"

#include <algorithm>
#include <cmath>
#include <concepts>
#include <fstream>
#include <iterator>
#include <variant>

#include "base/error.h"
#include "base/process.h"

namespace qmlx {
namespace {

// A number as a person writes it: 0.8, 1048576 (no trailing zeros).
std::string format_number(double v) {
  std::string s = std::to_string(v);
  s.erase(s.find_last_not_of('0') + 1);
  if (!s.empty() && s.back() == '.') s.pop_back();
  return s;
}

constexpr EvictionPolicy kPolicies[] = {EvictionPolicy::kUnmatchableFirst, EvictionPolicy::kLru,
                                        EvictionPolicy::kOldest};

std::string policy_names(const std::string& separator) {
  std::string out;
  for (EvictionPolicy p : kPolicies) {
    out += (out.empty() ? "" : separator) + std::string(eviction_policy_name(p));
  }
  return out;
}

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
      fail(key, std::string("must be in ") + (min_exclusive ? "(" : "[") + format_number(min) +
                    ", " + format_number(max) + "], got " + value->dump());
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
  const nlohmann::json& object_;
  std::string_view source_;
};

void read_policy(const KeyReader& reader, const std::string& key, EvictionPolicy* out) {
  std::string name;
  reader.read_string(key, &name);
  if (name.empty()) return;
  for (EvictionPolicy p : kPolicies) {
    if (eviction_policy_name(p) == name) {
      *out = p;
      return;
    }
  }
  reader.fail(key, "must be one of " + policy_names(", ") + ", got \"" + name + "\"");
}

// One key of the "cache" object: the field it sets, the range it accepts and what it does.
// The parser reads the keys from this table and `qmlx cache --help` prints it.
using CacheField =
    std::variant<bool CacheConfig::*, int CacheConfig::*, int64_t CacheConfig::*,
                 double CacheConfig::*, std::string CacheConfig::*, EvictionPolicy CacheConfig::*>;

struct CacheKey {
  const char* name;
  CacheField field;
  double min = 0, max = 0;  // integers and numbers
  bool min_exclusive = false;
  const char* help = "";
};

constexpr int64_t kLarge = int64_t(1) << 30;

const CacheKey kCacheKeys[] = {
    {"memory_prefix_cache", &CacheConfig::memory_prefix_cache, 0, 0, false,
     "keep recent chunks and snapshots in RAM (the RAM tier)"},
    {"disk_kv_cache", &CacheConfig::disk_kv_cache, 0, 0, false,
     "keep chunks and snapshots on disk (the disk tier; survives restarts)"},
    {"disk_cache_dir", &CacheConfig::disk_cache_dir, 0, 0, false,
     "folder of the disk cache (\"~\" is expanded)"},
    {"disk_cache_max_gb", &CacheConfig::disk_cache_max_gb, 0, 1 << 20, true,
     "disk cap in GiB: eviction starts above it"},
    {"checkpoint_interval_tokens", &CacheConfig::checkpoint_interval_tokens, 0, kLarge, false,
     "an `interval` snapshot every N generated tokens (0 = off)"},
    {"eviction_policy", &CacheConfig::eviction_policy, 0, 0, false,
     "what eviction frees first: unmatchable_first (what can never be restored, then least "
     "recently used weighted by kind), lru, or oldest"},
    {"restore_guard_enabled", &CacheConfig::restore_guard_enabled, 0, 0, false,
     "refuse a restore that would not fit in the memory available to the process"},
    {"token_blob_checksum", &CacheConfig::token_blob_checksum, 0, 0, false,
     "compare a snapshot's tokens with the prompt byte for byte before restoring it"},
    {"chunk_tokens", &CacheConfig::chunk_tokens, 16, 65536, false,
     "tokens per K/V chunk (the unit of sharing between conversations)"},
    {"prefill_checkpoint_tokens", &CacheConfig::prefill_checkpoint_tokens, 0, kLarge, false,
     "a `prefill_progress` snapshot every N tokens of a long prefill (0 = off)"},
    {"memory_cache_max_mb", &CacheConfig::memory_cache_max_mb, 0, kLarge, false,
     "RAM tier cap in MiB"},
    {"low_water_fraction", &CacheConfig::low_water_fraction, 0, 1, true,
     "eviction stops at this fraction of the disk cap"},
    {"guard_margin_mb", &CacheConfig::guard_margin_mb, 0, kLarge, false,
     "memory in MiB that the restore guard keeps free"},
    {"fsync", &CacheConfig::fsync, 0, 0, false,
     "flush written files and folders to the device (off: faster, not crash-safe)"},
    {"writer_queue_capacity", &CacheConfig::writer_queue_capacity, 1, 4096, false,
     "snapshot writes that may wait for the background writer before the least valuable one "
     "is dropped"},
    // Default 4 snapshots and 1 GiB per request: Qwen Code's first message carries four reminder
    // blocks; a Qwen3.5-122B snapshot is about 150 MB of recurrent state.
    {"edit_point_checkpoints", &CacheConfig::edit_point_checkpoints, 0, 64, false,
     "`edit_point` snapshots per request where an injected <system-reminder> block starts, so "
     "a client that drops or moves one on replay resumes there (0 = off)"},
    {"edit_point_max_mb", &CacheConfig::edit_point_max_mb, 0, kLarge, false,
     "the most MiB of `edit_point` snapshots one request may write"},
};

template <class... Ts>
struct Overloaded : Ts... {
  using Ts::operator()...;
};

void read_key(const KeyReader& reader, const CacheKey& key, CacheConfig& c) {
  const std::string name = key.name;
  std::visit(Overloaded{
                 [&](bool CacheConfig::*f) { reader.read_bool(name, &(c.*f)); },
                 // int and int64_t fields (bool takes the exact overload above).
                 [&]<std::integral T>(T CacheConfig::*f) {
                   int64_t v = c.*f;
                   reader.read_int(name, int64_t(key.min), int64_t(key.max), &v);
                   c.*f = T(v);
                 },
                 [&](double CacheConfig::*f) {
                   reader.read_number(name, key.min, key.max, key.min_exclusive, &(c.*f));
                 },
                 [&](std::string CacheConfig::*f) {
                   reader.read_string(name, &(c.*f));
                   c.*f = expand_user(c.*f);
                 },
                 [&](EvictionPolicy CacheConfig::*f) { read_policy(reader, name, &(c.*f)); },
             },
             key.field);
}

std::string range(const CacheKey& key) {
  return std::string(key.min_exclusive ? "(" : "[") + format_number(key.min) + ", " +
         format_number(key.max) + "]";
}

ConfigKeyDoc document(const CacheKey& key, const CacheConfig& defaults) {
  ConfigKeyDoc doc{std::string("cache.") + key.name, "", "", key.help};
  std::visit(Overloaded{
                 [&](bool CacheConfig::*f) {
                   doc.values = "true|false";
                   doc.default_value = defaults.*f ? "true" : "false";
                 },
                 [&]<std::integral T>(T CacheConfig::*f) {  // int and int64_t fields
                   doc.values = "integer in " + range(key);
                   doc.default_value = std::to_string(defaults.*f);
                 },
                 [&](double CacheConfig::*f) {
                   doc.values = "number in " + range(key);
                   doc.default_value = format_number(defaults.*f);
                 },
                 [&](std::string CacheConfig::*f) {
                   doc.values = "string";
                   doc.default_value = nlohmann::json(defaults.*f).dump();
                 },
                 [&](EvictionPolicy CacheConfig::*f) {
                   doc.values = policy_names("|");
                   doc.default_value = "\"" + std::string(eviction_policy_name(defaults.*f)) + "\"";
                 },
             },
             key.field);
  return doc;
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

  KeyReader reader(cache, source);
  for (const CacheKey& key : kCacheKeys) read_key(reader, key, parsed.config);
  for (const auto& [key, value] : cache.items()) {
    const bool known = std::any_of(std::begin(kCacheKeys), std::end(kCacheKeys),
                                   [&](const CacheKey& k) { return key == k.name; });
    if (!known) {
      parsed.warnings.push_back(std::string(source) + ": unknown key cache." + key + " ignored");
    }
  }
  return parsed;
}

std::vector<ConfigKeyDoc> cache_config_keys() {
  const CacheConfig defaults = CacheConfig::defaults();
  std::vector<ConfigKeyDoc> docs;
  for (const CacheKey& key : kCacheKeys) docs.push_back(document(key, defaults));
  return docs;
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
