// VolatileSpan: the likely cause of a divergence, read from the decoded text on both sides of
// the split. A prompt that diverges on a date, a time, a UUID, a hex id or a known client
// header was almost surely changed by the client on its own (a clock, a request id) rather
// than by the conversation, and the fix is on the client's side; this names the span and that
// fix for the divergence log line. Text patterns only: the cache knows no HTTP and no client.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace qmlx {

struct VolatileSpan {
  std::string kind;  // "client_header", "uuid", "date", "time", "unix_time", "hex_id"
  std::string text;  // the span as the incoming prompt has it (or the cached one, if only there)
  std::string fix;   // what to change on the client's side
};

// `cached` and `incoming` are the same shared text followed by what each side has after the
// split. The span that covers the first character where they differ, if it looks volatile.
std::optional<VolatileSpan> find_volatile_span(std::string_view cached, std::string_view incoming);

}  // namespace qmlx
