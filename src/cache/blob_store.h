// BlobStore: immutable named blobs (put, get, exists, list, remove), the only thing the cache
// asks of its storage. Names are relative paths such as "chunks/ab/<hash>.kv". Today the
// backend is a local folder (EnvBlobStore); a store shared by several servers can implement
// the same interface later without the index, writer or policies above it changing.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "base/env.h"
#include "base/status.h"

namespace qmlx {

struct BlobInfo {
  std::string name;
  uint64_t bytes = 0;
};

class BlobStore {
 public:
  virtual ~BlobStore() = default;
  // Stores bytes under name atomically: readers see the old blob or the whole new one.
  virtual Status put(const std::string& name, std::span<const uint8_t> bytes) = 0;
  virtual Status get(const std::string& name, std::vector<uint8_t>* out) = 0;
  // Reads n bytes at offset (headers, token blobs) without fetching the whole blob.
  virtual Status read_range(const std::string& name, uint64_t offset, size_t n, uint8_t* out) = 0;
  virtual bool exists(const std::string& name) = 0;
  virtual Status size(const std::string& name, uint64_t* bytes) = 0;
  // Every blob whose name starts with folder + "/".
  virtual Status list(const std::string& folder, std::vector<BlobInfo>* out) = 0;
  virtual Status remove(const std::string& name) = 0;
  // Moves a blob that failed verification out of the way, keeping it for diagnosis.
  virtual Status quarantine(const std::string& name) = 0;
};

// A BlobStore in a local folder. put() writes "<name>.<n>.tmp", syncs it, renames it over
// name and syncs the folder (the syncs only when `durable`), so a crash at any instant leaves
// the old blob or the new one. open() removes the leftovers of interrupted puts.
class EnvBlobStore final : public BlobStore {
 public:
  EnvBlobStore(Env* env, std::string root, bool durable)
      : env_(env), root_(std::move(root)), durable_(durable) {}

  // Creates the root and removes temporary files left by interrupted writes; `removed` (may
  // be null) receives their count.
  Status open(int* removed);
  const std::string& root() const { return root_; }

  Status put(const std::string& name, std::span<const uint8_t> bytes) override;
  Status get(const std::string& name, std::vector<uint8_t>* out) override;
  Status read_range(const std::string& name, uint64_t offset, size_t n, uint8_t* out) override;
  bool exists(const std::string& name) override;
  Status size(const std::string& name, uint64_t* bytes) override;
  Status list(const std::string& folder, std::vector<BlobInfo>* out) override;
  Status remove(const std::string& name) override;
  Status quarantine(const std::string& name) override;

  static constexpr const char* kQuarantineFolder = "quarantine";

 private:
  std::string path_of(const std::string& name) const { return join_path(root_, name); }
  // Creates the folders of a blob name, the root included when it was deleted while serving,
  // syncing each parent that gained a folder so the new folder itself survives a crash.
  Status ensure_parent(const std::string& name);
  Status list_into(const std::string& folder, std::vector<BlobInfo>* out);
  Status remove_leftovers(const std::string& folder, int* removed);

  Env* env_;
  std::string root_;
  bool durable_;
  std::atomic<uint64_t> temp_counter_{0};
};

}  // namespace qmlx
