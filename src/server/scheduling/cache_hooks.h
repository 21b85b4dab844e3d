// CacheHooks: the points in a request's life where the prefix cache acts. The scheduler calls
// them on the thread of the slot that runs the request, in order: lookup_and_restore before
// prefill, on_prefill_progress between prefill chunks, on_prompt_end after prefill, then exactly
// one of on_generation_end or on_interrupted, and on_idle after each request (idle work that
// gives way to the next). With --parallel N the N slots call concurrently, each with its own
// session: an implementation is thread-safe and keeps what it remembers per session. The
// default does nothing (no cache): the server is complete without one, and the cache plugs in by
// implementing this.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "engine/session_state.h"
#include "model/sequence_image.h"

namespace qmlx::server {

class InferenceSession;

// The prompt as the cache needs it: ids plus the message-boundary offsets (-1 when unknown) and
// the edit points where injected reminder blocks start (ascending).
struct PromptView {
  std::span<const int32_t> ids;
  int64_t last_message_end = -1;
  int64_t last_user_start = -1;
  std::span<const int64_t> edit_points;
  // True once the request's client has gone (a hook that waits stops waiting); may be empty.
  std::function<bool()> cancelled;
};

// A divergence as the status page shows it: where the prompt left the cached prefix, and why
// it likely did. The texts come from the prompt; the page shows them only with --ui-show-text.
struct DivergenceReport {
  int64_t position = 0;  // first token where the prompt and the cached prefix differ
  int64_t restored = 0;  // what the lookup restored
  // The likely cause's kind: a volatile span's ("date", "time", "uuid", "hex_id", "unix_time",
  // "client_header"), or "other" when the split falls on none of them.
  std::string cause = "other";
  std::string fix;  // what to change on the client's side ("" for "other")
  std::string span, before, cached, incoming;
};

struct CacheLookupResult {
  // Tokens [0, cached_tokens) of the prompt were installed into the session by the hook; the
  // server prefills the rest. 0 means a miss and the session was left empty.
  int64_t cached_tokens = 0;
  std::string kind;         // snapshot kind used ("prompt_end", "message_boundary", ...)
  std::string tier;         // "ram" or "disk"
  std::string miss_reason;  // on a miss: "no_candidate", "disabled", "checksum", "tokens", ...
  // Time spent waiting for another request, prefilling the same prefix at the same time, to
  // checkpoint where the two prompts part (0: no wait).
  double shared_wait_ms = 0;
  std::string rejected;  // reasons of candidates that failed a check, comma-separated
  uint64_t restore_bytes = 0;
  // Stage timings in milliseconds, for the log line and the timings object.
  double lookup_ms = 0, read_ms = 0, verify_ms = 0, install_ms = 0;
  // Where the prompt diverged from the deepest cached prefix, decoded both sides (for the log).
  std::string divergence;
  std::optional<DivergenceReport> divergence_report;  // the same, structured
};

// The conversation as the chat template will render it in the next turn, up to where that turn
// adds its new message (the reply re-rendered as history: stripped reasoning, normalised tool
// calls), once for each role the next message may have, likeliest first. Computed lazily, in
// idle time; empty when the route has no conversation.
struct CanonicalHistories {
  std::vector<std::vector<int32_t>> ids;
  // The images in them (all begin with the prompt's messages, so an image sits on the same rows
  // in each), placed as InferenceSession::set_images takes them, with the vision tower's rows
  // for those that end after `from_row` (where the pre-fill starts); null for text.
  std::function<std::vector<SequenceImage>(int64_t from_row)> images;
};
using CanonicalHistory = std::function<CanonicalHistories()>;

// Asked by idle work before each step: true when it must stop because a request waits or the
// server stops, unless the waiting request's prompt begins with `needed` (work that request
// would do anyway: an empty `needed` always gives way to it).
using IdlePreemption = std::function<bool(std::span<const int32_t> needed)>;

// Whether idle work that produces `needed` is work a request with `prompt` would do anyway.
inline bool prompt_needs(std::span<const int32_t> prompt, std::span<const int32_t> needed) {
  return !needed.empty() && needed.size() <= prompt.size() &&
         std::equal(needed.begin(), needed.end(), prompt.begin());
}

class CacheHooks {
 public:
  virtual ~CacheHooks() = default;
  // `session` holds what the last request or the idle work left in it. The hook continues from
  // it when it knows those tokens begin the prompt, else restores into it (state_sink().reset(n)
  // and fill) or resets it; cached_tokens must then be the session's position.
  virtual CacheLookupResult lookup_and_restore(const PromptView& prompt,
                                               InferenceSession& session) {
    return {};
  }
  // Positions in (from, prompt length) where the prefill must pause so that on_prefill_progress
  // sees the session exactly there (message boundaries, periodic progress points); ascending.
  virtual std::vector<int64_t> checkpoint_positions(const PromptView& prompt, int64_t from) {
    return {};
  }
  // The prefill is about to feed the prompt's tokens [from, end): the end to use instead, at
  // most `end`, when a position in between was asked for while it runs (another request waits
  // for a checkpoint there). on_prefill_progress follows at the returned end.
  virtual int64_t chunk_end(const StateSource& session, int64_t from, int64_t end) { return end; }
  // After each prefill chunk; session.position() tokens of the prompt are done.
  virtual void on_prefill_progress(const PromptView& prompt, const StateSource& session) {}
  // The whole prompt is prefilled; session holds its logits.
  virtual void on_prompt_end(const PromptView& prompt, const StateSource& session) {}
  // After each generated token is fed: `tokens` is prompt + generated so far, the session is at
  // tokens.size() (periodic `interval` checkpoints of long generations).
  virtual void on_decode_step(const PromptView& prompt, std::span<const int32_t> tokens,
                              const StateSource& session) {}
  // Generation ended normally; `tokens` is prompt + generated (all fed to the session except,
  // possibly, the last one, which session.position() tells). `next_turn` renders the canonical
  // history for the idle pre-fill.
  virtual void on_generation_end(std::span<const int32_t> tokens, const StateSource& session,
                                 CanonicalHistory next_turn) {}
  // The client went away or the server is stopping: `tokens` is what the client holds, the
  // prompt (or the part of it prefilled) and the generated tokens whose text reached it. The
  // session may hold more (generation ran ahead of a slow or vanished client) or the last token
  // not yet fed; the hook may rewind or advance it. Returns the checkpoint it left, for the
  // request's log line ("interrupted@N"), or "" when it left none.
  virtual std::string on_interrupted(std::span<const int32_t> tokens, InferenceSession& session) {
    return {};
  }
  // A request ended: a good time for background work (canonical-history pre-fill), before the
  // next request if it needs that work, else while none waits. `session` holds the last
  // request's state and may be advanced or reset by the hook, which must return promptly once
  // `preempted(needed)` is true.
  virtual void on_idle(InferenceSession& session, const IdlePreemption& preempted) {}
  // The server is shutting down: finish pending writes (bounded by the cache's own timeout).
  virtual void flush() {}
};

}  // namespace qmlx::server
