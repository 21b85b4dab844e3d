// The Redis client over TLS, against a real 3-master cluster that speaks TLS only (clients and
// cluster bus), with the throwaway CA tests/e2e/shared/redis_cluster.sh makes.
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>

#include "redis/redis_cluster.h"
#include "redis_cluster_fixture.h"

namespace qmlx {
namespace {

using Clock = std::chrono::steady_clock;
using test::shared_tls_cluster;

// GET through a client with these options: the status, and how long it took.
Status try_get(const RedisClusterOptions& options, Clock::duration* took = nullptr) {
  RedisCluster cluster(options);
  const auto start = Clock::now();
  RedisResult r = cluster.run_one({{"GET", "tls-probe"}});
  if (took != nullptr) *took = Clock::now() - start;
  return r.status;
}

TEST(RedisTlsTest, AnUntrustedCaFailsClearlyWithinTheTimeout) {
  QMLX_REQUIRE_REDIS_TLS();
  RedisClusterOptions o = shared_tls_cluster().client_options(500);
  o.tls.ca_file = shared_tls_cluster().tls_file("other-ca.crt");
  Clock::duration took{};
  const Status s = try_get(o, &took);
  EXPECT_EQ(s.code(), Status::Code::kIOError);
  EXPECT_NE(s.message().find("certificate is not valid"), std::string::npos) << s.ToString();
  EXPECT_NE(s.message().find("tls_ca_file"), std::string::npos) << s.ToString();
  EXPECT_LT(took, std::chrono::milliseconds(1500));
}

TEST(RedisTlsTest, TheServerNameIsChecked) {
  QMLX_REQUIRE_REDIS_TLS();
  // The nodes' certificate names 127.0.0.1, localhost and redis.test.
  RedisClusterOptions o = shared_tls_cluster().client_options(500);
  o.tls.server_name = "redis.test";
  Status s = try_get(o);
  EXPECT_TRUE(s.ok()) << s.ToString();
  o.tls.server_name = "other.test";
  Clock::duration took{};
  s = try_get(o, &took);
  EXPECT_EQ(s.code(), Status::Code::kIOError);
  EXPECT_NE(s.message().find("not valid for \"other.test\""), std::string::npos) << s.ToString();
  EXPECT_NE(s.message().find("mismatch"), std::string::npos) << s.ToString();
  EXPECT_LT(took, std::chrono::milliseconds(1500));
  // Without a server name the node's address is checked: "localhost" is in the certificate.
  o = shared_tls_cluster().client_options(500);
  for (std::string& seed : o.seeds) seed.replace(0, seed.rfind(':'), "localhost");
  RedisCluster by_name(o);
  EXPECT_TRUE(by_name.refresh_topology().ok());
}

TEST(RedisTlsTest, AuthWithAnAclUserOverTls) {
  QMLX_REQUIRE_REDIS_TLS();
  auto& local = shared_tls_cluster();
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(local.cli(i, "acl setuser qmlx-tls on '>tls-secret' '~*' '+@all'"), "OK\n");
  }
  RedisClusterOptions o = local.client_options();
  o.username = "qmlx-tls";
  o.password = "tls-secret";
  RedisCluster cluster(o);
  RedisResult set = cluster.run_one({{"SET", "tls-auth-key", "over tls"}});
  ASSERT_TRUE(set.status.ok()) << set.status.ToString();
  EXPECT_EQ(set.str(), "OK");
  EXPECT_EQ(cluster.run_one({{"GET", "tls-auth-key"}}).str(), "over tls");
  o.password = "wrong";
  const Status s = try_get(o);
  EXPECT_NE(s.message().find("AUTH failed"), std::string::npos) << s.ToString();
}

TEST(RedisTlsTest, AClientCertificateIsPresented) {
  QMLX_REQUIRE_REDIS_TLS();
  auto& local = shared_tls_cluster();
  RedisClusterOptions o = local.client_options(500);
  o.tls.cert_file = local.tls_file("client.crt");
  o.tls.key_file = local.tls_file("client.key");
  Status s = try_get(o);
  EXPECT_TRUE(s.ok()) << s.ToString();
  // A certificate of a CA the nodes do not trust is refused by them (tls-auth-clients optional
  // verifies any certificate a client presents).
  o.tls.cert_file = local.tls_file("other-client.crt");
  o.tls.key_file = local.tls_file("other-client.key");
  s = try_get(o);
  EXPECT_EQ(s.code(), Status::Code::kIOError);
}

TEST(RedisTlsTest, BadTlsFilesAreClearErrorsBeforeAnyConnection) {
  QMLX_REQUIRE_REDIS_TLS();
  auto& local = shared_tls_cluster();
  test::RedisTestDir dir;
  const std::string not_pem = dir.path() + "/not.pem";
  std::ofstream(not_pem) << "not a certificate\n";
  struct Case {
    std::string ca, cert, key, expected;
  };
  const std::vector<Case> cases = {
      {not_pem, "", "", "tls_ca_file " + not_pem},
      {"", not_pem, local.tls_file("client.key"), "tls_cert_file " + not_pem},
      {"", local.tls_file("client.crt"), not_pem, "tls_key_file " + not_pem},
      {"", local.tls_file("client.crt"), local.tls_file("other-client.key"),
       "is not the key of tls_cert_file"},
  };
  for (const Case& c : cases) {
    RedisClusterOptions o = local.client_options();
    if (!c.ca.empty()) o.tls.ca_file = c.ca;
    o.tls.cert_file = c.cert;
    o.tls.key_file = c.key;
    RedisCluster cluster(o);
    EXPECT_EQ(cluster.setup_status().code(), Status::Code::kInvalidArgument) << c.expected;
    EXPECT_NE(cluster.setup_status().message().find(c.expected), std::string::npos)
        << cluster.setup_status().ToString();
    const Status s = cluster.run_one({{"GET", "k"}}).status;
    EXPECT_EQ(s.message(), cluster.setup_status().message());
  }
}

TEST(RedisTlsTest, APlainClientOnATlsPortFailsWithinTheTimeout) {
  QMLX_REQUIRE_REDIS_TLS();
  RedisClusterOptions o = shared_tls_cluster().client_options(500);
  o.tls = {};
  Clock::duration took{};
  const Status s = try_get(o, &took);
  EXPECT_EQ(s.code(), Status::Code::kIOError) << s.ToString();
  EXPECT_LT(took, std::chrono::milliseconds(2500));
}

}  // namespace
}  // namespace qmlx
