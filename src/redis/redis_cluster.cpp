#include "redis/redis_cluster.h"

#include <algorithm>
#include <map>

#include "redis/socket_stream.h"

namespace qmlx {
namespace {

constexpr size_t kSlots = 16384;
// Redirects one command may follow before the batch gives up on it (a cluster resharding
// under our feet moves a slot once or twice, not in a loop).
constexpr int kMaxRedirects = 5;
// A failed node or a MOVED makes the slot map stale; it is re-read at most this often so a dead
// node does not cost every call a CLUSTER SLOTS round trip on top of its own timeout.
constexpr auto kRefreshInterval = std::chrono::milliseconds(500);
constexpr const char* kBreakerOpen = "redis: circuit breaker open for ";
// Commands of a transfer in flight on one connection (see transfer_round).
constexpr size_t kTransferWindow = 2;

// CRC16-CCITT (XMODEM), the checksum Redis Cluster hashes keys with.
uint16_t crc16(std::string_view bytes) {
  uint16_t crc = 0;
  for (unsigned char byte : bytes) {
    crc ^= uint16_t(byte) << 8;
    for (int bit = 0; bit < 8; ++bit)
      crc = (crc & 0x8000) ? uint16_t((crc << 1) ^ 0x1021) : uint16_t(crc << 1);
  }
  return crc;
}

bool split_address(const std::string& address, std::string* host, int* port) {
  const size_t colon = address.rfind(':');
  if (colon == std::string::npos || colon == 0) return false;
  *host = address.substr(0, colon);
  try {
    size_t used = 0;
    *port = std::stoi(address.substr(colon + 1), &used);
    return used == address.size() - colon - 1 && *port > 0 && *port < 65536;
  } catch (const std::exception&) {
    return false;
  }
}

// A failure of the stream or the protocol on a node's connection, named after the node.
Status node_error(const std::string& node, const Status& s) {
  return Status::IOError("redis " + node + ": " + s.message());
}

// "MOVED 3999 127.0.0.1:6381" or "ASK 3999 127.0.0.1:6381": the node to retry on.
bool parse_redirect(std::string_view error, bool* ask, uint16_t* slot, std::string* node) {
  std::string_view rest;
  if (error.starts_with("MOVED ")) {
    *ask = false;
    rest = error.substr(6);
  } else if (error.starts_with("ASK ")) {
    *ask = true;
    rest = error.substr(4);
  } else {
    return false;
  }
  const size_t space = rest.find(' ');
  if (space == std::string_view::npos) return false;
  try {
    *slot = uint16_t(std::stoul(std::string(rest.substr(0, space))) % kSlots);
  } catch (const std::exception&) {
    return false;
  }
  *node = std::string(rest.substr(space + 1));
  return !node->empty();
}

}  // namespace

// One node's connection: the stream and the reader that keeps its unread bytes.
struct RedisCluster::Connection {
  explicit Connection(std::unique_ptr<ByteStream> s) : stream(std::move(s)), reader(*stream) {}
  std::unique_ptr<ByteStream> stream;
  RespReader reader;

  // Sends one command and reads its reply.
  Status call(const std::vector<std::string_view>& args, RespReply* reply) {
    Status s = resp_write_commands(*stream, {args});
    return s.ok() ? reader.read({}, reply) : s;
  }
};

struct RedisCluster::Lane {
  std::map<std::string, std::unique_ptr<Connection>> connections;
};

RedisCluster::RedisCluster(RedisClusterOptions options)
    : options_(std::move(options)), slot_nodes_(kSlots), known_nodes_(options_.seeds) {
  if (options_.tls.enabled) setup_status_ = TlsContext::create(options_.tls, &tls_);
}

RedisCluster::~RedisCluster() = default;

uint16_t RedisCluster::key_slot(std::string_view key) {
  const size_t open = key.find('{');
  if (open != std::string_view::npos) {
    const size_t close = key.find('}', open + 1);
    if (close != std::string_view::npos && close > open + 1) {
      key = key.substr(open + 1, close - open - 1);
    }
  }
  return uint16_t(crc16(key) % kSlots);
}

std::unique_ptr<RedisCluster::Lane> RedisCluster::checkout() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (idle_.empty()) return std::make_unique<Lane>();
  std::unique_ptr<Lane> lane = std::move(idle_.back());
  idle_.pop_back();
  return lane;
}

void RedisCluster::checkin(std::unique_ptr<Lane> lane) {
  std::lock_guard<std::mutex> lock(mutex_);
  idle_.push_back(std::move(lane));
}

// Opens (or reuses) the lane's connection to a node: connect (timeout), the TLS handshake when
// configured, then AUTH.
RedisCluster::Connection* RedisCluster::connection(Lane& lane, const std::string& node,
                                                   Status* status) {
  auto it = lane.connections.find(node);
  if (it != lane.connections.end()) return it->second.get();
  if (!setup_status_.ok()) {
    *status = setup_status_;
    return nullptr;
  }
  std::string host;
  int port = 0;
  if (!split_address(node, &host, &port)) {
    *status = Status::InvalidArgument("redis: bad node address \"" + node + "\"");
    return nullptr;
  }
  std::unique_ptr<SocketStream> socket;
  Status s = SocketStream::connect(host, port, options_.timeout_ms, &socket);
  std::unique_ptr<ByteStream> stream;
  if (s.ok() && tls_) {
    s = tls_->handshake(std::move(socket), host, &stream);
  } else {
    stream = std::move(socket);
  }
  if (!s.ok()) {
    *status = node_error(node, s);
    mark_topology_stale();
    return nullptr;
  }
  auto conn = std::make_unique<Connection>(std::move(stream));
  if (!options_.password.empty()) {
    std::vector<std::string_view> args{"AUTH"};
    if (!options_.username.empty()) args.push_back(options_.username);
    args.push_back(options_.password);
    RespReply reply;
    s = conn->call(args, &reply);
    if (!s.ok()) {
      *status = node_error(node, s);
      return nullptr;
    }
    if (reply.kind == RespKind::kError) {
      *status = Status::InvalidArgument("redis " + node + ": AUTH failed: " + reply.text);
      return nullptr;
    }
  }
  Connection* raw = conn.get();
  lane.connections[node] = std::move(conn);
  return raw;
}

void RedisCluster::mark_topology_stale() {
  std::lock_guard<std::mutex> lock(mutex_);
  topology_stale_ = true;
}

std::string RedisCluster::node_of_slot(uint16_t slot) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!slot_nodes_[slot].empty()) return slot_nodes_[slot];
  return known_nodes_.empty() ? std::string() : known_nodes_.front();
}

void RedisCluster::ensure_topology() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto now = std::chrono::steady_clock::now();
    if (!topology_stale_ || now - last_refresh_ < kRefreshInterval) return;
    last_refresh_ = now;
  }
  refresh_topology();
}

Status RedisCluster::refresh_topology() {
  std::vector<std::string> candidates;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    last_refresh_ = std::chrono::steady_clock::now();
    candidates = known_nodes_;
  }
  for (const std::string& seed : options_.seeds) {
    if (std::find(candidates.begin(), candidates.end(), seed) == candidates.end()) {
      candidates.push_back(seed);
    }
  }
  Status last = Status::IOError("redis: no node to ask for the slot map");
  for (const std::string& node : candidates) {
    last = read_slots_from(node);
    if (last.ok()) return last;
  }
  return last;
}

Status RedisCluster::read_slots_from(const std::string& node) {
  Lane lane;  // a private connection: the pooled lanes may be busy
  Status s;
  Connection* conn = connection(lane, node, &s);
  if (conn == nullptr) return s;
  RespReply reply;
  s = conn->call({"CLUSTER", "SLOTS"}, &reply);
  if (!s.ok()) return node_error(node, s);
  if (reply.kind != RespKind::kArray) {
    return Status::IOError("redis " + node + ": CLUSTER SLOTS: " +
                           (reply.kind == RespKind::kError ? reply.text : "unexpected reply"));
  }
  std::string host;
  int port = 0;
  split_address(node, &host, &port);
  std::vector<std::string> slots(kSlots);
  std::vector<std::string> nodes;
  // Each range: [first slot, last slot, [master ip, port, id...], replicas...]; ranges of
  // another shape are skipped.
  for (const RespReply& range : reply.elements) {
    if (range.kind != RespKind::kArray || range.elements.size() < 3) continue;
    const RespReply& master = range.elements[2];
    if (range.elements[0].kind != RespKind::kInteger ||
        range.elements[1].kind != RespKind::kInteger || master.kind != RespKind::kArray ||
        master.elements.size() < 2 || master.elements[0].kind != RespKind::kBulk ||
        master.elements[1].kind != RespKind::kInteger) {
      continue;
    }
    const std::string& ip = master.elements[0].text;
    const std::string address =
        (ip.empty() || ip == "?" ? host : ip) + ":" + std::to_string(master.elements[1].integer);
    const long long first = range.elements[0].integer;
    const long long last = range.elements[1].integer;
    for (long long slot = std::max(0LL, first); slot <= last && slot < (long long)kSlots; ++slot) {
      slots[size_t(slot)] = address;
    }
    if (std::find(nodes.begin(), nodes.end(), address) == nodes.end()) nodes.push_back(address);
  }
  if (nodes.empty()) return Status::IOError("redis " + node + ": the cluster has no slots");
  std::lock_guard<std::mutex> lock(mutex_);
  slot_nodes_ = std::move(slots);
  known_nodes_ = std::move(nodes);
  topology_stale_ = false;
  return Status::Ok();
}

CircuitBreaker& RedisCluster::breaker(const std::string& node) {
  std::lock_guard<std::mutex> lock(mutex_);
  std::unique_ptr<CircuitBreaker>& b = breakers_[node];
  if (!b) {
    b = std::make_unique<CircuitBreaker>(options_.breaker_failures,
                                         std::chrono::milliseconds(options_.breaker_cooldown_ms));
  }
  return *b;
}

bool RedisCluster::any_breaker_open() const {
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& [node, b] : breakers_) {
    if (b->is_open()) return true;
  }
  return false;
}

uint64_t RedisCluster::breaker_opens() const {
  std::lock_guard<std::mutex> lock(mutex_);
  uint64_t opens = 0;
  for (const auto& [node, b] : breakers_) opens += b->opens();
  return opens;
}

std::vector<std::string> RedisCluster::masters() {
  ensure_topology();
  std::lock_guard<std::mutex> lock(mutex_);
  return known_nodes_;
}

void RedisCluster::send_round(Lane& lane, const std::vector<RedisCommand>& commands,
                              const std::vector<Pending>& round, std::vector<RedisResult>& results,
                              std::vector<Pending>* redirected) {
  std::map<std::string, std::vector<const Pending*>> by_node;
  for (const Pending& p : round) by_node[p.node].push_back(&p);

  // Write every node's pipeline first, so the nodes work in parallel while we read.
  std::vector<std::pair<Connection*, const std::vector<const Pending*>*>> sent;
  for (auto& [node, pendings] : by_node) {
    CircuitBreaker& node_breaker = breaker(node);
    if (!node_breaker.allow()) {
      for (const Pending* p : pendings) {
        results[p->index].status = Status::IOError(std::string(kBreakerOpen) + node);
      }
      continue;
    }
    Status s;
    Connection* conn = connection(lane, node, &s);
    if (conn != nullptr) {
      std::vector<std::vector<std::string_view>> wire;
      for (const Pending* p : pendings) {
        if (p->asking) wire.push_back({"ASKING"});
        wire.push_back(commands[p->index].args);
      }
      s = resp_write_commands(*conn->stream, wire);
      if (!s.ok()) s = node_error(node, s);
    }
    if (!s.ok()) {
      for (const Pending* p : pendings) results[p->index].status = s;
      drop_connection(lane, node);
      node_breaker.record(false);
      continue;
    }
    sent.emplace_back(conn, &pendings);
  }

  for (auto& [conn, pendings] : sent) {
    Status failure;
    for (const Pending* p : *pendings) {
      RedisResult& result = results[p->index];
      if (!failure.ok()) {
        result.status = failure;
        continue;
      }
      RespReply ignored;  // ASKING's +OK
      Status s = p->asking ? conn->reader.read({}, &ignored) : Status::Ok();
      if (s.ok()) s = conn->reader.read({}, &result.reply);
      if (!s.ok()) {
        failure = node_error(p->node, s);
        result.status = failure;
        continue;
      }
      result.status = Status::Ok();
      bool ask = false;
      std::string target;
      if (follow_redirect(result.reply, &ask, &target)) {
        redirected->push_back(Pending{p->index, target, ask});
      }
    }
    breaker(pendings->front()->node).record(failure.ok());
    // A reply nobody asked for means the stream is out of step: start afresh next time.
    if (!failure.ok() || conn->reader.has_leftover())
      drop_connection(lane, pendings->front()->node);
  }
}

bool RedisCluster::follow_redirect(const RespReply& reply, bool* ask, std::string* target) {
  uint16_t slot = 0;
  if (reply.kind != RespKind::kError || !parse_redirect(reply.text, ask, &slot, target)) {
    return false;
  }
  if (!*ask) {  // MOVED: the slot lives there now; ASK is for this command only
    std::lock_guard<std::mutex> lock(mutex_);
    slot_nodes_[slot] = *target;
    topology_stale_ = true;
  }
  return true;
}

// The connection's stream is out of step after a failed read or write: drop it, reconnect later.
void RedisCluster::drop_connection(Lane& lane, const std::string& node) {
  lane.connections.erase(node);
  mark_topology_stale();
}

void RedisCluster::transfer_round(Lane& lane, const std::string& node, bool asking,
                                  const std::vector<TransferCommand>& commands,
                                  const std::vector<size_t>& round,
                                  std::vector<TransferResult>& results,
                                  std::vector<size_t>* redirected, std::string* target, bool* ask) {
  CircuitBreaker& node_breaker = breaker(node);
  if (!node_breaker.allow()) {
    for (size_t i : round) results[i].status = Status::IOError(std::string(kBreakerOpen) + node);
    return;
  }
  Status s;
  Connection* conn = connection(lane, node, &s);
  if (conn == nullptr) {
    for (size_t i : round) results[i].status = s;
    node_breaker.record(false);
    return;
  }
  // At most kTransferWindow commands in flight: the server builds a reply while we read the
  // one before, and never holds the replies of a whole 64 MB round at once (building those
  // costs it fresh memory for every round; a window lets it reuse the last reply's).
  size_t sent = 0;
  auto send_upto = [&](size_t end) {
    std::vector<std::vector<std::string_view>> wire;
    for (; sent < end; ++sent) {
      if (asking) wire.push_back({"ASKING"});
      wire.push_back(commands[round[sent]].args);
    }
    return resp_write_commands(*conn->stream, wire);
  };
  s = send_upto(std::min(round.size(), kTransferWindow));
  RespReader& reader = conn->reader;
  size_t answered = 0;
  for (; s.ok() && answered < round.size(); ++answered) {
    const size_t i = round[answered];
    if (sent < round.size()) s = send_upto(sent + 1);
    if (!s.ok()) break;
    RespReply ignored;
    if (asking) s = reader.read({}, &ignored);
    if (s.ok()) s = reader.read(commands[i].into, &results[i].reply);
    if (!s.ok()) break;
    results[i].status = Status::Ok();
    if (follow_redirect(results[i].reply, ask, target)) redirected->push_back(i);
  }
  if (s.ok() && reader.has_leftover()) s = Status::IOError("reply out of step");
  if (!s.ok()) {
    s = node_error(node, s);
    for (size_t k = answered; k < round.size(); ++k) results[round[k]].status = s;
    drop_connection(lane, node);
  }
  node_breaker.record(s.ok());
}

std::vector<TransferResult> RedisCluster::transfer(const std::vector<TransferCommand>& commands) {
  std::vector<TransferResult> results(commands.size());
  if (commands.empty()) return results;
  uint16_t slot = 0;
  for (size_t i = 0; i < commands.size(); ++i) {
    const bool keyed = commands[i].args.size() >= 2;
    if (!keyed || (i > 0 && key_slot(commands[i].args[1]) != slot)) {
      for (TransferResult& r : results) {
        r.status = Status::InvalidArgument("redis: a transfer's keys must share one slot");
      }
      return results;
    }
    if (i == 0) slot = key_slot(commands[i].args[1]);
  }
  ensure_topology();
  std::string node = node_of_slot(slot);
  if (node.empty()) {
    for (TransferResult& r : results) r.status = Status::IOError("redis: no node known");
    return results;
  }
  std::vector<size_t> round(commands.size());
  for (size_t i = 0; i < round.size(); ++i) round[i] = i;
  bool asking = false;
  std::unique_ptr<Lane> lane = checkout();
  for (int attempt = 0; attempt <= kMaxRedirects && !round.empty(); ++attempt) {
    std::vector<size_t> redirected;
    std::string target;
    bool ask = false;
    transfer_round(*lane, node, asking, commands, round, results, &redirected, &target, &ask);
    round = std::move(redirected);
    node = std::move(target);
    asking = ask;
  }
  for (size_t i : round) {
    results[i].reply = RespReply{};
    results[i].status = Status::IOError("redis: too many redirects");
  }
  checkin(std::move(lane));
  return results;
}

std::vector<RedisResult> RedisCluster::run(const std::vector<RedisCommand>& commands) {
  std::vector<RedisResult> results(commands.size());
  if (commands.empty()) return results;
  ensure_topology();
  std::vector<Pending> round;
  for (size_t i = 0; i < commands.size(); ++i) {
    const RedisCommand& command = commands[i];
    if (command.key_index >= command.args.size()) {
      results[i].status = Status::InvalidArgument("redis: command without a key");
      continue;
    }
    std::string node = node_of_slot(key_slot(command.args[command.key_index]));
    if (node.empty()) {
      results[i].status = Status::IOError("redis: no node known");
      continue;
    }
    round.push_back(Pending{i, std::move(node), false});
  }
  std::unique_ptr<Lane> lane = checkout();
  for (int attempt = 0; attempt <= kMaxRedirects && !round.empty(); ++attempt) {
    std::vector<Pending> redirected;
    send_round(*lane, commands, round, results, &redirected);
    round = std::move(redirected);
  }
  for (const Pending& p : round) {
    results[p.index].reply = RespReply{};
    results[p.index].status = Status::IOError("redis: too many redirects");
  }
  checkin(std::move(lane));
  return results;
}

RedisResult RedisCluster::run_one(const RedisCommand& command) {
  std::vector<RedisResult> results = run({command});
  return std::move(results.front());
}

RedisResult RedisCluster::run_on_node(const std::string& node,
                                      const std::vector<std::string_view>& args) {
  RedisResult result;
  std::unique_ptr<Lane> lane = checkout();
  CircuitBreaker& node_breaker = breaker(node);
  if (!node_breaker.allow()) {
    result.status = Status::IOError(std::string(kBreakerOpen) + node);
  } else if (Connection* conn = connection(*lane, node, &result.status)) {
    Status s = conn->call(args, &result.reply);
    if (!s.ok()) {
      result.status = node_error(node, s);
      drop_connection(*lane, node);
    }
    node_breaker.record(result.status.ok());
  } else {
    node_breaker.record(false);
  }
  checkin(std::move(lane));
  return result;
}

}  // namespace qmlx
