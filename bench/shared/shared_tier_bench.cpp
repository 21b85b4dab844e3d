// qmlx_shared_tier_bench NODES DISK_DIR [CA_FILE]: writes and reads back blobs of the sizes the
// cache stores (a K/V chunk, a snapshot) through the shared tier (SharedBlobStore over the Redis
// Cluster at NODES, "host:port,host:port") and through the local disk tier (EnvBlobStore in
// DISK_DIR), and prints MB/s for each. Reads are what a restore does; every read is checked.
// With CA_FILE the cluster is reached over TLS (trusting that CA): the tier reads "shared+tls".
#include <atomic>
#include <chrono>
#include <cstdio>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "cache/blob_store.h"
#include "cache/shared_blob_store.h"

namespace {

using Clock = std::chrono::steady_clock;

double mb_per_s(uint64_t bytes, Clock::time_point start) {
  return double(bytes) / 1e6 / std::chrono::duration<double>(Clock::now() - start).count();
}

// A restore's pattern: `count` blobs read by `threads` threads at once (the restorer fetches a
// snapshot's chunks on the thread pool), each into a fresh buffer as the restorer does.
void measure_parallel_gets(const char* tier, qmlx::BlobStore& store, size_t size, int count,
                           int threads) {
  std::vector<uint8_t> blob(size, 0x5A);
  for (int i = 0; i < count; ++i) {
    if (!store.put("chunks/00/par" + std::to_string(i) + ".kv", blob).ok()) std::abort();
  }
  std::atomic<int> next{0};
  const auto start = Clock::now();
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&] {
      for (int i = next++; i < count; i = next++) {
        std::vector<uint8_t> back;
        if (!store.get("chunks/00/par" + std::to_string(i) + ".kv", &back).ok() ||
            back.size() != size) {
          std::abort();
        }
      }
    });
  }
  for (std::thread& t : pool) t.join();
  const double get = mb_per_s(uint64_t(size) * count, start);
  std::printf("%-10s  %10zu  %5d  %d threads, fresh buffers  get %8.0f MB/s\n", tier, size, count,
              threads, get);
  for (int i = 0; i < count; ++i) store.remove("chunks/00/par" + std::to_string(i) + ".kv");
}

void measure(const char* tier, qmlx::BlobStore& store, size_t size, int count) {
  std::vector<uint8_t> blob(size);
  std::mt19937 rng(7);
  for (uint8_t& b : blob) b = uint8_t(rng());
  auto start = Clock::now();
  for (int i = 0; i < count; ++i) {
    if (!store.put("chunks/00/bench" + std::to_string(i) + ".kv", blob).ok()) std::abort();
  }
  const double put = mb_per_s(uint64_t(size) * count, start);
  std::vector<uint8_t> back;
  start = Clock::now();
  for (int i = 0; i < count; ++i) {
    if (!store.get("chunks/00/bench" + std::to_string(i) + ".kv", &back).ok() || back != blob) {
      std::abort();
    }
  }
  const double get = mb_per_s(uint64_t(size) * count, start);
  std::printf("%-10s  %10zu  %5d  put %8.0f MB/s  get %8.0f MB/s\n", tier, size, count, put, get);
  for (int i = 0; i < count; ++i) store.remove("chunks/00/bench" + std::to_string(i) + ".kv");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3 && argc != 4) {
    std::fprintf(stderr, "usage: %s NODES DISK_DIR [CA_FILE]\n", argv[0]);
    return 2;
  }
  qmlx::SharedStoreOptions options;
  std::stringstream nodes(argv[1]);
  for (std::string node; std::getline(nodes, node, ',');) options.cluster.seeds.push_back(node);
  options.cluster.timeout_ms = 5000;
  const bool tls = argc == 4;
  options.cluster.tls = {tls, tls ? argv[3] : "", "", "", ""};
  const char* shared_name = tls ? "shared+tls" : "shared";
  options.fingerprint = qmlx::Hash128{1, 2};
  qmlx::SharedBlobStore shared(options);
  if (!shared.setup_status().ok()) {
    std::fprintf(stderr, "%s\n", shared.setup_status().ToString().c_str());
    return 1;
  }
  qmlx::EnvBlobStore disk(qmlx::Env::posix(), argv[2], false);
  if (!disk.open(nullptr).ok()) return 1;
  // A K/V chunk of a small model (256 KiB), one of Qwen3.5-122B-A10B (256 tokens x 24,576 B of
  // bf16 K/V per token = 6 MiB), and a snapshot of it (about 150 MB of recurrent state).
  const std::vector<std::pair<size_t, int>> cases = {
      {256 << 10, 64}, {6 << 20, 16}, {150 << 20, 2}};
  for (const auto& [size, count] : cases) {
    measure(shared_name, shared, size, count);
    measure("disk", disk, size, count);
  }
  measure_parallel_gets(shared_name, shared, 6 << 20, 32, 2);
  measure_parallel_gets("disk", disk, 6 << 20, 32, 2);
  return 0;
}
