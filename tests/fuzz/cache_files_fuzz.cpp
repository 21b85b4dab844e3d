// Fuzz target: the cache file decoders (chunk header and chunk, snapshot header, its sections
// and chunk list, snapshot ids) on an arbitrary file. Each input is decoded twice: as written,
// and with its header checksum made valid (as a file written on purpose would be), so the
// fuzzer reaches the shape checks behind the checksum. A bad file is a Status, never a crash.
#include <cstring>
#include <vector>

#include "cache/file_format.h"
#include "cache/hash.h"

namespace {

// Writes magic, version, header size and a matching header checksum into `file`.
void make_header_valid(std::vector<uint8_t>& file, const char (&magic)[9], size_t header_bytes) {
  if (file.size() < header_bytes) return;
  std::memcpy(file.data(), magic, 8);
  const uint32_t version = qmlx::kCacheFormatVersion, size = uint32_t(header_bytes);
  std::memcpy(file.data() + 8, &version, 4);
  std::memcpy(file.data() + 12, &size, 4);
  const uint64_t sum = qmlx::checksum64(std::span<const uint8_t>(file.data(), header_bytes - 8));
  std::memcpy(file.data() + header_bytes - 8, &sum, 8);
}

void decode_all(std::span<const uint8_t> file) {
  qmlx::ChunkHeader chunk;
  if (qmlx::decode_chunk_header(file, file.size(), &chunk).ok()) {
    qmlx::verify_chunk(file, chunk.chain_hash, &chunk);
  }
  qmlx::SnapshotHeader snapshot;
  if (qmlx::decode_snapshot_header(file, file.size(), &snapshot).ok()) {
    qmlx::verify_snapshot_sections(snapshot, file);
    const qmlx::SectionRef& list = snapshot.sections[qmlx::kChunkList];
    qmlx::decode_chunk_list(file.subspan(list.offset, list.size));
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::span<const uint8_t> file(data, size);
  decode_all(file);
  qmlx::Hash128::from_hex(std::string_view(reinterpret_cast<const char*>(data), size));
  std::vector<uint8_t> chunk(data, data + size);
  make_header_valid(chunk, "QMLXCHK1", qmlx::kChunkHeaderBytes);
  decode_all(chunk);
  std::vector<uint8_t> snapshot(data, data + size);
  make_header_valid(snapshot, "QMLXSNP1", qmlx::kSnapshotHeaderBytes);
  decode_all(snapshot);
  return 0;
}
