// ModelRuntime: everything the server needs from a loaded model, as a few narrow functions:
// the tokenizer, the chat renderer, a Session factory and a sampler factory. The HTTP and
// scheduling code depend only on this, so they are tested with a small fake model and the
// real engine and text layers are plugged in by one adapter (runtime_loader.cpp).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "engine/session_state.h"
#include "engine/speculative_step.h"
#include "engine/token_constraint.h"
#include "image/vision_preprocess.h"
#include "model/sequence_image.h"
#include "server/common/generation_request.h"
#include "server/scheduling/batch_memory.h"
#include "text/output/output_format.h"
#include "text/tokenizer/tokenizer.h"

namespace qmlx::server {

class TokenSampler;

// Speculative decoding on a session (engine/speculative.h): the model's MTP head drafts tokens and
// one forward pass checks them.
class SpeculativeDecoding {
 public:
  virtual ~SpeculativeDecoding() = default;
  // `token` was chosen from the session's logits() and is not fed: feeds it with up to
  // `max_drafts` drafts and returns the tokens that follow it (the accepted drafts, then the
  // model's own token), each with the logits row it was chosen from; the last is not fed.
  // `sampler` must come from the same runtime's new_sampler. `constraint` (may be null): the
  // reply's constraint after `token` (SpeculativeDecoder::step says how it is used); where it
  // forces the next token the step returns none and the session's logits() are its row.
  virtual const SpeculativeStep& step(int32_t token, TokenSampler& sampler,
                                      std::span<const int32_t> history, int max_drafts,
                                      TokenConstraint* constraint = nullptr) = 0;
  // Only the first `used` tokens of the last step were taken: the session then holds the step's
  // input token and the first used - 1 of them, as plain decoding would have fed.
  virtual void keep(int used) = 0;
  // The state after the step's input token and the first fed - 1 tokens it returned.
  virtual const StateSource& state_after(int fed) = 0;
  virtual const SpeculativeCounts& counts() const = 0;
};

// A sequence being computed: position n, the logits of position n-1.
class InferenceSession {
 public:
  virtual ~InferenceSession() = default;
  virtual int64_t position() const = 0;
  // Back to position 0.
  virtual void reset() = 0;
  // Appends prompt tokens (the engine chunks internally); logits() is then of the last one.
  virtual void prefill(std::span<const int32_t> ids) = 0;
  // The same, stopping at the first engine step's end where `cancel` is set (a client that
  // left): returns how many of `ids` were fed; the session is consistent there.
  virtual int64_t prefill_until_cancelled(std::span<const int32_t> ids,
                                          const std::atomic<bool>& cancel) {
    if (cancel.load()) return 0;
    prefill(ids);
    return int64_t(ids.size());
  }
  // Appends one generated token (a decode step: the engine computes it as a generated row).
  virtual void decode(int32_t id) { prefill(std::span<const int32_t>(&id, 1)); }
  virtual std::span<const float> logits() const = 0;
  // The cache's view of the state (copy out checkpoints, install restores).
  virtual StateSource& state_source() = 0;
  virtual StateSink& state_sink() = 0;
  // The images of the sequence being fed (rows from 0, in row order; model/sequence_image.h):
  // prefill feeds their embeddings at their pads (which arrive as image pad keys,
  // engine/image_pad_keys.h) and a restore continues their positions. Set before the prompt is
  // restored or fed; an empty list for a text prompt.
  virtual void set_images(std::vector<SequenceImage> images) {
    if (!images.empty()) throw Error("this session reads no images");
  }
  // Speculative decoding, or null when it is off (the default, and a model without an MTP head).
  virtual SpeculativeDecoding* speculative() { return nullptr; }
};

// Picks the next token from logits; holds its own random state (seeded per request).
class TokenSampler {
 public:
  virtual ~TokenSampler() = default;
  // `history`: the prompt and generated tokens so far (for the penalties).
  virtual int32_t sample(std::span<const float> logits, std::span<const int32_t> history) = 0;
};

// An image of a prompt: its pads are ids[first_row, first_row + pads()), as image pad keys
// (engine/image_pad_keys.h), and `input` is what the vision tower encodes.
struct PromptImage {
  int64_t first_row = 0;
  std::shared_ptr<const image::VisionInput> input;
  // One pad per merge_size x merge_size merged patches (Qwen3.5: 2 x 2).
  int64_t pads() const {
    return input ? int64_t(input->num_patches) / (int64_t(input->merge_size) * input->merge_size)
                 : 0;
  }
};

// A prompt's images for the session (InferenceSession::set_images), and how many of them the
// vision tower had to encode (the others came from the encoder-output cache or were not needed).
struct PlacedImages {
  std::vector<SequenceImage> images;
  int encoded = 0;
};

// The chat template's output for one conversation.
struct RenderedPrompt {
  std::string text;
  std::vector<int32_t> ids;
  // Token offsets for the cache: end of the last message (before the generation prompt) and
  // start of the last user message; -1 when unknown.
  int64_t last_message_end = -1;
  int64_t last_user_start = -1;
  // Where an injected reminder block starts (ascending, before last_message_end): agents edit
  // their history there between turns (text/template/edit_points.h).
  std::vector<int64_t> edit_points;
  // The images in the prompt, in row order (empty for text).
  std::vector<PromptImage> images;
};

// Hears about every engine step: sequences in it, rows fed (decode + prompt), its time.
using StepListener = std::function<void(int sequences, int rows, double seconds)>;

struct ModelRuntime {
  std::string model_id;         // the id in /v1/models and in responses
  std::string architecture;     // from config.json, for the start-up line
  std::string backend = "cpu";  // Model::backend_description(): "cpu" or the device
  std::string description;      // layers by type, memory: the start-up summary
  int speculative_tokens = 0;   // draft tokens per speculative step; 0: off
  int max_step_ms = 0;          // the engine's step time bound (--max-step-ms); 0: none
  // Prompt tokens per second of one prefill at a context depth, as the engine measured it at
  // start (for the start-up line: how long a cold prompt will take); optional.
  std::function<double(int64_t depth)> prefill_rate;
  int64_t context_length = 0;
  // On a device: the device memory the sequences' states may take, which caps the batch memory
  // budget (batch_memory.h); bytes 0 on the CPU.
  DeviceStateMemory device_state_memory;
  // What the prefix cache keys its store with (engine/model_identity.h) and the shape of the
  // sessions' state; empty identity: this runtime cannot be cached.
  std::string identity;
  StateLayout state_layout;
  std::shared_ptr<const Tokenizer> tokenizer;
  std::vector<int32_t> stop_token_ids;  // end of turn / end of text
  ToolCallFormat tool_call_format = ToolCallFormat::kJson;
  // Images: empty when the model reads them; otherwise why not (the 400 of a request that
  // sends one: "the model has no vision tower").
  std::string vision_unavailable = "the model has no vision tower";
  image::VisionPreprocessConfig vision_preprocess;  // the checkpoint's preprocessor_config.json
  int32_t image_pad_id = -1;                        // <|image_pad|>
  // The prompt's images as the language model takes them, placed on the M-RoPE positions; those
  // that end after `from_row` with the vision tower's rows (an image seen recently is not
  // encoded again), those wholly before it without (a restore covers them). Throws qmlx::Error.
  std::function<PlacedImages(std::span<const PromptImage> images, int64_t from_row)> encode_images;

  // Messages and tools keep the client's key order: templates serialise them with tojson.
  std::function<RenderedPrompt(const nlohmann::ordered_json& messages,
                               const nlohmann::ordered_json& tools, bool add_generation_prompt,
                               const nlohmann::ordered_json& kwargs)>
      render_chat;
  // The template's text alone (no tokenizing); optional, render_chat(...).text otherwise.
  std::function<std::string(const nlohmann::ordered_json& messages,
                            const nlohmann::ordered_json& tools, bool add_generation_prompt,
                            const nlohmann::ordered_json& kwargs)>
      render_text;
  // Sessions share one engine step loop: those in flight together are batched.
  std::function<std::unique_ptr<InferenceSession>()> new_session;
  // Sets (or, with an empty listener, clears) what hears about the engine's steps; optional.
  std::function<void(StepListener)> listen_steps;
  std::function<std::unique_ptr<TokenSampler>(const SamplingParams& params, uint64_t seed)>
      new_sampler;
};

}  // namespace qmlx::server
