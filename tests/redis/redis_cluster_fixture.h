// A real 3-master Redis Cluster on loopback for the Redis client's tests and the cache's
// shared-tier tests, started and stopped with tests/e2e/shared/redis_cluster.sh (the e2e tests
// use the same script), speaking plain TCP or TLS only (a throwaway CA the script makes). Tests
// that need one are skipped, with a message, where redis-server is not installed.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "redis/redis_cluster.h"

namespace qmlx::test {

// A fresh empty directory (a cluster's files, a test's own files), removed by the destructor.
class RedisTestDir {
 public:
  RedisTestDir() {
    static std::atomic<int> counter{0};
    const std::string base = std::filesystem::exists("/dev/shm") ? "/dev/shm" : "/tmp";
    path_ =
        base + "/qmlx_redis_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter++);
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~RedisTestDir() { std::filesystem::remove_all(path_); }
  RedisTestDir(const RedisTestDir&) = delete;
  RedisTestDir& operator=(const RedisTestDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

class LocalRedisCluster {
 public:
  explicit LocalRedisCluster(bool tls = false) : tls_(tls) {
    const std::string out = run("start " + dir_.path() + "/cluster 3" + (tls ? " --tls" : ""));
    std::stringstream in(out);
    std::string node;
    while (std::getline(in, node, ',')) {
      while (!node.empty() && (node.back() == '\n' || node.back() == ' ')) node.pop_back();
      if (!node.empty()) nodes_.push_back(node);
    }
  }
  ~LocalRedisCluster() { run("stop " + dir_.path() + "/cluster"); }

  static bool available() { return std::system("command -v redis-server >/dev/null 2>&1") == 0; }

  const std::vector<std::string>& nodes() const { return nodes_; }
  // A file of the TLS cluster's throwaway PKI ("ca.crt", "client.key"...: see the script).
  std::string tls_file(const std::string& name) const {
    return dir_.path() + "/cluster/tls/" + name;
  }
  // Client options for this cluster: TLS trusting its CA where it speaks TLS.
  RedisClusterOptions client_options(int timeout_ms = 1000) const {
    RedisClusterOptions o;
    o.seeds = nodes_;
    o.timeout_ms = timeout_ms;
    if (tls_) {
      o.tls.enabled = true;
      o.tls.ca_file = tls_file("ca.crt");
    }
    return o;
  }
  // Stops node i at once (SIGKILL).
  void kill(int i) { run("kill " + dir_.path() + "/cluster " + std::to_string(i)); }
  // Runs redis-cli against node i (cluster mode: follows redirects) and returns its output.
  std::string cli(int i, const std::string& args) const {
    const std::string port = nodes_.at(size_t(i)).substr(nodes_.at(size_t(i)).rfind(':') + 1);
    const std::string tls = tls_ ? "--tls --cacert " + tls_file("ca.crt") + " " : "";
    return capture("redis-cli " + tls + "-c -p " + port + " " + args + " 2>&1");
  }

 private:
  static std::string capture(const std::string& command) {
    std::string out;
    FILE* pipe = popen(command.c_str(), "r");
    if (pipe == nullptr) return out;
    std::array<char, 4096> buffer;
    size_t n = 0;
    while ((n = fread(buffer.data(), 1, buffer.size(), pipe)) > 0) out.append(buffer.data(), n);
    pclose(pipe);
    return out;
  }
  std::string run(const std::string& args) const {
    return capture(std::string("bash ") + QMLX_REDIS_CLUSTER_SCRIPT + " " + args);
  }

  bool tls_;
  RedisTestDir dir_;
  std::vector<std::string> nodes_;
};

}  // namespace qmlx::test

namespace qmlx::test {

// The cluster most tests share (started on first use, stopped at exit); a test that kills a
// node starts its own.
inline LocalRedisCluster& shared_cluster() {
  static LocalRedisCluster cluster;
  return cluster;
}

// The TLS cluster the TLS tests share (a second one: its start costs a few seconds more).
inline LocalRedisCluster& shared_tls_cluster() {
  static LocalRedisCluster cluster(true);
  return cluster;
}

// n reproducible random bytes (blob contents).
inline std::vector<uint8_t> random_bytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> out(n);
  for (uint8_t& b : out) b = uint8_t(rng());
  return out;
}

// Options for a client of the given seeds (plain TCP).
inline RedisClusterOptions options_for_seeds(std::vector<std::string> seeds, int timeout_ms,
                                             std::string password = "") {
  RedisClusterOptions o;
  o.seeds = std::move(seeds);
  o.password = std::move(password);
  o.timeout_ms = timeout_ms;
  return o;
}

#define QMLX_REQUIRE_REDIS()                                                        \
  if (!::qmlx::test::LocalRedisCluster::available()) {                              \
    GTEST_SKIP() << "redis-server is not installed (scripts/setup.sh installs it)"; \
  }

// The TLS cluster also needs the openssl command (its throwaway CA).
#define QMLX_REQUIRE_REDIS_TLS()                                                           \
  QMLX_REQUIRE_REDIS();                                                                    \
  if (std::system("command -v openssl >/dev/null 2>&1") != 0) {                            \
    GTEST_SKIP() << "the openssl command is not installed (scripts/setup.sh installs it)"; \
  }

}  // namespace qmlx::test
