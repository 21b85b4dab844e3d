// Explain: the divergence record that says why a prompt restored less than it shares with
// the cache: the token position where the prompt and the nearest cached prefix split, which
// snapshot that prefix belongs to, and the tokens on both sides of the split. One look at the
// decoded text finds a timestamp or a request id in a system prompt. The cache returns token
// ids; the server decodes them with its tokenizer (format_divergence takes the decoder).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "cache/hash.h"
#include "cache/snapshot_kind.h"
#include "cache/volatile_span.h"

namespace qmlx {

struct Divergence {
  int64_t position = 0;  // first token where the prompt and the cached prefix differ
  int64_t restored = 0;  // what the lookup restored (0 on a miss)
  Hash128 snapshot_id;
  SnapshotKind snapshot_kind = SnapshotKind::kInterval;
  int64_t snapshot_tokens = 0;
  std::vector<int32_t> before;          // the shared tokens just before the split
  std::vector<int32_t> cached_after;    // what the cache has after the split
  std::vector<int32_t> incoming_after;  // what the prompt has after the split
  // Why the shared run past `restored` gave no deeper resume point: "no_resume_point" (no
  // snapshot was taken inside it), "rejected:<reason>" or "evicted"; empty when not looked at.
  std::string unrestored;
};

// The split between `prompt` and a cached token sequence, when it is worth reporting: the two
// share at least min_shared tokens more than were restored, or they agree again just after
// the split (a few replaced tokens, such as an id or a timestamp, cost the whole rest).
// `context` tokens are kept on each side.
std::optional<Divergence> find_divergence(std::span<const int32_t> prompt,
                                          std::span<const int32_t> cached, int64_t restored,
                                          int64_t min_shared, int context = 40);

using TokenDecoder = std::function<std::string(std::span<const int32_t>)>;

// The divergence decoded: the text on both sides of the split, and the likely cause when the
// split falls on a volatile-looking span (see volatile_span.h).
struct DivergenceText {
  std::string before;    // the shared text just before the split
  std::string cached;    // what the cache has after it
  std::string incoming;  // what the prompt has after it
  std::optional<VolatileSpan> cause;
};
DivergenceText describe_divergence(const Divergence& d, const TokenDecoder& decode);

// One log line: "divergence pos=<p> restored=<r> [unrestored=<why>] snapshot=<id> kind=<k>
// before=<..> cached=<..> incoming=<..>", the texts JSON-quoted so control characters stay
// visible, then " likely_cause=<kind> span=<..> fix=<..>" when the split falls on a
// volatile-looking span (a date, a time, an id, a known client header; see volatile_span.h).
std::string format_divergence(const Divergence& d, const TokenDecoder& decode);
// The same line from a divergence already decoded.
std::string format_divergence(const Divergence& d, const DivergenceText& text);

}  // namespace qmlx
