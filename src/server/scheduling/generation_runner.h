// Runs one GenerationJob on the engine thread: cache lookup, chunked prefill with progress,
// the decode loop (sampling, detokenizing, stop strings, output parsing), and the cache hooks
// at each stage. Events go to the job's channel as they happen; a cancelled job stops within
// one decode step (or one prefill chunk) and hands what it generated to on_interrupted.
#pragma once

#include <atomic>

#include "server/scheduling/cache_hooks.h"
#include "server/scheduling/generation_job.h"
#include "server/scheduling/model_runtime.h"

namespace qmlx::server {

struct RunnerSettings {
  int prefill_chunk_tokens = 1024;    // as SessionOptions::prefill_chunk (engine/session.h)
  double progress_log_seconds = 3.0;  // log a prefill progress line this often
};

struct GenerationOutcome {
  FinishReason finish = FinishReason::kStop;
  GenerationStats stats;
};

// Publishes kProgress / kOutput events and, last, exactly one kDone or kError.
GenerationOutcome run_generation(GenerationJob& job, InferenceSession& session,
                                 const ModelRuntime& runtime, CacheHooks& hooks,
                                 const RunnerSettings& settings = {});

// Converts a finish reason to the OpenAI / Anthropic wire strings.
const char* openai_finish_reason(FinishReason reason);
// The log's and the status page's name: OpenAI's, and "cancelled".
const char* finish_reason_name(FinishReason reason);
const char* anthropic_stop_reason(FinishReason reason);

}  // namespace qmlx::server
