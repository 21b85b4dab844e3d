#include "cache/file_format.h"

#include <bit>
#include <cstring>

namespace qmlx {
namespace {

static_assert(std::endian::native == std::endian::little,
              "the cache file formats are little-endian and written as in memory");

constexpr char kChunkMagic[8] = {'Q', 'M', 'L', 'X', 'C', 'H', 'K', '1'};
constexpr char kSnapshotMagic[8] = {'Q', 'M', 'L', 'X', 'S', 'N', 'P', '1'};

// Appends plain fields to a fixed-size header buffer.
class HeaderWriter {
 public:
  explicit HeaderWriter(std::span<uint8_t> out) : out_(out) {}
  template <typename T>
  void put(const T& value) {
    std::memcpy(out_.data() + pos_, &value, sizeof(T));
    pos_ += sizeof(T);
  }
  void put_bytes(const void* data, size_t n) {
    std::memcpy(out_.data() + pos_, data, n);
    pos_ += n;
  }
  // Zero padding up to the checksum slot, then the checksum over everything before it.
  void seal() {
    const size_t slot = out_.size() - 8;
    std::memset(out_.data() + pos_, 0, slot - pos_);
    uint64_t sum = checksum64(out_.first(slot));
    std::memcpy(out_.data() + slot, &sum, 8);
  }

 private:
  std::span<uint8_t> out_;
  size_t pos_ = 0;
};

class HeaderReader {
 public:
  explicit HeaderReader(std::span<const uint8_t> in) : in_(in) {}
  template <typename T>
  T get() {
    T value;
    std::memcpy(&value, in_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return value;
  }
  bool magic_is(const char (&magic)[8]) {
    bool same = std::memcmp(in_.data() + pos_, magic, 8) == 0;
    pos_ += 8;
    return same;
  }
  bool checksum_ok() const {
    const size_t slot = in_.size() - 8;
    uint64_t stored;
    std::memcpy(&stored, in_.data() + slot, 8);
    return stored == checksum64(in_.first(slot));
  }

 private:
  std::span<const uint8_t> in_;
  size_t pos_ = 0;
};

// Checks magic, version and checksum common to both headers.
Status open_header(HeaderReader& reader, const char (&magic)[8], size_t header_bytes,
                   const char* what) {
  if (!reader.magic_is(magic)) return Status::Corruption(std::string(what) + ": bad magic");
  if (reader.get<uint32_t>() != kCacheFormatVersion) {
    return Status::InvalidArgument(std::string(what) + ": unsupported format version");
  }
  if (reader.get<uint32_t>() != header_bytes) {
    return Status::Corruption(std::string(what) + ": bad header size");
  }
  if (!reader.checksum_ok()) return Status::Corruption(std::string(what) + ": header checksum");
  return Status::Ok();
}

std::span<const uint8_t> section_bytes(std::span<const uint8_t> file, const SectionRef& s) {
  return file.subspan(s.offset, s.size);
}

}  // namespace

ChunkHeader make_chunk_header(const StateLayout& layout, int chunk_tokens,
                              const Hash128& fingerprint, const Hash128& chain_hash) {
  ChunkHeader h;
  h.fingerprint = fingerprint;
  h.chain_hash = chain_hash;
  h.chunk_tokens = uint32_t(chunk_tokens);
  h.attention_layers = uint32_t(layout.attention_layers.size());
  h.kv_row_bytes = layout.kv_row_bytes();
  return h;
}

void seal_chunk(ChunkHeader h, std::span<uint8_t> file) {
  h.tokens_checksum = checksum64(file.subspan(h.tokens_offset(), size_t(h.chunk_tokens) * 4));
  h.payload_checksum = checksum64(file.subspan(h.payload_offset(), h.payload_bytes()));
  HeaderWriter w(file.first(kChunkHeaderBytes));
  w.put_bytes(kChunkMagic, 8);
  w.put<uint32_t>(kCacheFormatVersion);
  w.put<uint32_t>(kChunkHeaderBytes);
  w.put(h.fingerprint);
  w.put(h.chain_hash);
  w.put(h.chunk_tokens);
  w.put(h.attention_layers);
  w.put(h.kv_row_bytes);
  w.put(h.tokens_checksum);
  w.put(h.payload_checksum);
  w.seal();
}

Status decode_chunk_header(std::span<const uint8_t> file_prefix, uint64_t file_size,
                           ChunkHeader* out) {
  if (file_prefix.size() < kChunkHeaderBytes) return Status::Corruption("chunk: truncated header");
  HeaderReader r(file_prefix.first(kChunkHeaderBytes));
  Status s = open_header(r, kChunkMagic, kChunkHeaderBytes, "chunk");
  if (!s.ok()) return s;
  ChunkHeader h;
  h.fingerprint = r.get<Hash128>();
  h.chain_hash = r.get<Hash128>();
  h.chunk_tokens = r.get<uint32_t>();
  h.attention_layers = r.get<uint32_t>();
  h.kv_row_bytes = r.get<uint64_t>();
  h.tokens_checksum = r.get<uint64_t>();
  h.payload_checksum = r.get<uint64_t>();
  if (h.chunk_tokens == 0 || h.kv_row_bytes > (1u << 30) || h.attention_layers > 4096 ||
      h.file_bytes() != file_size) {
    return Status::Corruption("chunk: size does not match its header");
  }
  *out = h;
  return Status::Ok();
}

Status verify_chunk(std::span<const uint8_t> file, const Hash128& expected_chain_hash,
                    ChunkHeader* out) {
  Status s = decode_chunk_header(file, file.size(), out);
  if (!s.ok()) return s;
  const ChunkHeader& h = *out;
  if (h.chain_hash != expected_chain_hash) return Status::Corruption("chunk: name mismatch");
  if (checksum64(file.subspan(h.tokens_offset(), size_t(h.chunk_tokens) * 4)) !=
      h.tokens_checksum) {
    return Status::Corruption("chunk: tokens checksum");
  }
  if (checksum64(file.subspan(h.payload_offset(), h.payload_bytes())) != h.payload_checksum) {
    return Status::Corruption("chunk: K/V checksum");
  }
  return Status::Ok();
}

uint64_t SnapshotHeader::file_bytes() const {
  const SectionRef& last = sections[kLogits];
  return last.offset + last.size;
}

void SnapshotHeader::place_sections() {
  const uint64_t sizes[kSectionCount] = {
      uint64_t(position) * 4,
      uint64_t(full_chunks()) * sizeof(Hash128),
      2 * uint64_t(attention_layers) * kv_row_bytes * uint64_t(tail_tokens()),
      uint64_t(recurrent_layers) * (conv_bytes + ssm_bytes),
      has_logits ? uint64_t(logits_count) * 4 : 0,
  };
  // Sections start 64-byte aligned so the float states can be used in place from a buffer.
  uint64_t offset = kSnapshotHeaderBytes;
  for (int i = 0; i < kSectionCount; ++i) {
    offset = (offset + 63) & ~uint64_t(63);
    sections[i].offset = offset;
    sections[i].size = sizes[i];
    offset += sizes[i];
  }
}

SnapshotHeader make_snapshot_header(const StateLayout& layout, int chunk_tokens, int64_t position,
                                    bool has_logits) {
  SnapshotHeader h;
  h.position = position;
  h.has_logits = has_logits;
  h.chunk_tokens = uint32_t(chunk_tokens);
  h.attention_layers = uint32_t(layout.attention_layers.size());
  h.kv_row_bytes = layout.kv_row_bytes();
  h.recurrent_layers = uint32_t(layout.recurrent_layers.size());
  h.conv_bytes = layout.conv_state_bytes();
  h.ssm_bytes = layout.ssm_state_bytes();
  h.logits_count = uint32_t(layout.vocab_size);
  h.place_sections();
  return h;
}

void seal_snapshot(SnapshotHeader h, std::span<uint8_t> file) {
  for (SectionRef& section : h.sections) {
    section.checksum = checksum64(section_bytes(file, section));
  }
  HeaderWriter w(file.first(kSnapshotHeaderBytes));
  w.put_bytes(kSnapshotMagic, 8);
  w.put<uint32_t>(kCacheFormatVersion);
  w.put<uint32_t>(kSnapshotHeaderBytes);
  w.put(h.fingerprint);
  w.put(h.id);
  w.put(h.base);
  w.put<uint8_t>(uint8_t(h.kind));
  w.put<uint8_t>(h.has_logits ? 1 : 0);
  w.put(h.position);
  w.put(h.chunk_tokens);
  w.put(h.attention_layers);
  w.put(h.kv_row_bytes);
  w.put(h.recurrent_layers);
  w.put(h.conv_bytes);
  w.put(h.ssm_bytes);
  w.put(h.logits_count);
  w.put(h.created_ms);
  for (const SectionRef& section : h.sections) w.put(section);
  w.seal();
}

Status decode_snapshot_header(std::span<const uint8_t> bytes, uint64_t file_size,
                              SnapshotHeader* out) {
  if (bytes.size() < kSnapshotHeaderBytes) return Status::Corruption("snapshot: truncated header");
  HeaderReader r(bytes.first(kSnapshotHeaderBytes));
  Status s = open_header(r, kSnapshotMagic, kSnapshotHeaderBytes, "snapshot");
  if (!s.ok()) return s;
  SnapshotHeader h;
  h.fingerprint = r.get<Hash128>();
  h.id = r.get<Hash128>();
  h.base = r.get<Hash128>();
  uint8_t kind = r.get<uint8_t>();
  h.has_logits = r.get<uint8_t>() != 0;
  h.position = r.get<int64_t>();
  h.chunk_tokens = r.get<uint32_t>();
  h.attention_layers = r.get<uint32_t>();
  h.kv_row_bytes = r.get<uint64_t>();
  h.recurrent_layers = r.get<uint32_t>();
  h.conv_bytes = r.get<uint64_t>();
  h.ssm_bytes = r.get<uint64_t>();
  h.logits_count = r.get<uint32_t>();
  h.created_ms = r.get<int64_t>();
  for (SectionRef& section : h.sections) section = r.get<SectionRef>();
  if (kind >= kAllSnapshotKinds.size()) return Status::Corruption("snapshot: unknown kind");
  h.kind = SnapshotKind(kind);
  // The sections must be exactly where the shapes put them, and the file exactly that long.
  SnapshotHeader expected = h;
  const bool sane = h.chunk_tokens > 0 && h.position >= 0 && h.position < (int64_t(1) << 34) &&
                    h.kv_row_bytes <= (1u << 30) && h.attention_layers <= 4096 &&
                    h.recurrent_layers <= 4096 && h.conv_bytes <= (1ull << 34) &&
                    h.ssm_bytes <= (1ull << 34);
  if (!sane) return Status::Corruption("snapshot: implausible shape");
  expected.place_sections();
  for (int i = 0; i < kSectionCount; ++i) {
    if (expected.sections[i].offset != h.sections[i].offset ||
        expected.sections[i].size != h.sections[i].size) {
      return Status::Corruption("snapshot: sections do not match its shape");
    }
  }
  if (h.file_bytes() != file_size) return Status::Corruption("snapshot: file size mismatch");
  *out = h;
  return Status::Ok();
}

Status verify_snapshot_sections(const SnapshotHeader& header, std::span<const uint8_t> file) {
  static const char* kNames[kSectionCount] = {"token blob", "chunk list", "tail K/V",
                                              "recurrent states", "logits"};
  if (file.size() != header.file_bytes()) return Status::Corruption("snapshot: file size");
  // Alignment padding is written as zeros; checking it leaves no byte of the file unguarded.
  uint64_t end = kSnapshotHeaderBytes;
  for (const SectionRef& section : header.sections) {
    for (uint64_t i = end; i < section.offset; ++i) {
      if (file[i] != 0) return Status::Corruption("snapshot: padding checksum");
    }
    end = section.offset + section.size;
  }
  for (int i = 0; i < kSectionCount; ++i) {
    if (checksum64(section_bytes(file, header.sections[i])) != header.sections[i].checksum) {
      return Status::Corruption(std::string("snapshot: ") + kNames[i] + " checksum");
    }
  }
  return Status::Ok();
}

std::vector<Hash128> decode_chunk_list(std::span<const uint8_t> section) {
  std::vector<Hash128> list(section.size() / sizeof(Hash128));
  std::memcpy(list.data(), section.data(), list.size() * sizeof(Hash128));
  return list;
}

bool chunk_matches_layout(const ChunkHeader& h, const StateLayout& layout, int chunk_tokens) {
  return h.chunk_tokens == uint32_t(chunk_tokens) &&
         h.attention_layers == layout.attention_layers.size() &&
         h.kv_row_bytes == layout.kv_row_bytes();
}

bool snapshot_matches_layout(const SnapshotHeader& h, const StateLayout& layout, int chunk_tokens) {
  return h.chunk_tokens == uint32_t(chunk_tokens) &&
         h.attention_layers == layout.attention_layers.size() &&
         h.kv_row_bytes == layout.kv_row_bytes() &&
         h.recurrent_layers == layout.recurrent_layers.size() &&
         h.conv_bytes == layout.conv_state_bytes() && h.ssm_bytes == layout.ssm_state_bytes() &&
         (!h.has_logits || h.logits_count == uint32_t(layout.vocab_size));
}

}  // namespace qmlx
