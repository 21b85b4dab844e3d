// ServerOptions: everything `qmlx serve` is configured with, from flags and the qMLX
// cache_config.json. Parsing is separate from serving so validation errors surface (and
// are tested) before any port opens or any model loads.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/config_key_doc.h"
#include "base/logging.h"
#include "engine/session_state.h"
#include "image/image_limits.h"
#include "model/model.h"
#include "server/prompt/prompt_normalizer.h"

namespace qmlx::server {

// Four slots by measurement (BENCHMARKS.md, continuous batching): one request alone decodes as
// fast as with one slot (27.3 against 27.2 tok/s), four together 1.2-1.9x the aggregate, and a
// short request (an agent's title or side request) is answered during a long prefill instead of
// after it (7.0 s against 75 s behind an 8k prefill); idle slots cost nothing.
inline constexpr int kDefaultParallel = 4;
// The longest an engine step carrying decode rows may take, in ms (--max-step-ms): the gap a
// decoding sequence sees while another prefills. Chosen by measurement (BENCHMARKS.md).
inline constexpr int kDefaultMaxStepMs = 500;
// Steps of prefills alone (no decode rows) may last this many times --max-step-ms.
inline constexpr double kPrefillAloneStepFactor = 4;

// Tool calls held to the tool-call grammar for every tool, not only strict ones
// (tool_call_grammar). Chosen by measurement (BENCHMARKS.md, tool-call grammar).
inline constexpr bool kDefaultToolCallGrammar = true;

// Images one request may carry (--max-images-per-request). Agents send their whole history on
// every turn, so each image is decoded and resized again on every request that carries it, and
// a new one costs an encoding by the vision tower (seconds on a CPU); 16 covers a conversation
// with a screenshot every few turns. Anthropic's API takes up to 100.
inline constexpr int kDefaultMaxImagesPerRequest = 16;

// Sampling values used when a request does not set them.
struct SamplingDefaults {
  double temperature = 1.0;
  double top_p = 1.0;
  int top_k = 0;  // 0 = off
  double min_p = 0.0;
  double repetition_penalty = 1.0;
  double presence_penalty = 0.0;
  double frequency_penalty = 0.0;
};

struct ServerOptions {
  std::string model_path;  // empty: the built-in demo model
  std::string cache_config_path;
  std::string host = "127.0.0.1";
  int port = 8080;
  int max_context = 0;  // 0: the model's own context length
  bool hybrid_attention = false;
  bool disk_kv_restore = false;
  bool deltanet_state_aware = false;
  int metrics_port = 0;  // 0: no metrics listener
  std::string model_id;  // empty: the model folder's name
  // Further names /v1/models lists for the served model (--model-alias, repeatable).
  std::vector<std::string> model_aliases;
  // A request naming another model gets 404. Off by default: a single-model server answers
  // whatever name a client sends (agents send claude-* / gpt-* names for side requests).
  bool strict_model_id = false;
  std::string api_key;                  // empty: any non-empty key is accepted
  int threads = 0;                      // 0: all cores
  DType kv_cache_dtype = DType::kBF16;  // how Sessions store K/V rows (--kv-cache-dtype)
  std::string device = "cpu";           // where the forward pass runs (--device)
  // On a device, the layers [0, cpu_moe_layers) whose routed experts stay in host memory and run
  // on the CPU (--cpu-moe, --n-cpu-moe; ModelLoadOptions::cpu_moe_layers).
  int cpu_moe_layers = 0;
  std::string mmproj;  // a llama.cpp mmproj GGUF with the vision tower
  // --mmproj-offload: where a device model's vision tower runs (ModelLoadOptions::TowerOffload)
  ModelLoadOptions::TowerOffload vision_offload = ModelLoadOptions::TowerOffload::kAuto;
  // MTP draft tokens per decode step (--speculative mtp[:k], --speculative-config); 0: off.
  int speculative_tokens = 0;
  SamplingDefaults sampling;
  LogFormat log_format = LogFormat::kText;
  int max_body_mb = 64;
  // The most pixels (width x height) an image may have, decoded (--max-image-pixels); also the
  // most the vision tower is given (smart_resize's max_pixels is lowered to it).
  uint64_t max_image_pixels = image::kDefaultMaxImagePixels;
  int max_images_per_request = kDefaultMaxImagesPerRequest;
  // The most tokens (pads) one image is encoded as (--image-max-tokens): a bigger image is
  // scaled down to fit. The default holds a 1920 x 1080 screenshot whole (2,040 tokens) and
  // scales a 4K or Retina one down to about that: the tower's time grows with the square of
  // the tokens (a 1080p screenshot already costs minutes on a 2-core CPU; BENCHMARKS.md,
  // "Vision encoder"). 0: the pixel bounds alone.
  int64_t image_max_tokens = 2048;
  int max_queue = 16;  // requests waiting for a slot beyond the running ones
  // Sequences in flight at once (--parallel), each on its own slot; they share the engine's
  // steps (continuous batching). Without the flag, 1 with --speculative.
  int parallel = kDefaultParallel;
  // The budget of sequence state (K/V + recurrent) the running sequences may need together at
  // worst, in MiB (--max-batch-memory); 0: --parallel times one full-context sequence.
  int64_t max_batch_memory_mb = 0;
  // Steps bounded in time (--max-step-ms): prompt rows are sized from measured step times so
  // that a step lasts about this long; 0: steps of prefill_chunk tokens whatever they cost.
  int max_step_ms = kDefaultMaxStepMs;
  // Every tool call held to the call syntax and its tool's parameter schema (the config file's
  // "tool_call_grammar", --tool-call-grammar); off: only strict tools' calls are.
  bool tool_call_grammar = kDefaultToolCallGrammar;
  // The status page at GET / and its JSON routes (--no-ui turns both off).
  bool ui_enabled = true;
  // The page shows prompt text (a divergence's both sides) only with --ui-show-text.
  bool ui_show_text = false;
  // The config file's "cache" object, passed through untouched to the cache's own parser.
  nlohmann::json cache_config = nlohmann::json::object();
  // The config file's "prompt_normalization" object: which rules rewrite requests.
  PromptNormalizationOptions prompt_normalization;
  // Non-fatal findings (unknown keys, contradictions) to log once logging is configured.
  std::vector<std::string> warnings;
};

// Outcome of parsing the command line: options, or an exit code with text already printed
// (for --help and for errors).
struct ParsedCommandLine {
  std::optional<ServerOptions> options;
  int exit_code = 0;
};

// argv[0] is "serve". Applies the config file, then the flags given on top of it; checks
// every value. Prints --help or the error itself.
ParsedCommandLine parse_serve_command_line(int argc, char** argv);

// Merges a parsed cache_config.json document into `options`, skipping the fields named in
// `set_by_flags` ("model", "hybrid_attention", "deltanet_state_aware", "tool_call_grammar"). Throws
// qmlx::Error naming the file and key on an invalid value; unknown keys become warnings.
void apply_config_file(const nlohmann::json& document, const std::string& file_name,
                       const std::vector<std::string>& set_by_flags, ServerOptions& options);

// Checks values that no single field can check alone (the model exists, ports differ...).
void validate_options(const ServerOptions& options);

// The --help text for the config file: its sections, and where every key is documented.
const char* config_file_help();

// Every key of the config file outside "cache", from the tables the parser reads (for
// `qmlx cache --help`, which lists them with the cache's own keys).
std::vector<ConfigKeyDoc> server_config_keys();

// Every key of the file, the cache's and the server's, with values, default and what it does.
std::string config_keys_help();

}  // namespace qmlx::server
