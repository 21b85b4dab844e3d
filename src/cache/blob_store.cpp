#include "cache/blob_store.h"

#include <unistd.h>

namespace qmlx {
namespace {

bool is_temp_name(const std::string& name) {
  return name.size() > 4 && name.compare(name.size() - 4, 4, ".tmp") == 0;
}

}  // namespace

Status EnvBlobStore::open(int* removed) {
  Status s = env_->create_dirs(root_);
  if (!s.ok()) return s;
  int count = 0;
  s = remove_leftovers("", &count);
  if (removed != nullptr) *removed = count;
  return s;
}

Status EnvBlobStore::remove_leftovers(const std::string& folder, int* removed) {
  const std::string dir = folder.empty() ? root_ : path_of(folder);
  std::vector<std::string> names;
  Status s = env_->list_dir(dir, &names);
  if (!s.ok()) return s;
  for (const std::string& name : names) {
    const std::string relative = folder.empty() ? name : folder + "/" + name;
    if (env_->is_dir(path_of(relative))) {
      s = remove_leftovers(relative, removed);
    } else if (is_temp_name(name)) {
      s = env_->remove_file(path_of(relative));
      ++*removed;
    }
    if (!s.ok()) return s;
  }
  return Status::Ok();
}

Status EnvBlobStore::ensure_parent(const std::string& name) {
  const std::string folder = parent_dir(name);  // relative to the root; "" is the root itself
  const std::string path = folder.empty() ? root_ : path_of(folder);
  if (env_->is_dir(path)) return Status::Ok();
  // The root (or a folder above it) was deleted while serving: recreate the whole path.
  Status s = folder.empty() ? env_->create_dirs(root_) : ensure_parent(folder);
  if (s.ok() && !folder.empty()) s = env_->create_dir(path);
  if (!s.ok() || !durable_) return s;
  return env_->sync_dir(parent_dir(path));
}

Status EnvBlobStore::put(const std::string& name, std::span<const uint8_t> bytes) {
  Status s = ensure_parent(name);
  if (!s.ok()) return s;
  const std::string final_path = path_of(name);
  const std::string temp_path = final_path + "." + std::to_string(::getpid()) + "-" +
                                std::to_string(temp_counter_++) + ".tmp";
  std::unique_ptr<WritableFile> file;
  s = env_->new_writable_file(temp_path, &file);
  if (s.ok()) s = file->append(bytes);
  if (s.ok()) s = durable_ ? file->sync() : file->flush();
  if (s.ok()) s = file->close();
  if (s.ok()) s = env_->rename_file(temp_path, final_path);
  if (s.ok() && durable_) s = env_->sync_dir(parent_dir(final_path));
  if (!s.ok()) {
    // Best effort: a leftover that cannot be removed now is removed by the next open().
    if (env_->file_exists(temp_path)) env_->remove_file(temp_path);
  }
  return s;
}

Status EnvBlobStore::get(const std::string& name, std::vector<uint8_t>* out) {
  return env_->read_file(path_of(name), out);
}

Status EnvBlobStore::read_range(const std::string& name, uint64_t offset, size_t n, uint8_t* out) {
  std::unique_ptr<RandomAccessFile> file;
  Status s = env_->new_random_access_file(path_of(name), &file);
  if (!s.ok()) return s;
  return file->read(offset, n, out);
}

bool EnvBlobStore::exists(const std::string& name) { return env_->file_exists(path_of(name)); }

Status EnvBlobStore::size(const std::string& name, uint64_t* bytes) {
  return env_->file_size(path_of(name), bytes);
}

Status EnvBlobStore::list(const std::string& folder, std::vector<BlobInfo>* out) {
  out->clear();
  if (!env_->is_dir(path_of(folder))) return Status::Ok();
  return list_into(folder, out);
}

Status EnvBlobStore::list_into(const std::string& folder, std::vector<BlobInfo>* out) {
  std::vector<std::string> names;
  Status s = env_->list_dir(path_of(folder), &names);
  if (!s.ok()) return s;
  for (const std::string& name : names) {
    const std::string relative = folder + "/" + name;
    if (env_->is_dir(path_of(relative))) {
      s = list_into(relative, out);
      if (!s.ok()) return s;
      continue;
    }
    if (is_temp_name(name)) continue;
    BlobInfo info{relative, 0};
    // A blob removed between the listing and here is simply not listed.
    if (env_->file_size(path_of(relative), &info.bytes).ok()) out->push_back(std::move(info));
  }
  return Status::Ok();
}

Status EnvBlobStore::remove(const std::string& name) {
  Status s = env_->remove_file(path_of(name));
  if (!s.ok() || !durable_) return s;
  return env_->sync_dir(parent_dir(path_of(name)));
}

Status EnvBlobStore::quarantine(const std::string& name) {
  std::string flat = name;
  for (char& c : flat) {
    if (c == '/') c = '_';
  }
  const std::string target = std::string(kQuarantineFolder) + "/" + flat;
  Status s = ensure_parent(target);
  if (!s.ok()) return s;
  return env_->rename_file(path_of(name), path_of(target));
}

}  // namespace qmlx
