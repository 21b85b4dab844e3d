#include "base/env.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace qmlx {
namespace {

Status posix_error(const std::string& context, int err) {
  std::string message = context + ": " + std::strerror(err);
  if (err == ENOENT) return Status::NotFound(message).with_errno(err);
  if (err == ENOSPC || err == EDQUOT) return Status::NoSpace(message).with_errno(err);
  return Status::IOError(message).with_errno(err);
}

class PosixWritableFile final : public WritableFile {
 public:
  PosixWritableFile(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  ~PosixWritableFile() override {
    if (fd_ >= 0) ::close(fd_);
  }

  // Writes go straight to the kernel: the cache writes whole blobs in few large appends, so
  // a user-space buffer would only add a copy.
  Status append(std::span<const uint8_t> data) override {
    const uint8_t* p = data.data();
    size_t left = data.size();
    while (left > 0) {
      ssize_t n = ::write(fd_, p, left);
      if (n < 0) {
        if (errno == EINTR) continue;
        return posix_error(path_, errno);
      }
      p += n;
      left -= size_t(n);
    }
    return Status::Ok();
  }
  Status flush() override { return Status::Ok(); }
  Status sync() override {
    if (::fsync(fd_) != 0) return posix_error(path_, errno);
    return Status::Ok();
  }
  Status close() override {
    int fd = fd_;
    fd_ = -1;
    if (fd >= 0 && ::close(fd) != 0) return posix_error(path_, errno);
    return Status::Ok();
  }

 private:
  std::string path_;
  int fd_;
};

class PosixRandomAccessFile final : public RandomAccessFile {
 public:
  PosixRandomAccessFile(std::string path, int fd, uint64_t size)
      : path_(std::move(path)), fd_(fd), size_(size) {}
  ~PosixRandomAccessFile() override { ::close(fd_); }

  Status read(uint64_t offset, size_t n, uint8_t* out) const override {
    while (n > 0) {
      ssize_t got = ::pread(fd_, out, n, off_t(offset));
      if (got < 0) {
        if (errno == EINTR) continue;
        return posix_error(path_, errno);
      }
      if (got == 0) return Status::Corruption(path_ + ": read past end of file");
      out += got;
      offset += uint64_t(got);
      n -= size_t(got);
    }
    return Status::Ok();
  }
  uint64_t size() const override { return size_; }

 private:
  std::string path_;
  int fd_;
  uint64_t size_;
};

class PosixEnv final : public Env {
 public:
  Status new_writable_file(const std::string& path, std::unique_ptr<WritableFile>* out) override {
    return open_for_write(path, O_TRUNC, out);
  }
  Status new_appendable_file(const std::string& path, std::unique_ptr<WritableFile>* out) override {
    return open_for_write(path, O_APPEND, out);
  }
  Status new_random_access_file(const std::string& path,
                                std::unique_ptr<RandomAccessFile>* out) override {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return posix_error(path, errno);
    struct stat st;
    if (::fstat(fd, &st) != 0) {
      int err = errno;
      ::close(fd);
      return posix_error(path, err);
    }
    *out = std::make_unique<PosixRandomAccessFile>(path, fd, uint64_t(st.st_size));
    return Status::Ok();
  }
  Status rename_file(const std::string& from, const std::string& to) override {
    if (::rename(from.c_str(), to.c_str()) != 0) return posix_error(from + " -> " + to, errno);
    return Status::Ok();
  }
  Status remove_file(const std::string& path) override {
    if (::unlink(path.c_str()) != 0) return posix_error(path, errno);
    return Status::Ok();
  }
  Status remove_dir(const std::string& path) override {
    if (::rmdir(path.c_str()) != 0) return posix_error(path, errno);
    return Status::Ok();
  }
  Status truncate_file(const std::string& path, uint64_t size) override {
    if (::truncate(path.c_str(), off_t(size)) != 0) return posix_error(path, errno);
    return Status::Ok();
  }
  Status list_dir(const std::string& path, std::vector<std::string>* names) override {
    names->clear();
    DIR* dir = ::opendir(path.c_str());
    if (dir == nullptr) return posix_error(path, errno);
    while (struct dirent* entry = ::readdir(dir)) {
      std::string name = entry->d_name;
      if (name != "." && name != "..") names->push_back(std::move(name));
    }
    ::closedir(dir);
    return Status::Ok();
  }
  Status create_dir(const std::string& path) override {
    if (::mkdir(path.c_str(), 0755) == 0) return Status::Ok();
    const int err = errno;
    // A regular file in the folder's place is not the folder.
    if (err == EEXIST) return is_dir(path) ? Status::Ok() : posix_error(path, ENOTDIR);
    return posix_error(path, err);
  }
  Status file_size(const std::string& path, uint64_t* size) override {
    struct stat st;
    if (::stat(path.c_str(), &st) != 0) return posix_error(path, errno);
    *size = uint64_t(st.st_size);
    return Status::Ok();
  }
  Status sync_dir(const std::string& path) override {
    int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return posix_error(path, errno);
    int rc = ::fsync(fd);
    int err = errno;
    ::close(fd);
    if (rc != 0) return posix_error(path, err);
    return Status::Ok();
  }
  bool file_exists(const std::string& path) override { return ::access(path.c_str(), F_OK) == 0; }
  bool is_dir(const std::string& path) override {
    struct stat st;
    return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
  }

 private:
  static Status open_for_write(const std::string& path, int mode,
                               std::unique_ptr<WritableFile>* out) {
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | mode, 0644);
    if (fd < 0) return posix_error(path, errno);
    *out = std::make_unique<PosixWritableFile>(path, fd);
    return Status::Ok();
  }
};

}  // namespace

std::string join_path(const std::string& dir, const std::string& name) {
  if (dir.empty()) return name;
  if (dir.back() == '/') return dir + name;
  return dir + "/" + name;
}

std::string parent_dir(const std::string& path) {
  size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return "";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

Status Env::create_dirs(const std::string& path) {
  if (path.empty() || is_dir(path)) return Status::Ok();
  std::string parent = parent_dir(path);
  if (!parent.empty() && parent != path) {
    Status s = create_dirs(parent);
    if (!s.ok()) return s;
  }
  return create_dir(path);
}

Status Env::read_file(const std::string& path, std::vector<uint8_t>* out) {
  std::unique_ptr<RandomAccessFile> file;
  Status s = new_random_access_file(path, &file);
  if (!s.ok()) return s;
  out->resize(file->size());
  return file->read(0, out->size(), out->data());
}

Status Env::remove_tree(const std::string& path) {
  if (!is_dir(path)) return remove_file(path);
  std::vector<std::string> names;
  Status s = list_dir(path, &names);
  if (!s.ok()) return s;
  for (const std::string& name : names) {
    s = remove_tree(join_path(path, name));
    if (!s.ok()) return s;
  }
  return remove_dir(path);
}

Status Env::tree_size(const std::string& path, uint64_t* bytes) {
  if (!is_dir(path)) {
    uint64_t size = 0;
    Status s = file_size(path, &size);
    if (s.ok()) *bytes += size;
    return s;
  }
  std::vector<std::string> names;
  Status s = list_dir(path, &names);
  if (!s.ok()) return s;
  for (const std::string& name : names) {
    s = tree_size(join_path(path, name), bytes);
    if (!s.ok()) return s;
  }
  return Status::Ok();
}

Env* Env::posix() {
  static PosixEnv* env = new PosixEnv();
  return env;
}

}  // namespace qmlx
