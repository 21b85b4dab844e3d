#include "redis/redis_cluster.h"

#include <gtest/gtest.h>

#include <chrono>
#include <set>
#include <string>

#include "redis_cluster_fixture.h"

namespace qmlx {
namespace {

using test::shared_cluster;

// A key whose slot is `slot` (searched, since the slot is a hash of the key).
std::string key_in_slot(uint16_t slot, const std::string& stem) {
  for (int i = 0;; ++i) {
    std::string key = stem + std::to_string(i);
    if (RedisCluster::key_slot(key) == slot) return key;
  }
}

TEST(RedisClusterTest, KeySlotIsCrc16OfTheHashTag) {
  // Reference values from the Redis Cluster specification and `CLUSTER KEYSLOT`.
  EXPECT_EQ(RedisCluster::key_slot("123456789"), 0x31C3 % 16384);
  EXPECT_EQ(RedisCluster::key_slot("foo"), 12182);
  EXPECT_EQ(RedisCluster::key_slot("{user1000}.following"),
            RedisCluster::key_slot("{user1000}.followers"));
  EXPECT_EQ(RedisCluster::key_slot("{user1000}.following"), RedisCluster::key_slot("user1000"));
  // An empty tag is no tag: the whole key is hashed.
  EXPECT_EQ(RedisCluster::key_slot("foo{}{bar}"), RedisCluster::key_slot("foo{}{bar}"));
  EXPECT_NE(RedisCluster::key_slot("foo{}{bar}"), RedisCluster::key_slot("bar"));
}

TEST(RedisClusterTest, KeySlotAgreesWithTheServer) {
  QMLX_REQUIRE_REDIS();
  for (const std::string key : {"a", "qmlx:{abc:chunks/01/x.kv}", "{t}1", "zz{q}", "{}x"}) {
    const std::string out = shared_cluster().cli(0, "cluster keyslot '" + key + "'");
    EXPECT_EQ(std::stoi(out), RedisCluster::key_slot(key)) << key;
  }
}

TEST(RedisClusterTest, RoutesPipelinedCommandsToEveryMaster) {
  QMLX_REQUIRE_REDIS();
  RedisCluster cluster(test::options_for_seeds({shared_cluster().nodes().front()}, 1000));
  EXPECT_EQ(cluster.masters().size(), 3u);
  std::vector<std::string> keys, values;
  for (int i = 0; i < 60; ++i) {
    keys.push_back("route-test-" + std::to_string(i));
    values.push_back("value-" + std::to_string(i * 7));
  }
  std::vector<RedisCommand> sets, gets;
  for (size_t i = 0; i < keys.size(); ++i) {
    sets.push_back({{"SET", keys[i], values[i]}});
    gets.push_back({{"GET", keys[i]}});
  }
  for (const RedisResult& r : cluster.run(sets)) {
    ASSERT_TRUE(r.status.ok()) << r.status.ToString();
    EXPECT_EQ(r.str(), "OK");
  }
  std::vector<RedisResult> results = cluster.run(gets);
  for (size_t i = 0; i < keys.size(); ++i) EXPECT_EQ(results[i].str(), values[i]);
  // The keys really are spread: every master holds some of them.
  for (const std::string& node : cluster.masters()) {
    RedisResult count = cluster.run_on_node(node, {"DBSIZE"});
    ASSERT_TRUE(count.status.ok());
    EXPECT_GT(count.integer(), 0) << node;
  }
}

// Node 0's and node 1's ids and the first and last slot of node 0's first range, from the
// cluster itself.
struct SlotPlan {
  std::string from_id, to_id;
  int first_slot = -1, last_slot = -1;
};

SlotPlan plan_slots(const test::LocalRedisCluster& local) {
  SlotPlan plan;
  std::istringstream lines(local.cli(0, "cluster nodes"));
  for (std::string line; std::getline(lines, line);) {
    std::istringstream fields(line);
    std::string id, address, flags, master, ping, pong, epoch, state, slots;
    fields >> id >> address >> flags >> master >> ping >> pong >> epoch >> state >> slots;
    if (address.starts_with(local.nodes()[0] + "@")) {
      plan.from_id = id;
      const size_t dash = slots.find('-');
      plan.first_slot = std::stoi(slots.substr(0, dash));
      plan.last_slot =
          dash == std::string::npos ? plan.first_slot : std::stoi(slots.substr(dash + 1));
    } else if (address.starts_with(local.nodes()[1] + "@")) {
      plan.to_id = id;
    }
  }
  return plan;
}

TEST(RedisClusterTest, FollowsMovedAfterASlotMigrates) {
  QMLX_REQUIRE_REDIS();
  auto& local = shared_cluster();
  RedisCluster cluster(local.client_options());
  const SlotPlan plan = plan_slots(local);
  ASSERT_GE(plan.first_slot, 0);
  const int first_slot = plan.first_slot;
  const std::string key = key_in_slot(uint16_t(first_slot), "moved-");
  ASSERT_TRUE(cluster.run_one({{"SET", key, "before the move"}}).status.ok());
  // Moves the slot (and its key) to node 1 behind the client's back.
  const std::string reshard =
      local.cli(0, "--cluster reshard " + local.nodes()[0] + " --cluster-from " + plan.from_id +
                       " --cluster-to " + plan.to_id + " --cluster-slots 1 --cluster-yes");
  ASSERT_NE(local.cli(1, "cluster countkeysinslot " + std::to_string(first_slot)), "0\n")
      << reshard;
  RedisResult moved = cluster.run_one({{"GET", key}});
  ASSERT_TRUE(moved.status.ok()) << moved.status.ToString();
  EXPECT_EQ(moved.str(), "before the move");
  ASSERT_TRUE(cluster.run_one({{"SET", key, "after the move"}}).status.ok());
  EXPECT_EQ(local.cli(1, "get " + key), "after the move\n");
}

// While a slot migrates, its old owner answers ASK for keys it no longer has; the client must
// ask the new owner with ASKING first, for this command only (both the pipelined run() path and
// the zero-copy transfer path).
TEST(RedisClusterTest, FollowsAskWhileASlotIsMigrating) {
  QMLX_REQUIRE_REDIS();
  auto& local = shared_cluster();
  const SlotPlan plan = plan_slots(local);
  ASSERT_GE(plan.last_slot, 0);
  const std::string slot = std::to_string(plan.last_slot);
  ASSERT_EQ(local.cli(1, "cluster setslot " + slot + " importing " + plan.from_id), "OK\n");
  ASSERT_EQ(local.cli(0, "cluster setslot " + slot + " migrating " + plan.to_id), "OK\n");
  RedisCluster cluster(local.client_options());
  const std::string key = key_in_slot(uint16_t(plan.last_slot), "ask-");
  RedisResult set = cluster.run_one({{"SET", key, "written during the migration"}});
  ASSERT_TRUE(set.status.ok()) << set.status.ToString();
  EXPECT_EQ(set.str(), "OK");
  // It landed on the importing node, which does not own the slot yet.
  EXPECT_EQ(local.cli(1, "cluster countkeysinslot " + slot), "1\n");
  EXPECT_EQ(local.cli(0, "cluster countkeysinslot " + slot), "0\n");
  RedisResult get = cluster.run_one({{"GET", key}});
  ASSERT_TRUE(get.status.ok()) << get.status.ToString();
  EXPECT_EQ(get.str(), "written during the migration");

  const std::string big_key = key_in_slot(uint16_t(plan.last_slot), "ask-big-");
  std::string value(200000, '\0');
  for (size_t i = 0; i < value.size(); ++i) value[i] = char(i * 13);
  std::vector<TransferResult> put = cluster.transfer({{{"SET", big_key, value}, {}}});
  ASSERT_TRUE(put.front().status.ok()) << put.front().status.ToString();
  EXPECT_EQ(put.front().reply.text, "OK");
  std::vector<uint8_t> back(value.size());
  std::vector<TransferResult> read = cluster.transfer({{{"GET", big_key}, back}});
  ASSERT_TRUE(read.front().status.ok()) << read.front().status.ToString();
  EXPECT_EQ(read.front().reply.kind, RespKind::kBulk);
  EXPECT_EQ(std::string(back.begin(), back.end()), value);
  EXPECT_EQ(local.cli(1, "cluster countkeysinslot " + slot), "2\n");

  // Ends the migration: node 1 owns the slot, as every node is told.
  for (int i = 0; i < 3; ++i) local.cli(i, "cluster setslot " + slot + " node " + plan.to_id);
  RedisResult after = cluster.run_one({{"GET", key}});
  ASSERT_TRUE(after.status.ok()) << after.status.ToString();
  EXPECT_EQ(after.str(), "written during the migration");
}

TEST(RedisClusterTest, AuthFailureIsAClearError) {
  QMLX_REQUIRE_REDIS();
  RedisCluster cluster(test::options_for_seeds(shared_cluster().nodes(), 1000, "not-the-password"));
  RedisResult r = cluster.run_one({{"GET", "k"}});
  EXPECT_FALSE(r.status.ok());
  EXPECT_NE(r.status.message().find("AUTH"), std::string::npos) << r.status.ToString();
}

TEST(RedisClusterTest, UnreachableNodeFailsWithinTheTimeout) {
  // A port nothing listens on: refused at once; the whole call stays well under a second.
  RedisCluster cluster(test::options_for_seeds({"127.0.0.1:1"}, 200));
  const auto start = std::chrono::steady_clock::now();
  RedisResult r = cluster.run_one({{"GET", "k"}});
  EXPECT_FALSE(r.status.ok());
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1));
}

}  // namespace
}  // namespace qmlx
