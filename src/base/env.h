// Env: every file operation the cache performs goes through this interface (the LevelDB
// pattern), so tests can swap in FaultEnv (fault_env.h) to inject ENOSPC and EIO, simulate a
// crash that loses unsynced bytes, or flip bytes on read, without touching the code under test.
// All operations return Status: on the cache path an I/O failure is an ordinary outcome that
// the caller counts and survives, never an exception.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"

namespace qmlx {

// A file being written sequentially. Bytes are durable only after sync().
class WritableFile {
 public:
  virtual ~WritableFile() = default;
  virtual Status append(std::span<const uint8_t> data) = 0;
  // Hands buffered bytes to the operating system (not yet durable).
  virtual Status flush() = 0;
  // flush() and fsync: the bytes survive a crash once this returns OK.
  virtual Status sync() = 0;
  virtual Status close() = 0;
};

// A file read at arbitrary offsets, possibly from several threads at once.
class RandomAccessFile {
 public:
  virtual ~RandomAccessFile() = default;
  // Reads n bytes at offset into out. Reading past the end is an error (Corruption: the caller
  // asked for bytes a header promised), so a short file is never mistaken for a valid one.
  virtual Status read(uint64_t offset, size_t n, uint8_t* out) const = 0;
  virtual uint64_t size() const = 0;
};

class Env {
 public:
  virtual ~Env() = default;

  // Creates (or truncates) path for writing.
  virtual Status new_writable_file(const std::string& path, std::unique_ptr<WritableFile>* out) = 0;
  // Opens path for appending, creating it when missing.
  virtual Status new_appendable_file(const std::string& path,
                                     std::unique_ptr<WritableFile>* out) = 0;
  virtual Status new_random_access_file(const std::string& path,
                                        std::unique_ptr<RandomAccessFile>* out) = 0;
  // Atomically replaces `to` with `from` (same file system).
  virtual Status rename_file(const std::string& from, const std::string& to) = 0;
  virtual Status remove_file(const std::string& path) = 0;
  // Removes an empty directory.
  virtual Status remove_dir(const std::string& path) = 0;
  virtual Status truncate_file(const std::string& path, uint64_t size) = 0;
  // Entry names (without "." and "..") of a directory.
  virtual Status list_dir(const std::string& path, std::vector<std::string>* names) = 0;
  // Creates one directory; OK when it already exists.
  virtual Status create_dir(const std::string& path) = 0;
  virtual Status file_size(const std::string& path, uint64_t* size) = 0;
  // fsync of a directory, which makes the names created or renamed in it durable.
  virtual Status sync_dir(const std::string& path) = 0;
  virtual bool file_exists(const std::string& path) = 0;
  virtual bool is_dir(const std::string& path) = 0;

  // Helpers built on the primitives above.
  Status create_dirs(const std::string& path);
  Status read_file(const std::string& path, std::vector<uint8_t>* out);
  // Removes path and, when it is a directory, everything below it.
  Status remove_tree(const std::string& path);
  // Total bytes of the regular files below path.
  Status tree_size(const std::string& path, uint64_t* bytes);

  // The process-wide POSIX implementation (never deleted).
  static Env* posix();
};

// Joins two path pieces with exactly one '/'.
std::string join_path(const std::string& dir, const std::string& name);
// The directory part of a path ("" when there is none).
std::string parent_dir(const std::string& path);

}  // namespace qmlx
