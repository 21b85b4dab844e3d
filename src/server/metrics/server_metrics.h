// ServerMetrics: the server's own Prometheus families, registered once in a shared registry
// (the cache registers its families in the same one), and the one-line request log.
#pragma once

#include <string>
#include <vector>

#include "server/metrics/metrics.h"
#include "server/scheduling/generation_job.h"

namespace qmlx::server {

class ServerMetrics {
 public:
  explicit ServerMetrics(MetricsRegistry& registry);

  void record_request(const std::string& route, int status);
  void add_in_flight(int delta);
  void record_generation(const GenerationStats& stats);
  // Sequences running on the engine's slots and jobs waiting for one.
  void set_sequences(size_t running, size_t waiting);
  // One engine step: the sequences it fed (the batch size) and its time.
  void record_step(int sequences, double seconds);
  // Counts each prompt normalization rule that changed a request.
  void record_normalization(const std::vector<std::string>& rules);
  // A schema keyword dropped from a reply's constraint (not enforceable, strict off).
  void record_dropped_keyword(const std::string& keyword);

  MetricsRegistry& registry() { return registry_; }

 private:
  MetricsRegistry& registry_;
  Counter& requests_;
  Gauge& in_flight_;
  Counter& prompt_tokens_;
  Counter& prefill_tokens_;
  Counter& completion_tokens_;
  Histogram& ttft_seconds_;
  Histogram& prefill_tps_;
  Histogram& decode_tps_;
  Counter& speculative_steps_;
  Counter& speculative_drafted_;
  Counter& speculative_accepted_;
  Histogram& speculative_acceptance_;
  Histogram& speculative_tokens_per_step_;
  Counter& normalizations_;
  Counter& dropped_keywords_;
  Gauge& running_sequences_;
  Gauge& waiting_sequences_;
  Histogram& batch_sequences_;
  Histogram& step_seconds_;
  Counter& shared_prefix_waits_;
  Counter& shared_prefix_wait_seconds_;
};

// The per-request log line: starts exactly `uid=<n> <HIT|MISS> cached=<c> prefill=<p>`; has
// `spec_accept=<accepted/drafted> spec_tokens_per_step=<t>` when speculative decoding ran;
// `format=<kind>[:<name>]` when the reply was held to a format (json_object, json_schema with
// the schema's name, its characters other than [A-Za-z0-9_.-] as '_', or grammar); ends with
// `normalized=<rule>,<rule>` when prompt normalization rules changed the request.
// `status`: what the client got (200; 499 when it left; 503 when a server stop cut it short).
std::string request_log_line(uint64_t uid, FinishReason finish, const GenerationStats& stats,
                             int status = 200);

// The log line of a request answered without generating (a rejection, an admin or info route):
// `uid=<n> <METHOD> <path> status=<s>`, plus ` error="<message>"` for a failure. The message is
// the one the client got (it names fields, never prompt text), cut to a bounded length.
std::string answered_request_log_line(uint64_t uid, const std::string& method,
                                      const std::string& path, int status,
                                      const std::string& message);

}  // namespace qmlx::server
