#include "cache/verify.h"

#include <cstring>
#include <vector>

namespace qmlx {
namespace {

class Verifier {
 public:
  Verifier(DiskStore& store, const Hash128& id, const Hash128& fingerprint)
      : store_(store), fingerprint_(fingerprint) {
    report_.id = id;
  }

  VerifyReport run() {
    if (check_snapshot() && check_chunks()) report_.ok = true;
    return report_;
  }

 private:
  bool fail(RejectReason reason, const std::string& file, const std::string& detail) {
    report_.reason = reason;
    report_.bad_file = file;
    report_.detail = file + ": " + detail;
    return false;
  }

  static RejectReason reason_of(const Status& s) {
    if (s.code() == Status::Code::kIOError || s.code() == Status::Code::kNotFound) {
      return RejectReason::kIo;
    }
    return s.message().find("checksum") != std::string::npos ? RejectReason::kChecksum
                                                             : RejectReason::kFormat;
  }

  bool check_snapshot() {
    const std::string name = DiskStore::snapshot_name(report_.id);
    Status s = store_.get_snapshot(report_.id, &file_);
    if (!s.ok())
      return fail(reason_of(s), s.code() == Status::Code::kNotFound ? "" : name, s.ToString());
    report_.bytes_checked += file_.size();
    s = decode_snapshot_header(file_, file_.size(), &header_);
    if (s.ok()) s = verify_snapshot_sections(header_, file_);
    if (!s.ok()) return fail(reason_of(s), name, s.ToString());
    if (header_.fingerprint != fingerprint_) {
      return fail(RejectReason::kFingerprint, name, "written under another model");
    }
    const SectionRef& t = header_.sections[kTokens];
    tokens_.resize(t.size / 4);
    std::memcpy(tokens_.data(), file_.data() + t.offset, t.size);
    chain_ = chain_hashes(fingerprint_, tokens_, int(header_.chunk_tokens));
    const SectionRef& l = header_.sections[kChunkList];
    std::vector<Hash128> list =
        decode_chunk_list(std::span<const uint8_t>(file_).subspan(l.offset, l.size));
    const Hash128 id = prefix_hash(fingerprint_, tokens_, int(header_.chunk_tokens));
    if (id != report_.id || header_.id != report_.id || header_.base != chain_.back() ||
        !std::equal(list.begin(), list.end(), chain_.begin() + 1, chain_.end())) {
      return fail(RejectReason::kTokens, name, "hashes do not match its token blob");
    }
    return true;
  }

  bool check_chunks() {
    std::vector<uint8_t> chunk;
    for (size_t i = 1; i < chain_.size(); ++i) {
      const std::string name = DiskStore::chunk_name(chain_[i]);
      Status s = store_.get_chunk(chain_[i], &chunk);
      if (!s.ok()) {
        return fail(reason_of(s), s.code() == Status::Code::kNotFound ? "" : name, s.ToString());
      }
      report_.bytes_checked += chunk.size();
      ChunkHeader h;
      s = verify_chunk(chunk, chain_[i], &h);
      if (!s.ok()) return fail(reason_of(s), name, s.ToString());
      if (h.fingerprint != fingerprint_) {
        return fail(RejectReason::kFingerprint, name, "written under another model");
      }
      if (h.chunk_tokens != header_.chunk_tokens ||
          h.attention_layers != header_.attention_layers ||
          h.kv_row_bytes != header_.kv_row_bytes) {
        return fail(RejectReason::kFormat, name, "shape differs from its snapshot");
      }
      const size_t bytes = size_t(h.chunk_tokens) * 4;
      if (std::memcmp(chunk.data() + h.tokens_offset(), tokens_.data() + (i - 1) * h.chunk_tokens,
                      bytes) != 0) {
        return fail(RejectReason::kTokens, name, "tokens differ from the snapshot's");
      }
    }
    return true;
  }

  DiskStore& store_;
  Hash128 fingerprint_;
  VerifyReport report_;
  std::vector<uint8_t> file_;
  SnapshotHeader header_;
  std::vector<int32_t> tokens_;
  std::vector<Hash128> chain_;
};

}  // namespace

VerifyReport verify_stored_snapshot(DiskStore& store, const Hash128& id,
                                    const Hash128& fingerprint) {
  return Verifier(store, id, fingerprint).run();
}

}  // namespace qmlx
