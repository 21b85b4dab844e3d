#include "cache/disk_store.h"

#include "base/logging.h"

namespace qmlx {
namespace {

// "<32 hex>.<ext>" -> hash.
std::optional<Hash128> hash_of_file(const std::string& name, const std::string& ext) {
  size_t slash = name.find_last_of('/');
  std::string base = slash == std::string::npos ? name : name.substr(slash + 1);
  if (base.size() != 32 + ext.size() || base.compare(32, ext.size(), ext) != 0) {
    return std::nullopt;
  }
  return Hash128::from_hex(std::string_view(base).substr(0, 32));
}

}  // namespace

std::optional<Hash128> store_fingerprint_of(const std::string& folder_name) {
  return Hash128::from_hex(folder_name);
}

DiskStore::DiskStore(Env* env, std::string dir, bool fsync)
    : env_(env), blobs_(env, std::move(dir), fsync) {}

std::string DiskStore::chunk_name(const Hash128& h) {
  const std::string hex = h.hex();
  return std::string(kChunksFolder) + "/" + hex.substr(0, 2) + "/" + hex + ".kv";
}

std::string DiskStore::snapshot_name(const Hash128& id) {
  return std::string(kSnapshotsFolder) + "/" + id.hex() + ".snap";
}

std::optional<Hash128> DiskStore::hash_of_name(const std::string& name, bool* is_chunk) {
  *is_chunk = name.rfind(std::string(kChunksFolder) + "/", 0) == 0;
  return hash_of_file(name, *is_chunk ? ".kv" : ".snap");
}

std::string DiskStore::pin_name(const Hash128& id) {
  return std::string(kPinsFolder) + "/" + id.hex() + ".pin";
}

Status DiskStore::open(StoreScan* scan) {
  *scan = StoreScan{};
  Status s = blobs_.open(&scan->leftovers_removed);
  if (s.ok()) s = scan_snapshots(scan);
  if (s.ok()) s = scan_chunks(scan);
  if (s.ok()) s = blobs_.list(EnvBlobStore::kQuarantineFolder, &scan->quarantined);
  return s;
}

Status DiskStore::scan_snapshots(StoreScan* scan) {
  std::vector<BlobInfo> files;
  Status s = blobs_.list(kSnapshotsFolder, &files);
  if (!s.ok()) return s;
  for (const BlobInfo& file : files) {
    std::optional<Hash128> id = hash_of_file(file.name, ".snap");
    StoredSnapshot snapshot;
    Status read = id ? read_snapshot_header(*id, &snapshot) : Status::Corruption("bad name");
    if (read.ok() && snapshot.header.id != *id) read = Status::Corruption("id mismatch");
    if (read.ok()) {
      scan->snapshots.push_back(std::move(snapshot));
      continue;
    }
    if (read.code() == Status::Code::kIOError) return read;
    log_warn("cache: quarantining " + file.name + ": " + read.ToString());
    ++scan->corrupt_quarantined;
    s = blobs_.quarantine(file.name);
    if (!s.ok()) return s;
  }
  return Status::Ok();
}

Status DiskStore::scan_chunks(StoreScan* scan) {
  std::vector<BlobInfo> files;
  Status s = blobs_.list(kChunksFolder, &files);
  if (!s.ok()) return s;
  for (const BlobInfo& file : files) {
    std::optional<Hash128> hash = hash_of_file(file.name, ".kv");
    if (hash) scan->chunks.push_back(StoredChunk{*hash, file.bytes});
  }
  return Status::Ok();
}

Status DiskStore::read_snapshot_header(const Hash128& id, StoredSnapshot* out) {
  const std::string name = snapshot_name(id);
  uint64_t size = 0;
  Status s = blobs_.size(name, &size);
  if (!s.ok()) return s;
  std::vector<uint8_t> header(kSnapshotHeaderBytes);
  if (size < header.size()) return Status::Corruption(name + ": truncated header");
  s = blobs_.read_range(name, 0, header.size(), header.data());
  if (s.ok()) s = decode_snapshot_header(header, size, &out->header);
  if (!s.ok()) return s;
  const SectionRef& list = out->header.sections[kChunkList];
  std::vector<uint8_t> list_bytes(list.size);
  s = blobs_.read_range(name, list.offset, list.size, list_bytes.data());
  if (!s.ok()) return s;
  if (checksum64(list_bytes) != list.checksum) return Status::Corruption(name + ": chunk list");
  out->chunks = decode_chunk_list(list_bytes);
  out->bytes = size;
  out->pinned = is_pinned(id);
  return Status::Ok();
}

Status DiskStore::read_snapshot_tokens(const SnapshotHeader& header, std::vector<int32_t>* out) {
  const SectionRef& tokens = header.sections[kTokens];
  out->resize(tokens.size / 4);
  return blobs_.read_range(snapshot_name(header.id), tokens.offset, tokens.size,
                           reinterpret_cast<uint8_t*>(out->data()));
}

Status DiskStore::put_chunk(const Hash128& h, std::span<const uint8_t> file) {
  return blobs_.put(chunk_name(h), file);
}

Status DiskStore::put_snapshot(const Hash128& id, std::span<const uint8_t> file) {
  return blobs_.put(snapshot_name(id), file);
}

Status DiskStore::get_chunk(const Hash128& h, std::vector<uint8_t>* out) {
  return blobs_.get(chunk_name(h), out);
}

Status DiskStore::get_snapshot(const Hash128& id, std::vector<uint8_t>* out) {
  return blobs_.get(snapshot_name(id), out);
}

Status DiskStore::remove_chunk(const Hash128& h) { return blobs_.remove(chunk_name(h)); }

Status DiskStore::remove_snapshot(const Hash128& id) {
  if (is_pinned(id)) blobs_.remove(pin_name(id));
  return blobs_.remove(snapshot_name(id));
}

Status DiskStore::quarantine_chunk(const Hash128& h) { return blobs_.quarantine(chunk_name(h)); }

Status DiskStore::quarantine_snapshot(const Hash128& id) {
  if (is_pinned(id)) blobs_.remove(pin_name(id));
  return blobs_.quarantine(snapshot_name(id));
}

Status DiskStore::set_pinned(const Hash128& id, bool pinned) {
  if (!blobs_.exists(snapshot_name(id))) return Status::NotFound("snapshot " + id.hex());
  if (!pinned) return is_pinned(id) ? blobs_.remove(pin_name(id)) : Status::Ok();
  const uint8_t marker[1] = {'1'};
  return blobs_.put(pin_name(id), marker);
}

bool DiskStore::is_pinned(const Hash128& id) { return blobs_.exists(pin_name(id)); }

Status DiskStore::clear_quarantine(uint64_t* freed) {
  std::vector<BlobInfo> files;
  Status s = blobs_.list(EnvBlobStore::kQuarantineFolder, &files);
  for (const BlobInfo& file : files) {
    if (!s.ok()) break;
    s = blobs_.remove(file.name);
    if (s.ok()) *freed += file.bytes;
  }
  return s;
}

}  // namespace qmlx
