#include "server/metrics/server_metrics.h"

#include <cstdio>

#include <nlohmann/json.hpp>

#include "base/process.h"
#include "server/prompt/prompt_normalizer.h"
#include "server/scheduling/generation_runner.h"

namespace qmlx::server {
namespace {

const std::vector<double> kSecondsBuckets = {0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300};
const std::vector<double> kBatchBuckets = {1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64};
const std::vector<double> kStepBuckets = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                          0.1,   0.25,   0.5,   1,    2.5,   5};
const std::vector<double> kRateBuckets = {1,   2.5, 5,    10,   25,   50,   100,
                                          250, 500, 1000, 2500, 5000, 10000};

const std::vector<double> kFractionBuckets = {0.1, 0.2, 0.3, 0.4,  0.5,  0.6,
                                              0.7, 0.8, 0.9, 0.95, 0.99, 1};
const std::vector<double> kTokensPerStepBuckets = {1, 1.25, 1.5, 1.75, 2, 2.5, 3, 3.5, 4, 5};

}  // namespace

ServerMetrics::ServerMetrics(MetricsRegistry& registry)
    : registry_(registry),
      requests_(registry.counter("qmlx_requests_total", "HTTP requests by route and status",
                                 {"route", "status"})),
      in_flight_(registry.gauge("qmlx_requests_in_flight", "HTTP requests being served")),
      prompt_tokens_(
          registry.counter("qmlx_prompt_tokens_total", "Prompt tokens of generation requests")),
      prefill_tokens_(registry.counter("qmlx_prefill_tokens_total",
                                       "Prompt tokens computed by prefill (not from the cache)")),
      completion_tokens_(registry.counter("qmlx_completion_tokens_total", "Generated tokens")),
      ttft_seconds_(registry.histogram("qmlx_ttft_seconds",
                                       "Time from the start of processing to the first token",
                                       kSecondsBuckets)),
      prefill_tps_(registry.histogram("qmlx_prefill_tokens_per_second",
                                      "Prefill throughput per request", kRateBuckets)),
      decode_tps_(registry.histogram("qmlx_decode_tokens_per_second",
                                     "Decode throughput per request", kRateBuckets)),
      speculative_steps_(
          registry.counter("qmlx_speculative_steps_total",
                           "Speculative decoding steps (one forward pass of the main model each)")),
      speculative_drafted_(registry.counter("qmlx_speculative_draft_tokens_total",
                                            "Tokens drafted by the MTP head")),
      speculative_accepted_(registry.counter("qmlx_speculative_accepted_tokens_total",
                                             "Drafted tokens the main model accepted")),
      speculative_acceptance_(registry.histogram("qmlx_speculative_acceptance_rate",
                                                 "Accepted / drafted tokens per request",
                                                 kFractionBuckets)),
      speculative_tokens_per_step_(registry.histogram(
          "qmlx_speculative_tokens_per_step",
          "Tokens produced per speculative step (accepted drafts + 1) per request",
          kTokensPerStepBuckets)),
      normalizations_(registry.counter("qmlx_prompt_normalizations_total",
                                       "Requests changed by each prompt normalization rule",
                                       {"rule"})),
      dropped_keywords_(registry.counter(
          "qmlx_schema_keywords_dropped_total",
          "JSON Schema keywords dropped from a reply's constraint (not enforceable; the request "
          "was not strict), by keyword",
          {"keyword"})),
      running_sequences_(registry.gauge("qmlx_sequences_running",
                                        "Sequences in flight on the engine's slots (--parallel)")),
      waiting_sequences_(
          registry.gauge("qmlx_sequences_waiting", "Requests waiting for a slot or for memory")),
      batch_sequences_(registry.histogram("qmlx_batch_sequences",
                                          "Sequences fed together in one engine step (decodes "
                                          "and prefill chunks)",
                                          kBatchBuckets)),
      step_seconds_(
          registry.histogram("qmlx_step_seconds", "Time of one engine step", kStepBuckets)),
      shared_prefix_waits_(registry.counter(
          "qmlx_shared_prefix_waits_total",
          "Requests that waited for another's prefill of the prefix they share, then restored it")),
      shared_prefix_wait_seconds_(
          registry.counter("qmlx_shared_prefix_wait_seconds_total",
                           "Time requests spent waiting for another's shared-prefix checkpoint")) {
  for (const PromptNormalizationRule& rule : prompt_normalization_rules()) {
    normalizations_.add(0, {rule.name});  // every rule is listed, fired or not
  }
  registry.gauge("process_resident_memory_bytes", "Resident memory size in bytes").set_function([] {
    return static_cast<double>(current_rss_bytes());
  });
}

void ServerMetrics::record_request(const std::string& route, int status) {
  requests_.add(1, {route, std::to_string(status)});
}

void ServerMetrics::add_in_flight(int delta) { in_flight_.add(delta); }

void ServerMetrics::set_sequences(size_t running, size_t waiting) {
  running_sequences_.set(static_cast<double>(running));
  waiting_sequences_.set(static_cast<double>(waiting));
}

void ServerMetrics::record_step(int sequences, double seconds) {
  batch_sequences_.observe(sequences);
  step_seconds_.observe(seconds);
}

void ServerMetrics::record_normalization(const std::vector<std::string>& rules) {
  for (const std::string& rule : rules) normalizations_.add(1, {rule});
}

void ServerMetrics::record_dropped_keyword(const std::string& keyword) {
  dropped_keywords_.add(1, {keyword});
}

void ServerMetrics::record_generation(const GenerationStats& stats) {
  prompt_tokens_.add(static_cast<double>(stats.prompt_tokens));
  prefill_tokens_.add(static_cast<double>(stats.prefill_tokens));
  completion_tokens_.add(static_cast<double>(stats.completion_tokens));
  if (stats.completion_tokens > 0) ttft_seconds_.observe(stats.ttft_ms / 1000.0);
  if (stats.prefill_tokens > 0 && stats.prefill_ms > 0) {
    prefill_tps_.observe(stats.prefill_tokens_per_second());
  }
  if (stats.completion_tokens > 1 && stats.decode_ms > 0) {
    decode_tps_.observe(stats.decode_tokens_per_second());
  }
  if (stats.cache.shared_wait_ms > 0) {
    shared_prefix_waits_.add(1);
    shared_prefix_wait_seconds_.add(stats.cache.shared_wait_ms / 1000.0);
  }
  const SpeculativeCounts& spec = stats.speculative;
  if (spec.steps > 0) {
    speculative_steps_.add(double(spec.steps));
    speculative_drafted_.add(double(spec.drafted));
    speculative_accepted_.add(double(spec.accepted));
    if (spec.drafted > 0) speculative_acceptance_.observe(double(spec.accepted) / spec.drafted);
    speculative_tokens_per_step_.observe(double(spec.tokens) / spec.steps);
  }
}

std::string request_log_line(uint64_t uid, FinishReason finish, const GenerationStats& stats,
                             int status) {
  const CacheLookupResult& cache = stats.cache;
  char line[512];
  std::snprintf(line, sizeof line, "uid=%llu %s cached=%lld prefill=%lld",
                static_cast<unsigned long long>(uid), stats.cached_tokens > 0 ? "HIT" : "MISS",
                static_cast<long long>(stats.cached_tokens),
                static_cast<long long>(stats.prefill_tokens));
  std::string out = line;
  if (stats.cached_tokens > 0) {
    out += " kind=" + cache.kind + " tier=" + cache.tier;
  } else {
    out += " reason=" + (cache.miss_reason.empty() ? std::string("no_cache") : cache.miss_reason);
  }
  if (!cache.rejected.empty()) out += " rejected=" + cache.rejected;
  if (cache.shared_wait_ms > 0) {
    std::snprintf(line, sizeof line, " shared_wait=%.1fms", cache.shared_wait_ms);
    out += line;
  }
  // Stage timings: lookup, read, verify, install (the restore), prefill, first token.
  std::snprintf(line, sizeof line,
                " lookup=%.1fms read=%.1fms verify=%.1fms install=%.1fms prefill_time=%.1fms "
                "ttft=%.1fms prompt=%lld completion=%lld prefill_speed=%.1ftok/s "
                "decode_speed=%.1ftok/s queue=%.1fms finish=%s",
                cache.lookup_ms, cache.read_ms, cache.verify_ms, cache.install_ms, stats.prefill_ms,
                stats.ttft_ms, static_cast<long long>(stats.prompt_tokens),
                static_cast<long long>(stats.completion_tokens), stats.prefill_tokens_per_second(),
                stats.decode_tokens_per_second(), stats.queue_ms, finish_reason_name(finish));
  out += line;
  // A request cut short says so, how long it ran and what the cache kept of it.
  if (status != 200) {
    std::snprintf(line, sizeof line, " status=%d ran=%.1fms checkpoint=%s", status, stats.run_ms,
                  stats.checkpoint.empty() ? "none" : stats.checkpoint.c_str());
    out += line;
  }
  const SpeculativeCounts& spec = stats.speculative;
  if (spec.drafted > 0) {  // none when every step ran without drafts (a one-token reply)
    std::snprintf(line, sizeof line, " spec_accept=%.2f spec_tokens_per_step=%.2f",
                  double(spec.accepted) / spec.drafted, double(spec.tokens) / spec.steps);
    out += line;
  }
  if (stats.images > 0) {
    std::snprintf(line, sizeof line, " images=%d images_encoded=%d image_encode_time=%.1fms",
                  stats.images, stats.images_encoded, stats.image_encode_ms);
    out += line;
  }
  if (!stats.reply_format.empty()) {
    out += " format=" + stats.reply_format;
    // The schema's name is the client's: kept to one short token of the line.
    if (!stats.reply_format_name.empty()) {
      out += ':';
      constexpr size_t kMaxName = 64;
      for (char c : stats.reply_format_name.substr(0, kMaxName)) {
        const bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                           (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '.';
        out += plain ? c : '_';
      }
    }
  }
  if (!stats.normalized.empty()) {
    out += " normalized=";
    for (size_t i = 0; i < stats.normalized.size(); ++i) {
      out += (i ? "," : "") + stats.normalized[i];
    }
  }
  return out;
}

std::string answered_request_log_line(uint64_t uid, const std::string& method,
                                      const std::string& path, int status,
                                      const std::string& message) {
  constexpr size_t kMaxMessage = 300;  // a client-chosen value in a message stays one short line
  std::string out = "uid=" + std::to_string(uid) + " " + method + " " + path +
                    " status=" + std::to_string(status);
  if (!message.empty()) {
    std::string shown =
        message.size() > kMaxMessage ? message.substr(0, kMaxMessage) + "..." : message;
    out += " error=" +
           nlohmann::json(shown).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  }
  return out;
}

}  // namespace qmlx::server
