#include "cache/config.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <concepts>
#include <cstring>
#include <filesystem>
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
  // `prefix` names the object in errors: "cache." or "cache.shared.".
  KeyReader(const nlohmann::json& object, std::string_view source, std::string prefix)
      : object_(object), source_(source), prefix_(std::move(prefix)) {}

  [[noreturn]] void fail(const std::string& key, const std::string& what) const {
    throw Error(std::string(source_) + ": " + prefix_ + key + " " + what);
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

  void read_string_list(const std::string& key, std::vector<std::string>* out) const {
    const nlohmann::json* value = find(key);
    if (value == nullptr) return;
    const std::string what = "must be a non-empty array of non-empty strings, got ";
    if (!value->is_array() || value->empty()) fail(key, what + value->dump());
    out->clear();
    for (const nlohmann::json& item : *value) {
      if (!item.is_string() || item.get<std::string>().empty()) fail(key, what + value->dump());
      out->push_back(item.get<std::string>());
    }
  }

 private:
  const nlohmann::json* find(const std::string& key) const {
    auto it = object_.find(key);
    return it == object_.end() ? nullptr : &*it;
  }
  const nlohmann::json& object_;
  std::string_view source_;
  std::string prefix_;
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

// One key of a config object (Config: CacheConfig for "cache", SharedTierConfig for
// "cache.shared"): the field it sets, the range it accepts and what it does. The parser reads
// the keys from these tables and `qmlx cache --help` prints them.
template <class Config>
using ConfigField = std::variant<bool Config::*, int Config::*, int64_t Config::*, double Config::*,
                                 std::string Config::*, EvictionPolicy Config::*,
                                 std::vector<std::string> Config::*>;

template <class Config>
struct ConfigKey {
  const char* name;
  ConfigField<Config> field;
  double min = 0, max = 0;  // integers and numbers
  bool min_exclusive = false;
  const char* help = "";
};
using CacheKey = ConfigKey<CacheConfig>;
using SharedKey = ConfigKey<SharedTierConfig>;

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

const SharedKey kSharedKeys[] = {
    {"backend", &SharedTierConfig::backend, 0, 0, false,
     "the shared store: \"redis-cluster\" (Redis Cluster 7, Valkey, or a managed service "
     "speaking the same protocol)"},
    {"nodes", &SharedTierConfig::nodes, 0, 0, false,
     "\"host:port\" of one or more cluster nodes (required); the others are discovered"},
    {"password_env", &SharedTierConfig::password_env, 0, 0, false,
     "the environment variable holding the AUTH password (never the password itself)"},
    {"username_env", &SharedTierConfig::username_env, 0, 0, false,
     "the environment variable holding the ACL user name (with password_env)"},
    {"tls", &SharedTierConfig::tls, 0, 0, false,
     "connect to every node with TLS (TLS 1.2 or later; the server's certificate is verified)"},
    {"tls_ca_file", &SharedTierConfig::tls_ca_file, 0, 0, false,
     "PEM file of the CA certificates that sign the nodes' certificates (with tls; default: "
     "the system's trusted CAs)"},
    {"tls_cert_file", &SharedTierConfig::tls_cert_file, 0, 0, false,
     "PEM client certificate (chain) for mutual TLS (with tls and tls_key_file)"},
    {"tls_key_file", &SharedTierConfig::tls_key_file, 0, 0, false,
     "PEM private key of tls_cert_file"},
    {"tls_server_name", &SharedTierConfig::tls_server_name, 0, 0, false,
     "the name the nodes' certificates must carry, also sent as SNI (with tls; default: each "
     "node's host, as in nodes or as the cluster announces it)"},
    {"timeout_ms", &SharedTierConfig::timeout_ms, 1, 60000, false,
     "bound on each connect, read and write; a slow or dead node costs at most this per call "
     "until its breaker opens"},
    {"read", &SharedTierConfig::read, 0, 0, false, "restore from the shared tier"},
    {"write", &SharedTierConfig::write, 0, 0, false,
     "publish every checkpoint to the shared tier (chunks already there are not sent again)"},
    {"part_mb", &SharedTierConfig::part_mb, 1, 512, false,
     "values are stored in parts of at most this many MiB"},
    {"ttl_seconds", &SharedTierConfig::ttl_seconds, 0, 10ll * 365 * 24 * 3600, false,
     "expiry of every key (0 = none; pinned snapshots never expire)"},
    {"breaker_failures", &SharedTierConfig::breaker_failures, 1, 1000, false,
     "failed calls in a row after which a node is skipped (its calls fail at once)"},
    {"breaker_cooldown_ms", &SharedTierConfig::breaker_cooldown_ms, 0, 3600000, false,
     "how long a skipped node is left alone before one call tries it again"},
};

template <class... Ts>
struct Overloaded : Ts... {
  using Ts::operator()...;
};

template <class Config>
void read_key(const KeyReader& reader, const ConfigKey<Config>& key, Config& c) {
  const std::string name = key.name;
  std::visit(
      Overloaded{
          [&](bool Config::*f) { reader.read_bool(name, &(c.*f)); },
          // int and int64_t fields (bool takes the exact overload above).
          [&]<std::integral T>(T Config::*f) {
            int64_t v = c.*f;
            reader.read_int(name, int64_t(key.min), int64_t(key.max), &v);
            c.*f = T(v);
          },
          [&](double Config::*f) {
            reader.read_number(name, key.min, key.max, key.min_exclusive, &(c.*f));
          },
          [&](std::string Config::*f) {
            reader.read_string(name, &(c.*f));
            c.*f = expand_user(c.*f);
          },
          [&](EvictionPolicy Config::*f) { read_policy(reader, name, &(c.*f)); },
          [&](std::vector<std::string> Config::*f) { reader.read_string_list(name, &(c.*f)); },
      },
      key.field);
}

template <class Config>
std::string range(const ConfigKey<Config>& key) {
  return std::string(key.min_exclusive ? "(" : "[") + format_number(key.min) + ", " +
         format_number(key.max) + "]";
}

template <class Config>
ConfigKeyDoc document(const ConfigKey<Config>& key, const Config& defaults,
                      const std::string& prefix) {
  ConfigKeyDoc doc{prefix + key.name, "", "", key.help};
  std::visit(Overloaded{
                 [&](bool Config::*f) {
                   doc.values = "true|false";
                   doc.default_value = defaults.*f ? "true" : "false";
                 },
                 [&]<std::integral T>(T Config::*f) {  // int and int64_t fields
                   doc.values = "integer in " + range(key);
                   doc.default_value = std::to_string(defaults.*f);
                 },
                 [&](double Config::*f) {
                   doc.values = "number in " + range(key);
                   doc.default_value = format_number(defaults.*f);
                 },
                 [&](std::string Config::*f) {
                   doc.values = "string";
                   doc.default_value =
                       (defaults.*f).empty() ? "none" : nlohmann::json(defaults.*f).dump();
                 },
                 [&](EvictionPolicy Config::*f) {
                   doc.values = policy_names("|");
                   doc.default_value = "\"" + std::string(eviction_policy_name(defaults.*f)) + "\"";
                 },
                 [&](std::vector<std::string> Config::*f) {
                   doc.values = "array of strings";
                   doc.default_value = nlohmann::json(defaults.*f).dump();
                 },
             },
             key.field);
  return doc;
}

// Reads every key of the table from `object`; keys neither in it nor in `nested` are warnings.
template <class Config, size_t N>
void read_object(const nlohmann::json& object, std::string_view source, const std::string& prefix,
                 const ConfigKey<Config> (&keys)[N], const std::vector<std::string>& nested,
                 Config& config, std::vector<std::string>* warnings) {
  KeyReader reader(object, source, prefix);
  for (const ConfigKey<Config>& key : keys) read_key(reader, key, config);
  for (const auto& [name, value] : object.items()) {
    const bool known = std::any_of(std::begin(keys), std::end(keys),
                                   [&](const ConfigKey<Config>& k) { return name == k.name; }) ||
                       std::find(nested.begin(), nested.end(), name) != nested.end();
    if (!known) {
      warnings->push_back(std::string(source) + ": unknown key " + prefix + name + " ignored");
    }
  }
}

// A file the server will read at start: it must be there and readable now.
void require_readable_file(const KeyReader& reader, const std::string& key,
                           const std::string& path) {
  std::error_code error;
  if (!std::filesystem::is_regular_file(path, error)) {
    reader.fail(key, "names \"" + path + "\", which is not a file");
  }
  if (!std::ifstream(path).good()) {
    reader.fail(key, "names \"" + path + "\", which cannot be read: " + std::strerror(errno));
  }
}

void validate_tls(const KeyReader& reader, const SharedTierConfig& c) {
  const std::pair<const char*, const std::string*> files[] = {{"tls_ca_file", &c.tls_ca_file},
                                                              {"tls_cert_file", &c.tls_cert_file},
                                                              {"tls_key_file", &c.tls_key_file}};
  for (const auto& [key, value] : files) {
    if (value->empty()) continue;
    if (!c.tls) reader.fail(key, "is set but tls is false (set \"tls\": true to use TLS)");
    require_readable_file(reader, key, *value);
  }
  if (!c.tls_server_name.empty() && !c.tls) {
    reader.fail("tls_server_name", "is set but tls is false (set \"tls\": true to use TLS)");
  }
  if (!c.tls_cert_file.empty() && c.tls_key_file.empty()) {
    reader.fail("tls_cert_file", "needs tls_key_file too (the client certificate's key)");
  }
  if (!c.tls_key_file.empty() && c.tls_cert_file.empty()) {
    reader.fail("tls_key_file", "needs tls_cert_file too (the key's client certificate)");
  }
  const std::string& name = c.tls_server_name;
  if (std::any_of(name.begin(), name.end(),
                  [](unsigned char ch) { return std::isspace(ch) || !std::isprint(ch); })) {
    reader.fail("tls_server_name", "must be a host name, got \"" + name + "\"");
  }
}

// What the key table's types and ranges cannot say about the shared block.
void validate_shared(const KeyReader& reader, const SharedTierConfig& c) {
  if (c.backend != "redis-cluster") {
    reader.fail("backend", "must be \"redis-cluster\", got \"" + c.backend + "\"");
  }
  if (c.nodes.empty()) reader.fail("nodes", "is required (\"host:port\" of the cluster's nodes)");
  for (const std::string& node : c.nodes) {
    const size_t colon = node.rfind(':');
    bool ok = colon != std::string::npos && colon > 0 && colon + 1 < node.size();
    for (size_t i = colon + 1; ok && i < node.size(); ++i)
      ok = std::isdigit((unsigned char)node[i]);
    if (ok) {
      const long port = std::stol(node.substr(colon + 1, 6));
      ok = port > 0 && port < 65536;
    }
    if (!ok) reader.fail("nodes", "must hold \"host:port\" addresses, got \"" + node + "\"");
  }
  validate_tls(reader, c);
  if (!c.username_env.empty() && c.password_env.empty()) {
    reader.fail("username_env", "needs password_env too (an ACL user logs in with a password)");
  }
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

  read_object(cache, source, "cache.", kCacheKeys, {"shared"}, parsed.config, &parsed.warnings);
  auto shared = cache.find("shared");
  if (shared != cache.end()) {
    if (!shared->is_object())
      throw Error(std::string(source) + ": cache.shared must be a JSON object");
    SharedTierConfig& config = parsed.config.shared;
    read_object(*shared, source, "cache.shared.", kSharedKeys, {}, config, &parsed.warnings);
    validate_shared(KeyReader(*shared, source, "cache.shared."), config);
    config.enabled = true;
  }
  return parsed;
}

std::vector<ConfigKeyDoc> cache_config_keys() {
  const CacheConfig defaults = CacheConfig::defaults();
  std::vector<ConfigKeyDoc> docs;
  for (const CacheKey& key : kCacheKeys) docs.push_back(document(key, defaults, "cache."));
  for (const SharedKey& key : kSharedKeys) {
    docs.push_back(document(key, defaults.shared, "cache.shared."));
  }
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
