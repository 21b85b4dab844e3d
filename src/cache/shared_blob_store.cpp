#include "cache/shared_blob_store.h"

#include <algorithm>
#include <cstring>
#include <sstream>

namespace qmlx {
namespace {

using Clock = std::chrono::steady_clock;

// Parts sent or fetched per pipelined round: bounds the replies a node holds for us at once.
constexpr uint64_t kBytesPerRound = 64ull << 20;
constexpr const char* kMetaMagic = "qmlx-blob1";
constexpr const char* kRedisErrorPrefix = "redis error: ";

std::string encode_meta(const std::string& generation, uint64_t parts, uint64_t bytes,
                        uint64_t part_bytes) {
  return std::string(kMetaMagic) + " " + generation + " " + std::to_string(parts) + " " +
         std::to_string(bytes) + " " + std::to_string(part_bytes);
}

bool decode_meta(std::string_view text, std::string* generation, uint64_t* parts, uint64_t* bytes,
                 uint64_t* part_bytes) {
  std::istringstream in{std::string(text)};
  std::string magic;
  if (!(in >> magic >> *generation >> *parts >> *bytes >> *part_bytes)) return false;
  if (magic != kMetaMagic || *part_bytes == 0) return false;
  return *parts == (*bytes + *part_bytes - 1) / *part_bytes;
}

// Runs `command key` for every key, pipelined (one round trip however many nodes they are on).
std::vector<RedisResult> run_per_key(RedisCluster& cluster, std::string_view command,
                                     const std::vector<std::string>& keys) {
  std::vector<RedisCommand> commands;
  for (const std::string& key : keys) commands.push_back({{command, key}});
  return cluster.run(commands);
}

size_t parts_per_round(uint64_t part_bytes) {
  return size_t(std::max<uint64_t>(1, kBytesPerRound / part_bytes));
}

}  // namespace

SharedBlobStore::SharedBlobStore(SharedStoreOptions options)
    : options_(std::move(options)),
      prefix_("qmlx:{" + options_.fingerprint.hex() + ":"),
      ttl_ms_(std::to_string(options_.ttl_seconds * 1000)),
      cluster_(options_.cluster),
      random_(std::random_device{}()) {
  stats_.enabled = true;
}

std::string SharedBlobStore::meta_key(const std::string& name) const {
  return prefix_ + name + "}";
}

std::string SharedBlobStore::part_key(const std::string& name, const std::string& generation,
                                      size_t i) const {
  return meta_key(name) + ":" + generation + ":" + std::to_string(i);
}

std::string SharedBlobStore::new_generation() {
  std::lock_guard<std::mutex> lock(mutex_);
  char text[17];
  std::snprintf(text, sizeof(text), "%016llx", static_cast<unsigned long long>(random_()));
  return text;
}

std::vector<std::string_view> SharedBlobStore::with_ttl(std::vector<std::string_view> args) const {
  if (options_.ttl_seconds > 0) {
    args.push_back("PX");
    args.push_back(ttl_ms_);
  }
  return args;
}

template <class Call>
Status SharedBlobStore::guarded(Call&& call) {
  const auto start = Clock::now();
  Status s = call();
  std::lock_guard<std::mutex> lock(mutex_);
  stats_.call_seconds.observe(std::chrono::duration<double>(Clock::now() - start).count());
  if (!s.ok() && s.code() != Status::Code::kNotFound) {
    const std::string& m = s.message();
    ++stats_.errors[m.starts_with(kRedisErrorPrefix)                      ? "redis"
                    : m.find("circuit breaker open") != std::string::npos ? "breaker_open"
                                                                          : "io"];
  }
  return s;
}

Status SharedBlobStore::check(const RedisResult& result, const std::string& what) {
  if (!result.status.ok()) return result.status;
  if (result.is_error()) {
    return Status::IOError(std::string(kRedisErrorPrefix) + what + ": " +
                           std::string(result.str()));
  }
  return Status::Ok();
}

Status SharedBlobStore::read_meta(const std::string& name, Meta* meta) {
  const std::string key = meta_key(name);
  TransferResult result = std::move(cluster_.transfer({{{"GET", key}, {}}}).front());
  Status s = check(result, name);
  if (!s.ok()) return s;
  if (result.reply.kind == RespKind::kNil) return Status::NotFound("shared: " + name + " absent");
  uint64_t part_bytes = 0;
  if (result.reply.kind != RespKind::kBulk ||
      !decode_meta(result.reply.text, &meta->generation, &meta->parts, &meta->bytes, &part_bytes)) {
    return Status::Corruption("shared: " + name + ": bad meta value");
  }
  meta->part_bytes = part_bytes;
  return Status::Ok();
}

Status SharedBlobStore::put(const std::string& name, std::span<const uint8_t> bytes) {
  return guarded([&]() -> Status {
    const uint64_t part_bytes = options_.part_bytes;
    const std::string generation = new_generation();
    const uint64_t parts = (bytes.size() + part_bytes - 1) / part_bytes;
    const size_t per_round = parts_per_round(part_bytes);
    for (uint64_t first = 0; first < parts; first += per_round) {
      const uint64_t count = std::min<uint64_t>(per_round, parts - first);
      std::vector<std::string> keys;
      for (uint64_t i = 0; i < count; ++i) keys.push_back(part_key(name, generation, first + i));
      std::vector<TransferCommand> commands;
      for (uint64_t i = 0; i < count; ++i) {
        const uint64_t offset = (first + i) * part_bytes;
        const std::string_view part(reinterpret_cast<const char*>(bytes.data()) + offset,
                                    std::min<uint64_t>(part_bytes, bytes.size() - offset));
        commands.push_back({with_ttl({"SET", keys[i], part}), {}});
      }
      for (const TransferResult& result : cluster_.transfer(commands)) {
        Status s = check(result, name);
        if (!s.ok()) return s;
      }
    }
    // The meta last: until it names this generation, readers see the previous blob (or none).
    const std::string key = meta_key(name);
    const std::string meta = encode_meta(generation, parts, bytes.size(), part_bytes);
    std::vector<std::string_view> args = with_ttl({"SET", key, meta});
    args.push_back("GET");
    TransferResult result = std::move(cluster_.transfer({{args, {}}}).front());
    Status s = check(result, name);
    if (!s.ok()) return s;
    std::string old_generation;
    uint64_t old_parts = 0, old_bytes = 0, old_part_bytes = 0;
    if (result.reply.kind == RespKind::kBulk &&
        decode_meta(result.reply.text, &old_generation, &old_parts, &old_bytes, &old_part_bytes) &&
        old_generation != generation) {
      std::vector<std::string> old_keys;
      for (uint64_t i = 0; i < old_parts; ++i)
        old_keys.push_back(part_key(name, old_generation, i));
      std::vector<TransferCommand> unlinks;
      for (const std::string& k : old_keys) unlinks.push_back({{"UNLINK", k}, {}});
      cluster_.transfer(unlinks);  // best effort: a leftover part expires with its TTL
    }
    std::lock_guard<std::mutex> lock(mutex_);
    stats_.bytes_written += bytes.size();
    ++stats_.blobs_written;
    return Status::Ok();
  });
}

Status SharedBlobStore::get(const std::string& name, std::vector<uint8_t>* out) {
  return guarded([&]() -> Status {
    Meta meta;
    Status s = read_meta(name, &meta);
    if (!s.ok()) return s;
    out->resize(meta.bytes);
    const size_t per_round = parts_per_round(meta.part_bytes);
    for (uint64_t first = 0; first < meta.parts; first += per_round) {
      const uint64_t count = std::min<uint64_t>(per_round, meta.parts - first);
      std::vector<std::string> keys;
      for (uint64_t i = 0; i < count; ++i)
        keys.push_back(part_key(name, meta.generation, first + i));
      // Each part's bytes land in place in *out.
      std::vector<TransferCommand> commands;
      std::vector<uint64_t> expected;
      for (uint64_t i = 0; i < count; ++i) {
        const uint64_t offset = (first + i) * meta.part_bytes;
        expected.push_back(std::min<uint64_t>(meta.part_bytes, meta.bytes - offset));
        commands.push_back({{"GET", keys[i]}, {out->data() + offset, size_t(expected.back())}});
      }
      std::vector<TransferResult> results = cluster_.transfer(commands);
      for (uint64_t i = 0; i < count; ++i) {
        s = check(results[i], name);
        if (!s.ok()) return s;
        const uint64_t index = first + i;
        const RespReply& reply = results[i].reply;
        if (reply.kind == RespKind::kNil) {
          return Status::NotFound("shared: " + name + " partial: part " + std::to_string(index) +
                                  " of " + std::to_string(meta.parts) + " is gone");
        }
        if (reply.kind != RespKind::kBulk || reply.bulk_bytes != expected[i]) {
          return Status::Corruption("shared: " + name + ": part " + std::to_string(index) +
                                    " has " + std::to_string(reply.bulk_bytes) +
                                    " bytes, expected " + std::to_string(expected[i]));
        }
      }
    }
    std::lock_guard<std::mutex> lock(mutex_);
    stats_.bytes_read += meta.bytes;
    return Status::Ok();
  });
}

Status SharedBlobStore::read_range(const std::string& name, uint64_t offset, size_t n,
                                   uint8_t* out) {
  return guarded([&]() -> Status {
    Meta meta;
    Status s = read_meta(name, &meta);
    if (!s.ok()) return s;
    if (offset + n > meta.bytes) return Status::Corruption("shared: " + name + ": short read");
    if (n == 0) return Status::Ok();
    const uint64_t first = offset / meta.part_bytes;
    const uint64_t last = (offset + n - 1) / meta.part_bytes;
    std::vector<std::string> keys, starts, ends;
    for (uint64_t i = first; i <= last; ++i) {
      const uint64_t part_begin = i * meta.part_bytes;
      keys.push_back(part_key(name, meta.generation, i));
      starts.push_back(std::to_string(std::max(offset, part_begin) - part_begin));
      ends.push_back(
          std::to_string(std::min(offset + n, part_begin + meta.part_bytes) - 1 - part_begin));
    }
    std::vector<RedisCommand> commands;
    for (size_t i = 0; i < keys.size(); ++i) {
      commands.push_back({{"GETRANGE", keys[i], starts[i], ends[i]}});
    }
    std::vector<RedisResult> results = cluster_.run(commands);
    size_t copied = 0;
    for (size_t i = 0; i < results.size(); ++i) {
      s = check(results[i], name);
      if (!s.ok()) return s;
      const std::string_view piece = results[i].str();
      const size_t expected = size_t(std::stoull(ends[i]) - std::stoull(starts[i]) + 1);
      if (piece.size() != expected) {
        return Status::NotFound("shared: " + name + " partial: part " + std::to_string(first + i) +
                                " is gone");
      }
      std::memcpy(out + copied, piece.data(), piece.size());
      copied += piece.size();
    }
    std::lock_guard<std::mutex> lock(mutex_);
    stats_.bytes_read += n;
    return Status::Ok();
  });
}

bool SharedBlobStore::exists(const std::string& name) {
  std::vector<bool> present;
  return exists_many({name}, &present).ok() && present.front();
}

Status SharedBlobStore::exists_many(const std::vector<std::string>& names,
                                    std::vector<bool>* present) {
  present->assign(names.size(), false);
  if (names.empty()) return Status::Ok();
  return guarded([&]() -> Status {
    std::vector<std::string> keys;
    for (const std::string& name : names) keys.push_back(meta_key(name));
    std::vector<RedisResult> results = run_per_key(cluster_, "EXISTS", keys);
    for (size_t i = 0; i < results.size(); ++i) {
      Status s = check(results[i], names[i]);
      if (!s.ok()) return s;
      (*present)[i] = results[i].integer() > 0;
    }
    return Status::Ok();
  });
}

Status SharedBlobStore::size(const std::string& name, uint64_t* bytes) {
  return guarded([&]() -> Status {
    Meta meta;
    Status s = read_meta(name, &meta);
    if (s.ok()) *bytes = meta.bytes;
    return s;
  });
}

Status SharedBlobStore::list(const std::string& folder, std::vector<BlobInfo>* out) {
  out->clear();
  return guarded([&]() -> Status {
    const std::string pattern = prefix_ + folder + "/*";
    std::vector<std::string> names;
    for (const std::string& node : cluster_.masters()) {
      std::string cursor = "0";
      do {
        RedisResult result =
            cluster_.run_on_node(node, {"SCAN", cursor, "MATCH", pattern, "COUNT", "1000"});
        Status s = check(result, "SCAN");
        if (!s.ok()) return s;
        // [cursor, [key, ...]]
        const RespReply& reply = result.reply;
        if (reply.kind != RespKind::kArray || reply.elements.size() != 2 ||
            reply.elements[0].kind != RespKind::kBulk ||
            reply.elements[1].kind != RespKind::kArray) {
          return Status::IOError("shared: unexpected SCAN reply");
        }
        cursor = reply.elements[0].text;
        for (const RespReply& element : reply.elements[1].elements) {
          const std::string_view key = element.str();
          // A part, not a blob (or not one of ours: SCAN MATCH already filtered them).
          if (!key.starts_with(prefix_) || !key.ends_with('}')) continue;
          names.emplace_back(key.substr(prefix_.size(), key.size() - prefix_.size() - 1));
        }
      } while (cursor != "0");
    }
    for (const std::string& name : names) {
      Meta meta;
      // A blob removed between the scan and here is simply not listed.
      if (read_meta(name, &meta).ok()) out->push_back({name, meta.bytes});
    }
    return Status::Ok();
  });
}

Status SharedBlobStore::remove(const std::string& name) {
  return guarded([&]() -> Status {
    Meta meta;
    Status s = read_meta(name, &meta);
    if (s.code() == Status::Code::kCorruption)
      meta = Meta{};  // remove the bad meta alone
    else if (!s.ok())
      return s;
    std::vector<std::string> keys{meta_key(name)};
    for (uint64_t i = 0; i < meta.parts; ++i) keys.push_back(part_key(name, meta.generation, i));
    for (const RedisResult& result : run_per_key(cluster_, "UNLINK", keys)) {
      s = check(result, name);
      if (!s.ok()) return s;
    }
    return Status::Ok();
  });
}

Status SharedBlobStore::quarantine(const std::string& name) {
  Status s = remove(name);
  if (s.ok()) count_corrupt_deleted();
  return s;
}

Status SharedBlobStore::set_persistent(const std::string& name, bool persistent) {
  return guarded([&]() -> Status {
    Meta meta;
    Status s = read_meta(name, &meta);
    if (!s.ok()) return s;
    std::vector<std::string> keys{meta_key(name)};
    for (uint64_t i = 0; i < meta.parts; ++i) keys.push_back(part_key(name, meta.generation, i));
    std::vector<RedisResult> results;
    if (!persistent && options_.ttl_seconds > 0) {
      std::vector<RedisCommand> commands;
      for (const std::string& k : keys) commands.push_back({{"PEXPIRE", k, ttl_ms_}});
      results = cluster_.run(commands);
    } else {
      results = run_per_key(cluster_, "PERSIST", keys);
    }
    for (const RedisResult& result : results) {
      s = check(result, name);
      if (!s.ok()) return s;
    }
    return Status::Ok();
  });
}

Status SharedBlobStore::index_add(const std::string& index, const std::string& field,
                                  const std::string& value) {
  return guarded([&]() -> Status {
    const std::string key = meta_key(index);
    std::vector<RedisCommand> commands{{{"HSET", key, field, value}}};
    if (options_.ttl_seconds > 0) commands.push_back({{"PEXPIRE", key, ttl_ms_}});
    for (const RedisResult& result : cluster_.run(commands)) {
      Status s = check(result, index);
      if (!s.ok()) return s;
    }
    return Status::Ok();
  });
}

Status SharedBlobStore::index_remove(const std::string& index, const std::string& field) {
  return guarded([&]() -> Status {
    const std::string key = meta_key(index);
    return check(cluster_.run_one({{"HDEL", key, field}}), index);
  });
}

Status SharedBlobStore::index_read_many(const std::vector<std::string>& indexes,
                                        std::vector<SharedIndexEntries>* out) {
  out->assign(indexes.size(), {});
  if (indexes.empty()) return Status::Ok();
  return guarded([&]() -> Status {
    std::vector<std::string> keys;
    for (const std::string& index : indexes) keys.push_back(meta_key(index));
    std::vector<RedisResult> results = run_per_key(cluster_, "HGETALL", keys);
    for (size_t i = 0; i < results.size(); ++i) {
      Status s = check(results[i], indexes[i]);
      if (!s.ok()) return s;
      // [field, value, field, value, ...]
      const std::vector<RespReply>& fields = results[i].reply.elements;
      for (size_t f = 0; f + 1 < fields.size(); f += 2) {
        (*out)[i].emplace_back(fields[f].str(), fields[f + 1].str());
      }
    }
    return Status::Ok();
  });
}

SharedTierStats SharedBlobStore::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  SharedTierStats stats = stats_;
  stats.breaker_open = cluster_.any_breaker_open();
  stats.breaker_opens = cluster_.breaker_opens();
  return stats;
}

void SharedBlobStore::count_lookup() {
  std::lock_guard<std::mutex> lock(mutex_);
  ++stats_.lookups;
}

void SharedBlobStore::count_hit() {
  std::lock_guard<std::mutex> lock(mutex_);
  ++stats_.hits;
}

void SharedBlobStore::count_chunks_skipped(uint64_t n) {
  std::lock_guard<std::mutex> lock(mutex_);
  stats_.chunks_skipped += n;
}

void SharedBlobStore::count_corrupt_deleted() {
  std::lock_guard<std::mutex> lock(mutex_);
  ++stats_.corrupt_deleted;
}

}  // namespace qmlx
