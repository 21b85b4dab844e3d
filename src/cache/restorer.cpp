#include "cache/restorer.h"

#include <cstring>
#include <vector>

#include "base/elapsed.h"
#include "base/thread_pool.h"
#include "cache/disk_store.h"

namespace qmlx {
namespace {

RejectReason reason_of(const Status& s) {
  if (s.code() == Status::Code::kNotFound || s.code() == Status::Code::kIOError ||
      s.code() == Status::Code::kNoSpace) {
    return RejectReason::kIo;
  }
  if (s.message().find("checksum") != std::string::npos) return RejectReason::kChecksum;
  return RejectReason::kFormat;
}

// A file that could not be read: gone (a clean, partial miss) or unreadable.
RejectReason fetch_failure(const Status& s) {
  return s.code() == Status::Code::kNotFound ? RejectReason::kPartial : RejectReason::kIo;
}

bool same_tokens(std::span<const uint8_t> stored, std::span<const int32_t> prompt) {
  return stored.size() == prompt.size_bytes() &&
         std::memcmp(stored.data(), prompt.data(), stored.size()) == 0;
}

class Restore {
 public:
  Restore(const RestoreRequest& request, const FileFetcher& fetch, StateSink& sink)
      : req_(request), fetch_(fetch), sink_(sink), layout_(sink.layout()) {}

  RestoreOutcome run() {
    const int64_t position = req_.point.position;
    chain_ = chain_hashes(req_.fingerprint, req_.prompt.first(size_t(position)), req_.chunk_tokens);
    if (req_.point.is_snapshot && !load_snapshot()) return fail_reset(false);
    const auto install_start = SteadyClock::now();
    sink_.reset(position);
    out_.install_seconds += seconds_since(install_start);
    if (!restore_chunks()) return fail_reset(true);
    if (req_.point.is_snapshot) install_snapshot();
    out_.ok = true;
    return out_;
  }

 private:
  RestoreOutcome fail_reset(bool installed) {
    if (installed) sink_.reset(0);
    out_.sink_cleared = installed;
    return out_;
  }

  bool reject(RejectReason reason, std::string detail, std::string file) {
    out_.reason = reason;
    out_.detail = std::move(detail);
    out_.bad_file = std::move(file);
    return false;
  }

  FetchedFile fetch(const std::string& name) {
    FetchedFile file = fetch_(name);
    if (file.status.ok()) count_read(file);
    return file;
  }

  void count_read(const FetchedFile& file) {
    out_.bytes_read += file.bytes->size();
    if (!file.from_memory) out_.all_from_memory = false;
    if (file.from_shared) out_.any_from_shared = true;
  }

  bool load_snapshot() {
    const std::string name = DiskStore::snapshot_name(req_.point.id);
    auto start = SteadyClock::now();
    FetchedFile file = fetch(name);
    out_.read_seconds += seconds_since(start);
    if (!file.status.ok()) return reject(fetch_failure(file.status), file.status.ToString(), "");
    start = SteadyClock::now();
    snapshot_ = file.bytes;
    bool ok = verify_snapshot(name);
    out_.verify_seconds += seconds_since(start);
    return ok;
  }

  bool verify_snapshot(const std::string& name) {
    const std::span<const uint8_t> bytes(*snapshot_);
    Status s = decode_snapshot_header(bytes, bytes.size(), &header_);
    if (!s.ok()) return reject(reason_of(s), name + ": " + s.ToString(), name);
    if (header_.fingerprint != req_.fingerprint) {
      return reject(RejectReason::kFingerprint, name + ": written under another model", name);
    }
    if (!snapshot_matches_layout(header_, layout_, req_.chunk_tokens) ||
        header_.id != req_.point.id || header_.position != req_.point.position) {
      return reject(RejectReason::kFormat, name + ": shape does not match the model", name);
    }
    s = verify_snapshot_sections(header_, bytes);
    if (!s.ok()) return reject(reason_of(s), name + ": " + s.ToString(), name);
    if (req_.compare_tokens &&
        !same_tokens(section(kTokens), req_.prompt.first(size_t(header_.position)))) {
      return reject(RejectReason::kTokens, name + ": token blob differs from the prompt", name);
    }
    std::vector<Hash128> list = decode_chunk_list(section(kChunkList));
    if (!std::equal(list.begin(), list.end(), chain_.begin() + 1, chain_.end()) ||
        list.size() + 1 != chain_.size()) {
      return reject(RejectReason::kTokens, name + ": chunk list differs from the prompt", name);
    }
    return true;
  }

  std::span<const uint8_t> section(SnapshotSection which) const {
    const SectionRef& s = header_.sections[which];
    return std::span<const uint8_t>(*snapshot_).subspan(s.offset, s.size);
  }

  bool restore_chunks() {
    const size_t chunks = chain_.size() - 1;
    const size_t batch = size_t(std::max(req_.chunks_in_flight, 1));
    for (size_t first = 0; first < chunks; first += batch) {
      const size_t count = std::min(batch, chunks - first);
      if (!restore_batch(first, count)) return false;
    }
    return true;
  }

  bool restore_batch(size_t first, size_t count) {
    std::vector<FetchedFile> files(count);
    std::vector<Status> checks(count);
    std::vector<ChunkHeader> headers(count);
    auto start = SteadyClock::now();
    default_pool().parallel_for(count, [&](size_t begin, size_t end) {
      for (size_t i = begin; i < end; ++i) {
        files[i] = fetch_(DiskStore::chunk_name(chain_[first + i + 1]));
      }
    });
    out_.read_seconds += seconds_since(start);
    for (size_t i = 0; i < count; ++i) {
      if (!files[i].status.ok()) {
        return reject(fetch_failure(files[i].status), files[i].status.ToString(), "");
      }
      count_read(files[i]);
    }
    start = SteadyClock::now();
    default_pool().parallel_for(count, [&](size_t begin, size_t end) {
      for (size_t i = begin; i < end; ++i)
        checks[i] = verify(first + i, *files[i].bytes, &headers[i]);
    });
    out_.verify_seconds += seconds_since(start);
    for (size_t i = 0; i < count; ++i) {
      if (checks[i].ok()) continue;
      const std::string name = DiskStore::chunk_name(chain_[first + i + 1]);
      RejectReason reason = checks[i].code() == Status::Code::kInvalidArgument
                                ? RejectReason::kFingerprint
                                : reason_of(checks[i]);
      if (checks[i].message() == "tokens") reason = RejectReason::kTokens;
      return reject(reason, name + ": " + checks[i].ToString(), name);
    }
    start = SteadyClock::now();
    for (size_t i = 0; i < count; ++i) install_chunk(first + i, headers[i], *files[i].bytes);
    out_.install_seconds += seconds_since(start);
    return true;
  }

  // Status codes: InvalidArgument = another fingerprint, Corruption("tokens") = other tokens.
  Status verify(size_t chunk_index, const std::vector<uint8_t>& file, ChunkHeader* header) const {
    Status s = verify_chunk(file, chain_[chunk_index + 1], header);
    if (!s.ok()) return s;
    if (header->fingerprint != req_.fingerprint) return Status::InvalidArgument("fingerprint");
    if (!chunk_matches_layout(*header, layout_, req_.chunk_tokens)) {
      return Status::Corruption("chunk shape does not match the model");
    }
    const auto tokens =
        req_.prompt.subspan(chunk_index * size_t(req_.chunk_tokens), size_t(req_.chunk_tokens));
    if (req_.compare_tokens && !same_tokens(std::span<const uint8_t>(file).subspan(
                                                header->tokens_offset(), tokens.size_bytes()),
                                            tokens)) {
      return Status::Corruption("tokens");
    }
    return Status::Ok();
  }

  void install_chunk(size_t chunk_index, const ChunkHeader& h, const std::vector<uint8_t>& file) {
    const int64_t begin = int64_t(chunk_index) * req_.chunk_tokens;
    const uint8_t* payload = file.data() + h.payload_offset();
    for (uint32_t a = 0; a < h.attention_layers; ++a) {
      const uint8_t* k = payload + 2 * size_t(a) * h.rows_bytes();
      sink_.write_kv_rows(int(a), begin, begin + req_.chunk_tokens, k, k + h.rows_bytes());
    }
  }

  void install_snapshot() {
    const auto start = SteadyClock::now();
    const SnapshotHeader& h = header_;
    const int64_t tail_begin = h.full_chunks() * h.chunk_tokens;
    const size_t tail_rows_bytes = size_t(h.tail_tokens()) * h.kv_row_bytes;
    for (uint32_t a = 0; a < h.attention_layers && tail_rows_bytes > 0; ++a) {
      const uint8_t* k = section(kTailKv).data() + 2 * size_t(a) * tail_rows_bytes;
      sink_.write_kv_rows(int(a), tail_begin, h.position, k, k + tail_rows_bytes);
    }
    for (uint32_t r = 0; r < h.recurrent_layers; ++r) {
      const uint8_t* conv = section(kStates).data() + size_t(r) * (h.conv_bytes + h.ssm_bytes);
      sink_.write_recurrent(int(r), reinterpret_cast<const float*>(conv),
                            reinterpret_cast<const float*>(conv + h.conv_bytes));
    }
    const auto logits = section(kLogits);
    sink_.set_logits(std::span<const float>(reinterpret_cast<const float*>(logits.data()),
                                            logits.size() / sizeof(float)));
    out_.install_seconds += seconds_since(start);
  }

  const RestoreRequest& req_;
  const FileFetcher& fetch_;
  StateSink& sink_;
  const StateLayout& layout_;
  std::vector<Hash128> chain_;
  SharedBytes snapshot_;
  SnapshotHeader header_;
  RestoreOutcome out_;
};

}  // namespace

const char* reject_reason_name(RejectReason reason) {
  switch (reason) {
    case RejectReason::kNone:
      return "none";
    case RejectReason::kChecksum:
      return "checksum";
    case RejectReason::kTokens:
      return "tokens";
    case RejectReason::kFingerprint:
      return "fingerprint";
    case RejectReason::kGuard:
      return "guard";
    case RejectReason::kIo:
      return "io";
    case RejectReason::kFormat:
      return "format";
    case RejectReason::kPartial:
      return "partial";
  }
  return "?";
}

RestoreOutcome restore_point(const RestoreRequest& request, const FileFetcher& fetch,
                             StateSink& sink) {
  return Restore(request, fetch, sink).run();
}

}  // namespace qmlx
