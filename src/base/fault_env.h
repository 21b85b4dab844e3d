// FaultEnv: an Env wrapper for tests that makes the failures the cache must survive happen on
// demand: ENOSPC or EIO on the Nth write, sync or rename; a process that dies after N mutating
// operations; a power loss that drops what was never synced; bytes flipped on read. It tracks
// which bytes and names are durable the way a journaling file system promises them: file data
// after fsync of the file, a new or renamed name after fsync of its directory.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>

#include "base/env.h"

namespace qmlx {

class FaultEnv final : public Env {
 public:
  enum class Op { kWrite, kSync, kRename };
  enum class CrashMode {
    kDropUnsynced,  // unsynced bytes and unsynced names are all lost
    kRandomCut,     // each file keeps a random part of its unsynced bytes; names survive at random
  };

  explicit FaultEnv(Env* base) : base_(base) {}

  // The nth (1-based, counted from now) operation of kind op fails with `error`; with
  // persistent, every later one does too (a full disk stays full).
  void fail_nth(Op op, int n, Status error, bool persistent = false);
  void clear_faults();  // the space limit too
  // After `ops` more mutating operations, every further one fails: the process died there.
  void crash_after(int64_t ops);
  bool crashed() const;
  // Puts the files in the state a power loss at this instant would leave, then clears the
  // crash so the Env can be used again. `seed` drives kRandomCut.
  Status simulate_crash(CrashMode mode, uint64_t seed = 0);
  // A disk of `bytes` holding the files below `root`: an append that would pass it fails with
  // ENOSPC (what is written under root counts, whoever wrote it).
  void limit_space(std::string root, uint64_t bytes);
  // Every read of a file whose path contains `needle` gets one byte flipped.
  void corrupt_reads(std::string needle);
  int64_t mutating_ops() const;
  // Called (outside the Env's lock) before a file is opened for writing, and after an open for
  // reading failed: where a test makes a reader and a writer race in one chosen order.
  enum class OpenEvent { kBeforeWrite, kReadFailed };
  using OpenHook = std::function<void(OpenEvent, const std::string& path)>;
  void set_open_hook(OpenHook hook);

  Status new_writable_file(const std::string& path, std::unique_ptr<WritableFile>* out) override;
  Status new_appendable_file(const std::string& path, std::unique_ptr<WritableFile>* out) override;
  Status new_random_access_file(const std::string& path,
                                std::unique_ptr<RandomAccessFile>* out) override;
  Status rename_file(const std::string& from, const std::string& to) override;
  Status remove_file(const std::string& path) override;
  Status remove_dir(const std::string& path) override;
  Status truncate_file(const std::string& path, uint64_t size) override;
  Status list_dir(const std::string& path, std::vector<std::string>* names) override;
  Status create_dir(const std::string& path) override;
  Status file_size(const std::string& path, uint64_t* size) override;
  Status sync_dir(const std::string& path) override;
  bool file_exists(const std::string& path) override { return base_->file_exists(path); }
  bool is_dir(const std::string& path) override { return base_->is_dir(path); }

 private:
  friend class FaultWritableFile;
  friend class FaultRandomAccessFile;
  struct FileState {
    uint64_t synced = 0;
    uint64_t written = 0;
  };
  struct Fault {
    int countdown = 0;  // fails when it reaches zero; 0 = inactive
    bool persistent = false;
    bool fired = false;
    Status error;
  };

  // Counts one mutating operation of `op` (none for creates/removes) and returns the fault
  // to report, if any. Caller holds mutex_.
  Status admit(const Op* op);
  void note_new_name(const std::string& path);
  Status on_append(const std::string& path, size_t bytes);
  void on_appended(const std::string& path, size_t bytes);
  Status on_sync(const std::string& path);
  bool should_corrupt(const std::string& path) const;
  void call_open_hook(OpenEvent event, const std::string& path);

  Env* base_;
  mutable std::mutex mutex_;
  std::map<Op, Fault> faults_;
  int64_t ops_ = 0;
  int64_t crash_at_ = -1;
  bool crashed_ = false;
  std::string corrupt_needle_;
  OpenHook open_hook_;
  std::string space_root_;
  uint64_t space_bytes_ = 0;
  std::map<std::string, FileState> files_;
  std::map<std::string, std::set<std::string>> unsynced_names_;  // dir -> names
};

}  // namespace qmlx
