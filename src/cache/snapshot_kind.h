// SnapshotKind: why a resume point was taken (cache-design.md "Where snapshots are taken").
// The kind decides what is worth keeping: eviction and a full writer queue give up the
// least valuable kinds first, so a flood of `interval` snapshots never pushes out the
// `message_boundary` snapshot that the next turn of a conversation will restore.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

namespace qmlx {

enum class SnapshotKind : uint8_t {
  kMessageBoundary = 0,
  kUserStart = 1,
  kPromptEnd = 2,
  kGenerationEnd = 3,
  kInterrupted = 4,
  kPrefillProgress = 5,
  kCanonicalHistory = 6,
  kInterval = 7,
  kEditPoint = 8,  // where an injected reminder block starts (agents edit there next turn)
  // Where a request's prompt leaves the prompt of another one prefilling at the same time (a
  // burst of sub-agents with one system prompt): that one checkpoints there, this one restores.
  kSharedPrefix = 9,
};

inline constexpr std::array<SnapshotKind, 10> kAllSnapshotKinds = {
    SnapshotKind::kMessageBoundary,  SnapshotKind::kUserStart,   SnapshotKind::kPromptEnd,
    SnapshotKind::kGenerationEnd,    SnapshotKind::kInterrupted, SnapshotKind::kPrefillProgress,
    SnapshotKind::kCanonicalHistory, SnapshotKind::kInterval,    SnapshotKind::kEditPoint,
    SnapshotKind::kSharedPrefix};

// "message_boundary", "user_start", ...
std::string_view snapshot_kind_name(SnapshotKind kind);
std::optional<SnapshotKind> snapshot_kind_from_name(std::string_view name);

// How much a kind is worth keeping: 0 (dropped and evicted first) to 8 (last). Snapshots the
// next turn is known to need rank highest; periodic progress points rank lowest, because a
// later one of the same kind supersedes them.
int snapshot_kind_value(SnapshotKind kind);

}  // namespace qmlx
