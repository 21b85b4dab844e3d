#include "server/activity/activity_log.h"

#include <chrono>

#include "server/scheduling/generation_runner.h"

namespace qmlx::server {
namespace {

using json = nlohmann::json;

int64_t now_unix_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

json divergence_json(const DivergenceReport& d, bool show_text) {
  json out = {{"position", d.position}, {"restored", d.restored}, {"cause", d.cause}};
  if (!d.fix.empty()) out["fix"] = d.fix;
  if (show_text) {
    out["span"] = d.span;
    out["before"] = d.before;
    out["cached"] = d.cached;
    out["incoming"] = d.incoming;
  }
  return out;
}

json record_json(const RequestRecord& r, bool show_text) {
  json out = {{"seq", r.seq},
              {"uid", r.uid},
              {"unix_ms", r.unix_ms},
              {"route", r.route},
              {"client", r.origin.client},
              {"session", r.origin.session},
              {"conversation", r.origin.conversation},
              {"status", r.status},
              {"ran", r.ran}};
  if (!r.error.empty()) out["error"] = r.error;
  if (!r.ran) return out;
  out.update(json{{"turn", r.turn},
                  {"outcome", r.cached_tokens > 0 ? "hit" : "miss"},
                  {"cause", r.divergence ? r.divergence->cause : "none"},
                  {"prompt_tokens", r.prompt_tokens},
                  {"cached_tokens", r.cached_tokens},
                  {"prefill_tokens", r.prefill_tokens},
                  {"completion_tokens", r.completion_tokens},
                  {"queue_ms", r.queue_ms},
                  {"ttft_ms", r.ttft_ms},
                  {"decode_tokens_per_second", r.decode_tokens_per_second},
                  {"run_ms", r.run_ms},
                  {"finish", r.finish},
                  {"tier", r.tier},
                  {"kind", r.kind},
                  {"miss_reason", r.miss_reason}});
  if (r.divergence) out["divergence"] = divergence_json(*r.divergence, show_text);
  return out;
}

}  // namespace

const char* route_path(Route route) {
  switch (route) {
    case Route::kChatCompletions:
      return "/v1/chat/completions";
    case Route::kCompletions:
      return "/v1/completions";
    case Route::kMessages:
      return "/v1/messages";
    case Route::kResponses:
      return "/v1/responses";
  }
  return "";
}

ActivityLog::ActivityLog(ActivityLimits limits) : limits_(limits) {}

void ActivityLog::record_generation(uint64_t uid, Route route, const RequestOrigin& origin,
                                    int status, FinishReason finish,
                                    const GenerationStats& stats) {
  RequestRecord r;
  r.uid = uid;
  r.route = route_path(route);
  r.origin = origin;
  r.status = status;
  r.ran = true;
  r.prompt_tokens = stats.prompt_tokens;
  r.cached_tokens = stats.cached_tokens;
  r.prefill_tokens = stats.prefill_tokens;
  r.completion_tokens = stats.completion_tokens;
  r.queue_ms = stats.queue_ms;
  r.ttft_ms = stats.ttft_ms;
  r.decode_tokens_per_second = stats.decode_tokens_per_second();
  r.run_ms = stats.run_ms;
  r.finish = finish_reason_name(finish);
  const CacheLookupResult& cache = stats.cache;
  if (stats.cached_tokens > 0) {
    r.tier = cache.tier;
    r.kind = cache.kind;
  } else {
    r.miss_reason = cache.miss_reason.empty() ? "no_cache" : cache.miss_reason;
  }
  r.restore_bytes = cache.restore_bytes;
  r.restore_ms = cache.read_ms + cache.verify_ms + cache.install_ms;
  r.divergence = cache.divergence_report;
  add(std::move(r));
}

void ActivityLog::record_rejected(uint64_t uid, const std::string& route,
                                  const RequestOrigin& origin, int status,
                                  const std::string& error) {
  RequestRecord r;
  r.uid = uid;
  r.route = route;
  r.origin = origin;
  r.status = status;
  r.error = error;
  add(std::move(r));
}

void ActivityLog::add(RequestRecord record) {
  std::lock_guard<std::mutex> lock(mutex_);
  record.seq = next_seq_++;
  record.unix_ms = now_unix_ms();
  if (record.ran) {
    if (record.cached_tokens > 0 && !record.tier.empty()) {
      TierRestores& t = restores_[record.tier];
      t.bytes += record.restore_bytes;
      t.seconds += record.restore_ms / 1000;
      ++t.restores;
    }
    Conversation& c = conversations_[record.origin.conversation];
    if (c.key.empty()) {
      c.key = record.origin.conversation;
      c.session = record.origin.session;
      c.client = record.origin.client;
    }
    record.turn = ++c.turns_seen;
    c.last_seq = record.seq;
    c.turns.push_back(record);
    if (c.turns.size() > limits_.turns_per_conversation) c.turns.pop_front();
    if (conversations_.size() > limits_.conversations) {
      auto oldest = conversations_.begin();
      for (auto it = conversations_.begin(); it != conversations_.end(); ++it) {
        if (it->second.last_seq < oldest->second.last_seq) oldest = it;
      }
      conversations_.erase(oldest);
    }
  }
  requests_.push_back(std::move(record));
  if (requests_.size() > limits_.requests) requests_.pop_front();
}

uint64_t ActivityLog::last_seq() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return next_seq_ - 1;
}

json ActivityLog::to_json(uint64_t since, bool show_text) const {
  std::lock_guard<std::mutex> lock(mutex_);
  json requests = json::array();
  for (const RequestRecord& r : requests_) {
    if (r.seq > since) requests.push_back(record_json(r, show_text));
  }
  json conversations = json::array();
  for (const auto& [key, c] : conversations_) {
    if (c.last_seq <= since) continue;
    json turns = json::array();
    for (const RequestRecord& t : c.turns) turns.push_back(record_json(t, show_text));
    conversations.push_back({{"key", c.key},
                             {"session", c.session},
                             {"client", c.client},
                             {"turns_seen", c.turns_seen},
                             {"last_seq", c.last_seq},
                             {"turns", std::move(turns)}});
  }
  json restores = json::object();
  for (const auto& [tier, t] : restores_) {
    restores[tier] = {{"bytes", t.bytes},
                      {"seconds", t.seconds},
                      {"restores", t.restores},
                      {"bytes_per_second", t.seconds > 0 ? double(t.bytes) / t.seconds : 0.0}};
  }
  return {{"seq", next_seq_ - 1},
          {"requests", std::move(requests)},
          {"conversations", std::move(conversations)},
          {"restore", std::move(restores)}};
}

}  // namespace qmlx::server
