// RedisCluster: a blocking Redis Cluster client, the transport of the shared cache tier. It
// speaks RESP itself (RespWire) over plain TCP or TLS (ByteStream), routes each command by its
// key's hash slot (CRC16, `{hash tags}`), follows MOVED and ASK redirects, refreshes the slot map
// with CLUSTER SLOTS, keeps one connection per node in each pooled lane (so the writer thread and
// request threads never wait for one another), reconnects after a failure, bounds every connect,
// read and write by a timeout, and sends a batch of commands pipelined: every node's commands are
// written before any reply is read, so a batch costs about one round trip however many nodes it
// touches. Thread-safe. (Own client rather than hiredis: Debian's hiredis 0.14 has no TLS, and
// copies every value.)
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "redis/circuit_breaker.h"
#include "redis/resp_wire.h"
#include "redis/tls_stream.h"

namespace qmlx {

struct RedisClusterOptions {
  std::vector<std::string> seeds;  // "host:port" of any nodes; the rest are discovered
  std::string username;            // ACL user ("" = the default user)
  std::string password;            // "" = no AUTH
  int timeout_ms = 250;            // each connect, and each read or write on a socket
  // A node that failed this many calls in a row is not called for breaker_cooldown_ms (its
  // commands fail at once), so a dead node costs a few timeouts, not one per request.
  int breaker_failures = 3;
  int breaker_cooldown_ms = 5000;
  TlsOptions tls;  // tls.enabled: every connection is TLS (see TlsContext)
};

// One command: its arguments, which the caller keeps alive until run() returns, and the index
// of the argument whose slot routes it.
struct RedisCommand {
  std::vector<std::string_view> args;
  size_t key_index = 1;
};

// The outcome of one command: a transport failure (node down, timeout, redirect loop) in
// status, else the reply, which may itself be a Redis error (kind == RespKind::kError).
struct RedisResult {
  Status status;
  RespReply reply;

  bool is_nil() const { return reply.kind == RespKind::kNil; }
  bool is_error() const { return reply.kind == RespKind::kError; }
  // The reply's string (bulk, status or error), or "" for other types.
  std::string_view str() const { return reply.str(); }
  int64_t integer() const { return reply.kind == RespKind::kInteger ? reply.integer : 0; }
};

// One command of a transfer: its arguments (large ones are sent from the caller's memory) and
// where a bulk-string reply's bytes go (see RespReader::read).
struct TransferCommand {
  std::vector<std::string_view> args;
  std::span<uint8_t> into;
};

using TransferResult = RedisResult;

class RedisCluster {
 public:
  explicit RedisCluster(RedisClusterOptions options);
  ~RedisCluster();
  RedisCluster(const RedisCluster&) = delete;
  RedisCluster& operator=(const RedisCluster&) = delete;

  // The hash slot of a key (0..16383), honouring the first non-empty {hash tag}.
  static uint16_t key_slot(std::string_view key);

  // Runs the commands, pipelined per node, and returns one result per command in order.
  std::vector<RedisResult> run(const std::vector<RedisCommand>& commands);
  RedisResult run_one(const RedisCommand& command);
  // Runs commands whose keys (args[1]) all hash to one slot (a blob's parts and meta) on that
  // slot's node, pipelined (at most two in flight), moving large values without copies: a
  // bulk-string reply lands in its command's `into`. Follows MOVED and ASK like run().
  std::vector<TransferResult> transfer(const std::vector<TransferCommand>& commands);
  // Runs one command on one node (SCAN, DBSIZE, INFO: commands without a key).
  RedisResult run_on_node(const std::string& node, const std::vector<std::string_view>& args);
  // Re-reads the slot map now (normally done on first use, after MOVED and after a node fails).
  Status refresh_topology();
  // "host:port" of every master in the current slot map.
  std::vector<std::string> masters();
  // Whether the options could be set up (the TLS files load): if not, every call fails with it.
  const Status& setup_status() const { return setup_status_; }
  // Whether any node's breaker is open now, and how many times breakers have opened.
  bool any_breaker_open() const;
  uint64_t breaker_opens() const;

 private:
  struct Connection;
  struct Lane;

  std::unique_ptr<Lane> checkout();
  void checkin(std::unique_ptr<Lane> lane);
  Connection* connection(Lane& lane, const std::string& node, Status* status);
  std::string node_of_slot(uint16_t slot);
  CircuitBreaker& breaker(const std::string& node);
  void ensure_topology();
  void mark_topology_stale();
  Status read_slots_from(const std::string& node);
  // One pipelined round of commands[pending[i]] to the nodes in targets[i]; redirected commands
  // are left in *redirected with their new target and whether they need ASKING.
  struct Pending {
    size_t index;
    std::string node;
    bool asking = false;
  };
  void send_round(Lane& lane, const std::vector<RedisCommand>& commands,
                  const std::vector<Pending>& round, std::vector<RedisResult>& results,
                  std::vector<Pending>* redirected);

  // One pipelined round of a transfer: commands[round[i]] on `node`; redirected commands are
  // left in *redirected, with the node to retry on in *target and whether it was an ASK.
  void transfer_round(Lane& lane, const std::string& node, bool asking,
                      const std::vector<TransferCommand>& commands,
                      const std::vector<size_t>& round, std::vector<TransferResult>& results,
                      std::vector<size_t>* redirected, std::string* target, bool* ask);
  void drop_connection(Lane& lane, const std::string& node);
  // Whether a reply is a MOVED or ASK redirect, and where to; a MOVED updates the slot map.
  bool follow_redirect(const RespReply& reply, bool* ask, std::string* target);

  RedisClusterOptions options_;
  std::shared_ptr<TlsContext> tls_;  // null: plain TCP
  Status setup_status_;
  mutable std::mutex mutex_;             // guards the slot map, the idle lanes and the breakers
  std::vector<std::string> slot_nodes_;  // 16384 entries, "" = unknown
  std::vector<std::string> known_nodes_;
  bool topology_stale_ = true;
  std::chrono::steady_clock::time_point last_refresh_{};
  std::vector<std::unique_ptr<Lane>> idle_;
  std::map<std::string, std::unique_ptr<CircuitBreaker>> breakers_;  // by node
};

}  // namespace qmlx
