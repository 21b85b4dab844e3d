// CacheAdmin: the cache folder as `qmlx cache` sees it with no model loaded: every
// fingerprint's store under disk_cache_dir, indexed from snapshot headers. It lists, inspects,
// verifies, pins, removes, clears and garbage-collects without knowing the model, because the
// file formats are self-describing. A running server uses PrefixCache's own admin methods.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cache/config.h"
#include "cache/disk_store.h"
#include "cache/index.h"
#include "cache/prefix_cache.h"
#include "cache/verify.h"

namespace qmlx {

struct StoreSummary {
  Hash128 fingerprint;
  std::string dir;
  size_t snapshots = 0;
  size_t chunks = 0;
  size_t pinned = 0;
  uint64_t bytes = 0;  // snapshots + chunks + quarantine
  uint64_t quarantine_bytes = 0;
  int leftovers_removed = 0;

  nlohmann::json to_json() const;
};

struct SnapshotRef {
  size_t store = 0;
  Hash128 id;
};

class CacheAdmin {
 public:
  // Opens every store folder under config.disk_cache_dir (removing leftovers of interrupted
  // writes, like a server start would). Throws qmlx::Error when the folder is unreadable.
  explicit CacheAdmin(const CacheConfig& config, Env* env = Env::posix());

  std::vector<StoreSummary> stores() const;
  std::vector<SnapshotListing> list() const;
  // The snapshot whose id starts with `id_prefix` (at least 4 hex digits); *error says why not.
  std::optional<SnapshotRef> find(const std::string& id_prefix, std::string* error) const;
  std::optional<SnapshotListing> inspect(const SnapshotRef& ref) const;
  // Verifies and quarantines what fails.
  VerifyReport verify(const SnapshotRef& ref);
  std::vector<VerifyReport> verify_all();
  // Pins or unpins on disk and, with a writable shared tier configured, there too (no TTL on
  // the snapshot and its chunks); an error names the tier that was not reached.
  Status pin(const SnapshotRef& ref, bool pinned);
  Status remove(const SnapshotRef& ref);
  // Removes every store.
  Status clear();
  // Deletes quarantined files and unreferenced chunks of hybrid stores, then evicts down to the
  // low-water mark if the folder is over its cap (the most recently used store is kept, others
  // go first as a server of that model would do). Returns the bytes freed.
  uint64_t gc();

 private:
  struct Store {
    std::unique_ptr<DiskStore> disk;
    std::unique_ptr<CacheIndex> index;
    uint64_t quarantine_bytes = 0;
    int leftovers_removed = 0;
  };

  void open_stores();
  uint64_t remove_unreferenced_chunks(Store& store);
  uint64_t total_bytes() const;

  CacheConfig config_;
  Env* env_;
  std::vector<Store> stores_;
};

}  // namespace qmlx
