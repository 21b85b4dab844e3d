#include "base/fault_env.h"

#include <algorithm>
#include <cerrno>
#include <random>

namespace qmlx {

class FaultWritableFile final : public WritableFile {
 public:
  FaultWritableFile(FaultEnv* env, std::string path, std::unique_ptr<WritableFile> base)
      : env_(env), path_(std::move(path)), base_(std::move(base)) {}

  Status append(std::span<const uint8_t> data) override {
    Status s = env_->on_append(path_, data.size());
    if (!s.ok()) return s;
    s = base_->append(data);
    if (s.ok()) env_->on_appended(path_, data.size());
    return s;
  }
  Status flush() override { return base_->flush(); }
  Status sync() override {
    Status s = base_->flush();
    if (!s.ok()) return s;
    std::lock_guard<std::mutex> lock(env_->mutex_);
    const FaultEnv::Op op = FaultEnv::Op::kSync;
    s = env_->admit(&op);
    if (!s.ok()) return s;
    s = base_->sync();
    if (s.ok()) env_->files_[path_].synced = env_->files_[path_].written;
    return s;
  }
  Status close() override { return base_->close(); }

 private:
  FaultEnv* env_;
  std::string path_;
  std::unique_ptr<WritableFile> base_;
};

class FaultRandomAccessFile final : public RandomAccessFile {
 public:
  FaultRandomAccessFile(std::unique_ptr<RandomAccessFile> base, bool corrupt)
      : base_(std::move(base)), corrupt_(corrupt) {}

  Status read(uint64_t offset, size_t n, uint8_t* out) const override {
    Status s = base_->read(offset, n, out);
    if (s.ok() && corrupt_ && n > 0) out[n / 2] ^= 0x5A;
    return s;
  }
  uint64_t size() const override { return base_->size(); }

 private:
  std::unique_ptr<RandomAccessFile> base_;
  bool corrupt_;
};

void FaultEnv::fail_nth(Op op, int n, Status error, bool persistent) {
  std::lock_guard<std::mutex> lock(mutex_);
  faults_[op] = Fault{n, persistent, false, std::move(error)};
}

void FaultEnv::clear_faults() {
  std::lock_guard<std::mutex> lock(mutex_);
  faults_.clear();
  corrupt_needle_.clear();
  space_root_.clear();
}

void FaultEnv::crash_after(int64_t ops) {
  std::lock_guard<std::mutex> lock(mutex_);
  crash_at_ = ops_ + ops;
}

bool FaultEnv::crashed() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return crashed_;
}

int64_t FaultEnv::mutating_ops() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return ops_;
}

void FaultEnv::corrupt_reads(std::string needle) {
  std::lock_guard<std::mutex> lock(mutex_);
  corrupt_needle_ = std::move(needle);
}

Status FaultEnv::admit(const Op* op) {
  if (crashed_ || (crash_at_ >= 0 && ops_ >= crash_at_)) {
    crashed_ = true;
    return Status::IOError("fault env: process crashed");
  }
  ++ops_;
  if (op == nullptr) return Status::Ok();
  auto it = faults_.find(*op);
  if (it == faults_.end()) return Status::Ok();
  Fault& fault = it->second;
  if (fault.fired && fault.persistent) return fault.error;
  if (fault.countdown > 0 && --fault.countdown == 0) {
    fault.fired = true;
    return fault.error;
  }
  return Status::Ok();
}

void FaultEnv::note_new_name(const std::string& path) {
  unsynced_names_[parent_dir(path)].insert(path);
}

void FaultEnv::limit_space(std::string root, uint64_t bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  space_root_ = std::move(root);
  space_bytes_ = bytes;
}

Status FaultEnv::on_append(const std::string& path, size_t bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  const Op op = Op::kWrite;
  Status s = admit(&op);
  if (!s.ok() || space_root_.empty() || path.rfind(space_root_, 0) != 0) return s;
  uint64_t used = 0;
  base_->tree_size(space_root_, &used);
  if (used + bytes > space_bytes_) {
    return Status::NoSpace(path + ": no space left on device").with_errno(ENOSPC);
  }
  return s;
}

void FaultEnv::on_appended(const std::string& path, size_t bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  files_[path].written += bytes;
}

bool FaultEnv::should_corrupt(const std::string& path) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return !corrupt_needle_.empty() && path.find(corrupt_needle_) != std::string::npos;
}

void FaultEnv::set_open_hook(OpenHook hook) {
  std::lock_guard<std::mutex> lock(mutex_);
  open_hook_ = std::move(hook);
}

void FaultEnv::call_open_hook(OpenEvent event, const std::string& path) {
  OpenHook hook;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    hook = open_hook_;
  }
  if (hook) hook(event, path);
}

Status FaultEnv::new_writable_file(const std::string& path, std::unique_ptr<WritableFile>* out) {
  call_open_hook(OpenEvent::kBeforeWrite, path);
  std::lock_guard<std::mutex> lock(mutex_);
  Status s = admit(nullptr);
  if (!s.ok()) return s;
  std::unique_ptr<WritableFile> base;
  s = base_->new_writable_file(path, &base);
  if (!s.ok()) return s;
  if (!files_.count(path)) note_new_name(path);
  files_[path] = FileState{};
  *out = std::make_unique<FaultWritableFile>(this, path, std::move(base));
  return Status::Ok();
}

Status FaultEnv::new_appendable_file(const std::string& path, std::unique_ptr<WritableFile>* out) {
  std::lock_guard<std::mutex> lock(mutex_);
  Status s = admit(nullptr);
  if (!s.ok()) return s;
  uint64_t existing = 0;
  bool existed = base_->file_size(path, &existing).ok();
  std::unique_ptr<WritableFile> base;
  s = base_->new_appendable_file(path, &base);
  if (!s.ok()) return s;
  if (!existed) note_new_name(path);
  if (!files_.count(path)) files_[path] = FileState{existing, existing};
  *out = std::make_unique<FaultWritableFile>(this, path, std::move(base));
  return Status::Ok();
}

Status FaultEnv::new_random_access_file(const std::string& path,
                                        std::unique_ptr<RandomAccessFile>* out) {
  std::unique_ptr<RandomAccessFile> base;
  Status s = base_->new_random_access_file(path, &base);
  if (!s.ok()) {
    call_open_hook(OpenEvent::kReadFailed, path);
    return s;
  }
  *out = std::make_unique<FaultRandomAccessFile>(std::move(base), should_corrupt(path));
  return Status::Ok();
}

Status FaultEnv::rename_file(const std::string& from, const std::string& to) {
  std::lock_guard<std::mutex> lock(mutex_);
  const Op op = Op::kRename;
  Status s = admit(&op);
  if (!s.ok()) return s;
  s = base_->rename_file(from, to);
  if (!s.ok()) return s;
  auto it = files_.find(from);
  if (it != files_.end()) {
    files_[to] = it->second;
    files_.erase(it);
  } else {
    files_.erase(to);
  }
  note_new_name(to);
  return Status::Ok();
}

Status FaultEnv::remove_file(const std::string& path) {
  std::lock_guard<std::mutex> lock(mutex_);
  Status s = admit(nullptr);
  if (!s.ok()) return s;
  s = base_->remove_file(path);
  if (s.ok()) {
    files_.erase(path);
    unsynced_names_[parent_dir(path)].erase(path);
  }
  return s;
}

Status FaultEnv::remove_dir(const std::string& path) {
  std::lock_guard<std::mutex> lock(mutex_);
  Status s = admit(nullptr);
  if (!s.ok()) return s;
  return base_->remove_dir(path);
}

Status FaultEnv::truncate_file(const std::string& path, uint64_t size) {
  std::lock_guard<std::mutex> lock(mutex_);
  const Op op = Op::kWrite;
  Status s = admit(&op);
  if (!s.ok()) return s;
  return base_->truncate_file(path, size);
}

Status FaultEnv::list_dir(const std::string& path, std::vector<std::string>* names) {
  return base_->list_dir(path, names);
}

Status FaultEnv::create_dir(const std::string& path) {
  std::lock_guard<std::mutex> lock(mutex_);
  Status s = admit(nullptr);
  if (!s.ok()) return s;
  bool existed = base_->is_dir(path);
  s = base_->create_dir(path);
  if (s.ok() && !existed) note_new_name(path);
  return s;
}

Status FaultEnv::file_size(const std::string& path, uint64_t* size) {
  return base_->file_size(path, size);
}

Status FaultEnv::sync_dir(const std::string& path) {
  std::lock_guard<std::mutex> lock(mutex_);
  const Op op = Op::kSync;
  Status s = admit(&op);
  if (!s.ok()) return s;
  s = base_->sync_dir(path);
  if (s.ok()) unsynced_names_.erase(path);
  return s;
}

Status FaultEnv::simulate_crash(CrashMode mode, uint64_t seed) {
  std::lock_guard<std::mutex> lock(mutex_);
  std::mt19937_64 rng(seed);
  for (const auto& [path, state] : files_) {
    if (state.written == state.synced || !base_->file_exists(path)) continue;
    uint64_t keep = state.synced;
    if (mode == CrashMode::kRandomCut) keep += rng() % (state.written - state.synced + 1);
    Status s = base_->truncate_file(path, keep);
    if (!s.ok()) return s;
  }
  // Deepest names first, so a lost directory is emptied before it is removed.
  std::vector<std::string> lost;
  for (const auto& [dir, names] : unsynced_names_) {
    for (const std::string& name : names) {
      if (mode == CrashMode::kDropUnsynced || rng() % 2 == 0) lost.push_back(name);
    }
  }
  std::sort(lost.begin(), lost.end(),
            [](const std::string& a, const std::string& b) { return a.size() > b.size(); });
  for (const std::string& path : lost) {
    if (base_->file_exists(path)) {
      Status s = base_->remove_tree(path);
      if (!s.ok()) return s;
    }
  }
  files_.clear();
  unsynced_names_.clear();
  crashed_ = false;
  crash_at_ = -1;
  faults_.clear();
  return Status::Ok();
}

}  // namespace qmlx
