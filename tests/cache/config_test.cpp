#include "cache/config.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <tuple>

#include "base/error.h"

namespace qmlx {
namespace {

using nlohmann::json;

ParsedCacheConfig parse(const json& cache) {
  return parse_cache_config({{"cache", cache}}, "c.json");
}

std::string error_of(const json& cache) {
  try {
    parse(cache);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(CacheConfig, DefaultsAreSensible) {
  ParsedCacheConfig parsed = parse(json::object());
  const CacheConfig& c = parsed.config;
  EXPECT_TRUE(c.memory_prefix_cache);
  EXPECT_TRUE(c.disk_kv_cache);
  EXPECT_TRUE(c.restore_guard_enabled);
  EXPECT_TRUE(c.token_blob_checksum);
  EXPECT_TRUE(c.fsync);
  EXPECT_EQ(c.chunk_tokens, 256);
  EXPECT_EQ(c.prefill_checkpoint_tokens, 4096);
  EXPECT_EQ(c.checkpoint_interval_tokens, 0);
  EXPECT_EQ(c.eviction_policy, EvictionPolicy::kUnmatchableFirst);
  EXPECT_GT(c.low_water_fraction, 0);
  EXPECT_LT(c.low_water_fraction, 1);
  EXPECT_FALSE(c.disk_cache_dir.empty());
  EXPECT_TRUE(parsed.warnings.empty());
}

TEST(CacheConfig, ReadsEveryKey) {
  setenv("HOME", "/home/tester", 1);
  ParsedCacheConfig parsed = parse({{"memory_prefix_cache", false},
                                    {"disk_kv_cache", true},
                                    {"disk_cache_dir", "~/kv"},
                                    {"disk_cache_max_gb", 1.5},
                                    {"checkpoint_interval_tokens", 512},
                                    {"eviction_policy", "lru"},
                                    {"restore_guard_enabled", false},
                                    {"token_blob_checksum", false},
                                    {"chunk_tokens", 128},
                                    {"prefill_checkpoint_tokens", 2048},
                                    {"memory_cache_max_mb", 100},
                                    {"low_water_fraction", 0.5},
                                    {"guard_margin_mb", 10},
                                    {"fsync", false},
                                    {"writer_queue_capacity", 8},
                                    {"edit_point_checkpoints", 2},
                                    {"edit_point_max_mb", 64}});
  const CacheConfig& c = parsed.config;
  EXPECT_FALSE(c.memory_prefix_cache);
  EXPECT_EQ(c.disk_cache_dir, "/home/tester/kv");
  EXPECT_EQ(c.disk_cap_bytes(), uint64_t(1.5 * (1ull << 30)));
  EXPECT_EQ(c.checkpoint_interval_tokens, 512);
  EXPECT_EQ(c.eviction_policy, EvictionPolicy::kLru);
  EXPECT_FALSE(c.restore_guard_enabled);
  EXPECT_FALSE(c.token_blob_checksum);
  EXPECT_EQ(c.chunk_tokens, 128);
  EXPECT_EQ(c.prefill_checkpoint_tokens, 2048);
  EXPECT_EQ(c.memory_cap_bytes(), 100ull << 20);
  EXPECT_EQ(c.low_water_fraction, 0.5);
  EXPECT_EQ(c.guard_margin_bytes(), 10ull << 20);
  EXPECT_FALSE(c.fsync);
  EXPECT_EQ(c.writer_queue_capacity, 8);
  EXPECT_EQ(c.edit_point_checkpoints, 2);
  EXPECT_EQ(c.edit_point_max_bytes(), 64ull << 20);
  EXPECT_TRUE(parsed.warnings.empty());
}

// The documented keys (qmlx cache --help) are exactly the keys ReadsEveryKey sets.
TEST(CacheConfig, DocumentedKeysAreTheKeysItReads) {
  std::vector<std::string> documented;
  for (const ConfigKeyDoc& key : cache_config_keys()) documented.push_back(key.name);
  EXPECT_EQ(documented, (std::vector<std::string>{"cache.memory_prefix_cache",
                                                  "cache.disk_kv_cache",
                                                  "cache.disk_cache_dir",
                                                  "cache.disk_cache_max_gb",
                                                  "cache.checkpoint_interval_tokens",
                                                  "cache.eviction_policy",
                                                  "cache.restore_guard_enabled",
                                                  "cache.token_blob_checksum",
                                                  "cache.chunk_tokens",
                                                  "cache.prefill_checkpoint_tokens",
                                                  "cache.memory_cache_max_mb",
                                                  "cache.low_water_fraction",
                                                  "cache.guard_margin_mb",
                                                  "cache.fsync",
                                                  "cache.writer_queue_capacity",
                                                  "cache.edit_point_checkpoints",
                                                  "cache.edit_point_max_mb",
                                                  "cache.shared.backend",
                                                  "cache.shared.nodes",
                                                  "cache.shared.password_env",
                                                  "cache.shared.username_env",
                                                  "cache.shared.tls",
                                                  "cache.shared.tls_ca_file",
                                                  "cache.shared.tls_cert_file",
                                                  "cache.shared.tls_key_file",
                                                  "cache.shared.tls_server_name",
                                                  "cache.shared.timeout_ms",
                                                  "cache.shared.read",
                                                  "cache.shared.write",
                                                  "cache.shared.part_mb",
                                                  "cache.shared.ttl_seconds",
                                                  "cache.shared.breaker_failures",
                                                  "cache.shared.breaker_cooldown_ms"}));
  for (const ConfigKeyDoc& key : cache_config_keys()) {
    EXPECT_FALSE(key.values.empty() || key.default_value.empty() || key.help.empty()) << key.name;
  }
  EXPECT_EQ(cache_config_keys()[8].values, "integer in [16, 65536]");
  EXPECT_EQ(cache_config_keys()[8].default_value, "256");
  EXPECT_EQ(cache_config_keys()[11].values, "number in (0, 1]");
  EXPECT_EQ(cache_config_keys()[11].default_value, "0.8");
}

TEST(CacheConfig, EveryBadValueNamesItsKey) {
  const std::vector<std::pair<std::string, json>> bad = {{"memory_prefix_cache", "yes"},
                                                         {"disk_kv_cache", 1},
                                                         {"disk_cache_dir", ""},
                                                         {"disk_cache_max_gb", 0},
                                                         {"disk_cache_max_gb", "big"},
                                                         {"checkpoint_interval_tokens", -1},
                                                         {"eviction_policy", "fifo"},
                                                         {"restore_guard_enabled", nullptr},
                                                         {"token_blob_checksum", 0},
                                                         {"chunk_tokens", 0},
                                                         {"chunk_tokens", 1.5},
                                                         {"prefill_checkpoint_tokens", -5},
                                                         {"memory_cache_max_mb", -1},
                                                         {"low_water_fraction", 1.5},
                                                         {"low_water_fraction", 0},
                                                         {"guard_margin_mb", "1"},
                                                         {"fsync", "true"},
                                                         {"writer_queue_capacity", 0}};
  for (const auto& [key, value] : bad) {
    std::string message = error_of({{key, value}});
    EXPECT_NE(message.find("cache." + key), std::string::npos) << key << ": " << message;
    EXPECT_NE(message.find("c.json"), std::string::npos) << message;
  }
}

// The block of the issue, exactly as it is written there, plus the keys qmlx adds.
TEST(CacheConfig, SharedBlockReadsEveryKey) {
  ParsedCacheConfig parsed = parse(json::parse(R"({"shared": {
      "backend": "redis-cluster", "nodes": ["127.0.0.1:7000", "127.0.0.1:7001"],
      "password_env": "QMLX_REDIS_PASSWORD", "tls": false, "timeout_ms": 250, "read": true,
      "write": false, "part_mb": 4, "ttl_seconds": 60, "breaker_failures": 5,
      "breaker_cooldown_ms": 100, "username_env": "QMLX_REDIS_USER"}})"));
  const SharedTierConfig& s = parsed.config.shared;
  EXPECT_TRUE(parsed.warnings.empty());
  EXPECT_TRUE(s.enabled);
  EXPECT_EQ(s.nodes, (std::vector<std::string>{"127.0.0.1:7000", "127.0.0.1:7001"}));
  EXPECT_EQ(s.password_env, "QMLX_REDIS_PASSWORD");
  EXPECT_EQ(s.username_env, "QMLX_REDIS_USER");
  EXPECT_EQ(s.timeout_ms, 250);
  EXPECT_TRUE(s.read);
  EXPECT_FALSE(s.write);
  EXPECT_EQ(s.part_bytes(), 4u << 20);
  EXPECT_EQ(s.ttl_seconds, 60);
  EXPECT_EQ(s.breaker_failures, 5);
  EXPECT_EQ(s.breaker_cooldown_ms, 100);
  EXPECT_FALSE(parse(json::object()).config.shared.enabled);
}

TEST(CacheConfig, EveryBadSharedValueNamesItsKey) {
  const json nodes = {"127.0.0.1:7000"};
  const std::vector<std::tuple<std::string, json, std::string>> bad = {
      {"backend", "memcached", "must be \"redis-cluster\""},
      {"nodes", json::array(), "non-empty array"},
      {"nodes", "127.0.0.1:7000", "non-empty array"},
      {"nodes", {""}, "non-empty array"},
      {"nodes", {"localhost"}, "host:port"},
      {"nodes", {"localhost:0"}, "host:port"},
      {"nodes", {"localhost:70000"}, "host:port"},
      {"nodes", {":7000"}, "host:port"},
      {"password_env", "", "non-empty string"},
      {"tls", "no", "true or false"},
      {"timeout_ms", 0, "[1, 60000]"},
      {"timeout_ms", 2.5, "integer"},
      {"read", 1, "true or false"},
      {"write", nullptr, "true or false"},
      {"part_mb", 0, "[1, 512]"},
      {"part_mb", 1024, "[1, 512]"},
      {"ttl_seconds", -1, "must be in"},
      {"breaker_failures", 0, "must be in"},
      {"breaker_cooldown_ms", -1, "must be in"},
      {"username_env", "U", "needs password_env"}};
  for (const auto& [key, value, what] : bad) {
    json shared = {{"nodes", nodes}};
    shared[key] = value;
    const std::string message = error_of({{"shared", shared}});
    EXPECT_NE(message.find("cache.shared." + key), std::string::npos) << key << ": " << message;
    EXPECT_NE(message.find(what), std::string::npos) << key << ": " << message;
  }
  EXPECT_NE(error_of({{"shared", json::object()}}).find("cache.shared.nodes is required"),
            std::string::npos);
  EXPECT_NE(error_of({{"shared", 1}}).find("cache.shared must be a JSON object"),
            std::string::npos);
  ParsedCacheConfig typo = parse({{"shared", {{"nodes", nodes}, {"timeout", 5}}}});
  ASSERT_EQ(typo.warnings.size(), 1u);
  EXPECT_NE(typo.warnings[0].find("cache.shared.timeout"), std::string::npos);
}

// TLS: the keys are read with tls on; each file must exist and be readable at start, a
// certificate needs its key, and no TLS key is accepted with tls off (it would be ignored).
TEST(CacheConfig, TlsKeysAreReadAndEveryBadOneIsAClearError) {
  const std::string dir = ::testing::TempDir();
  const std::string pem = dir + "/qmlx_config_test.pem";
  std::ofstream(pem) << "-----BEGIN CERTIFICATE-----\n";
  const json nodes = {"127.0.0.1:7000"};
  ParsedCacheConfig parsed = parse({{"shared",
                                     {{"nodes", nodes},
                                      {"tls", true},
                                      {"tls_ca_file", pem},
                                      {"tls_cert_file", pem},
                                      {"tls_key_file", pem},
                                      {"tls_server_name", "redis.example.com"}}}});
  const SharedTierConfig& s = parsed.config.shared;
  EXPECT_TRUE(parsed.warnings.empty());
  EXPECT_TRUE(s.tls);
  EXPECT_EQ(s.tls_ca_file, pem);
  EXPECT_EQ(s.tls_cert_file, pem);
  EXPECT_EQ(s.tls_key_file, pem);
  EXPECT_EQ(s.tls_server_name, "redis.example.com");
  EXPECT_TRUE(parse({{"shared", {{"nodes", nodes}, {"tls", true}}}}).config.shared.tls);

  const std::vector<std::tuple<std::string, json, std::string>> bad = {
      {"tls_ca_file", {{"tls_ca_file", pem}}, "is set but tls is false"},
      {"tls_server_name", {{"tls_server_name", "r.test"}}, "is set but tls is false"},
      {"tls_ca_file", {{"tls", true}, {"tls_ca_file", dir + "/absent.pem"}}, "not a file"},
      {"tls_ca_file", {{"tls", true}, {"tls_ca_file", dir}}, "not a file"},
      {"tls_ca_file", {{"tls", true}, {"tls_ca_file", ""}}, "non-empty string"},
      {"tls_cert_file", {{"tls", true}, {"tls_cert_file", pem}}, "needs tls_key_file"},
      {"tls_key_file", {{"tls", true}, {"tls_key_file", pem}}, "needs tls_cert_file"},
      {"tls_server_name", {{"tls", true}, {"tls_server_name", "a b"}}, "must be a host name"},
      {"tls_server_name", {{"tls", true}, {"tls_server_name", 5}}, "non-empty string"}};
  for (const auto& [key, values, what] : bad) {
    json shared = values;
    shared["nodes"] = nodes;
    const std::string message = error_of({{"shared", shared}});
    EXPECT_NE(message.find("cache.shared." + key), std::string::npos) << key << ": " << message;
    EXPECT_NE(message.find(what), std::string::npos) << key << ": " << message;
  }
}

TEST(CacheConfig, UnknownKeysBecomeWarnings) {
  ParsedCacheConfig parsed = parse({{"chunk_tokns", 64}});
  ASSERT_EQ(parsed.warnings.size(), 1u);
  EXPECT_NE(parsed.warnings[0].find("chunk_tokns"), std::string::npos);
  EXPECT_EQ(parsed.config.chunk_tokens, 256);
}

TEST(CacheConfig, MissingCacheObjectWarnsAndNonObjectsFail) {
  EXPECT_EQ(parse_cache_config(json::object(), "c.json").warnings.size(), 1u);
  EXPECT_THROW(parse_cache_config({{"cache", 3}}, "c.json"), Error);
  EXPECT_THROW(parse_cache_config(json::array(), "c.json"), Error);
}

}  // namespace
}  // namespace qmlx
