// ActivityLog: the server's recent requests and conversations, as the status page shows them
// (GET / and /admin/ui/status). Bounded in memory and lost on restart: the log lines and the
// metrics are the durable record; this is a window onto the last few hundred requests.
//
// Every request that reached the engine is a turn of its conversation (request_origin.h says
// which); a rejected request appears in the timeline only. Each record gets a sequence number,
// so a page that polls asks only for what is new (to_json(since)).
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "server/activity/request_origin.h"
#include "server/scheduling/cache_hooks.h"
#include "server/scheduling/generation_job.h"

namespace qmlx::server {

struct ActivityLimits {
  size_t requests = 1000;       // the timeline keeps the latest this many
  size_t conversations = 200;   // the least recently active go first
  size_t turns_per_conversation = 200;  // the oldest turns go first (turn numbers keep counting)
};

// One request as the page shows it.
struct RequestRecord {
  uint64_t seq = 0;  // the log's own order (to_json's `since`)
  uint64_t uid = 0;  // the log line's uid
  int64_t unix_ms = 0;
  std::string route;
  RequestOrigin origin;
  int status = 200;
  std::string error;  // a rejected request's message
  bool ran = false;   // reached the engine (a turn of its conversation)
  int64_t turn = 0;   // its turn in the conversation, 1, 2, ... (0: not a turn)
  int64_t prompt_tokens = 0, cached_tokens = 0, prefill_tokens = 0, completion_tokens = 0;
  double queue_ms = 0, ttft_ms = 0, decode_tokens_per_second = 0, run_ms = 0;
  std::string finish;       // stop, length, tool_calls, cancelled
  std::string tier, kind;   // a hit's tier and snapshot kind
  std::string miss_reason;  // a miss's reason
  uint64_t restore_bytes = 0;
  double restore_ms = 0;  // read + verify + install
  std::optional<DivergenceReport> divergence;
};

class ActivityLog {
 public:
  explicit ActivityLog(ActivityLimits limits = {});

  // A request the engine ran (or started: a cancelled one too); `status` is what its client got.
  void record_generation(uint64_t uid, Route route, const RequestOrigin& origin, int status,
                         FinishReason finish, const GenerationStats& stats);
  // A request answered with an error before it reached the engine.
  void record_rejected(uint64_t uid, const std::string& route, const RequestOrigin& origin,
                       int status, const std::string& error);

  // {"seq", "requests": [records with seq > since], "conversations": [those with a turn after
  // since, each with all its kept turns], "restore": per tier bytes and seconds}. The texts of a
  // divergence only with show_text; otherwise its positions and the span's kind.
  nlohmann::json to_json(uint64_t since, bool show_text) const;

  uint64_t last_seq() const;

 private:
  struct Conversation {
    std::string key;
    std::string session;
    std::string client;
    int64_t turns_seen = 0;
    uint64_t last_seq = 0;
    std::deque<RequestRecord> turns;
  };
  struct TierRestores {
    uint64_t bytes = 0;
    double seconds = 0;
    uint64_t restores = 0;
  };

  void add(RequestRecord record);

  const ActivityLimits limits_;
  mutable std::mutex mutex_;
  uint64_t next_seq_ = 1;
  std::deque<RequestRecord> requests_;
  std::map<std::string, Conversation> conversations_;
  std::map<std::string, TierRestores> restores_;
};

// A route's name on the page ("/v1/chat/completions", ...).
const char* route_path(Route route);

}  // namespace qmlx::server
