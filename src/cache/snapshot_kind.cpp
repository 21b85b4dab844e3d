#include "cache/snapshot_kind.h"

namespace qmlx {

std::string_view snapshot_kind_name(SnapshotKind kind) {
  switch (kind) {
    case SnapshotKind::kMessageBoundary:
      return "message_boundary";
    case SnapshotKind::kUserStart:
      return "user_start";
    case SnapshotKind::kPromptEnd:
      return "prompt_end";
    case SnapshotKind::kGenerationEnd:
      return "generation_end";
    case SnapshotKind::kInterrupted:
      return "interrupted";
    case SnapshotKind::kPrefillProgress:
      return "prefill_progress";
    case SnapshotKind::kCanonicalHistory:
      return "canonical_history";
    case SnapshotKind::kInterval:
      return "interval";
    case SnapshotKind::kEditPoint:
      return "edit_point";
    case SnapshotKind::kSharedPrefix:
      return "shared_prefix";
  }
  return "unknown";
}

std::optional<SnapshotKind> snapshot_kind_from_name(std::string_view name) {
  for (SnapshotKind kind : kAllSnapshotKinds) {
    if (snapshot_kind_name(kind) == name) return kind;
  }
  return std::nullopt;
}

int snapshot_kind_value(SnapshotKind kind) {
  switch (kind) {
    case SnapshotKind::kInterval:
      return 0;
    case SnapshotKind::kPrefillProgress:
      return 1;
    case SnapshotKind::kGenerationEnd:
      return 2;
    case SnapshotKind::kInterrupted:
      return 3;
    case SnapshotKind::kEditPoint:  // only useful when the agent edits there, like user_start
      return 4;
    case SnapshotKind::kPromptEnd:
      return 5;
    case SnapshotKind::kUserStart:
    case SnapshotKind::kSharedPrefix:  // the next request of the burst starts there, like a turn
      return 6;
    case SnapshotKind::kCanonicalHistory:
      return 7;
    case SnapshotKind::kMessageBoundary:
      return 8;
  }
  return 0;
}

}  // namespace qmlx
