#include "cache/snapshot_listing.h"

namespace qmlx {

nlohmann::json SnapshotListing::to_json() const {
  return nlohmann::json{{"fingerprint", fingerprint.hex()},
                        {"id", id.hex()},
                        {"kind", snapshot_kind_name(kind)},
                        {"tokens", tokens},
                        {"bytes", bytes},
                        {"chunks", chunk_count},
                        {"created_ms", created_ms},
                        {"last_used_ms", last_used_ms},
                        {"pinned", pinned},
                        {"has_logits", has_logits},
                        {"on_disk", on_disk},
                        {"in_memory", in_memory}};
}

SnapshotListing make_listing(const Hash128& fingerprint, const SnapshotEntry& e) {
  SnapshotListing l;
  l.fingerprint = fingerprint;
  l.id = e.header.id;
  l.kind = e.header.kind;
  l.tokens = e.header.position;
  l.bytes = e.bytes;
  l.chunk_count = e.chunks.size();
  l.created_ms = e.header.created_ms;
  l.last_used_ms = e.last_used_ms;
  l.pinned = e.pinned;
  l.has_logits = e.header.has_logits;
  l.on_disk = e.on_disk;
  return l;
}

}  // namespace qmlx
