// A tiny in-process model for server tests: a byte-level tokenizer with a few Qwen special
// tokens, a ChatML template rendered by the real ChatTemplate, the engine's real sampler, and
// a session whose greedy continuation of any prompt is a fixed script followed by <|im_end|>.
// Optional per-token delays make prefill and decode slow enough to test keep-alives, queueing
// and disconnects.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "server/scheduling/cache_hooks.h"
#include "server/scheduling/model_runtime.h"

namespace qmlx::server::testing {

struct FakeModelOptions {
  std::string script = "Hello world";
  int prefill_delay_ms_per_token = 0;
  int decode_delay_ms = 0;
  int64_t context_length = 4096;
  ToolCallFormat tool_call_format = ToolCallFormat::kJson;  // how the output parser reads calls
  // Reads images (the default: "the model has no vision tower"); the tokenizer has
  // <|image_pad|> either way. Nothing encodes them: encode_images stays null.
  bool vision = false;
};

std::shared_ptr<ModelRuntime> make_fake_runtime(const FakeModelOptions& options);

// Records every hook call, for tests of the cache seam.
class RecordingHooks : public CacheHooks {
 public:
  void on_prompt_end(const PromptView& prompt, const StateSource& session) override;
  void on_generation_end(std::span<const int32_t> tokens, const StateSource& session,
                         CanonicalHistory next_turn) override;
  std::string on_interrupted(std::span<const int32_t> tokens, InferenceSession& session) override;
  void flush() override { flushed = true; }

  std::mutex mutex;
  int prompt_ends = 0;
  int generation_ends = 0;
  std::vector<std::vector<int32_t>> interrupted;
  std::vector<int64_t> interrupted_session_positions;  // how far generation had got
  std::atomic<bool> flushed{false};
};

}  // namespace qmlx::server::testing
