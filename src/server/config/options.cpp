#include "server/config/options.h"

#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>

#include <CLI/CLI.hpp>

#include "base/error.h"
#include "base/process.h"
#include "cache/config.h"
#include "engine/cpu_moe_flags.h"
#include "engine/speculative_config.h"

namespace qmlx::server {
namespace {

namespace fs = std::filesystem;

constexpr int kMaxParallel = 64;

const char kConfigHelp[] = R"(Configuration file (--cache-config FILE), the qMLX cache_config.json:
  {
    "cache": { ... },            the prefix cache settings
    "model": {
      "path": "~/models/X",      model folder (same as --model)
      "hybrid_attention": true,  accepted for qMLX compatibility (same as --hybrid-attention);
                                 the architecture is detected from the model's config.json
      "deltanet_state_aware": true  accepted for qMLX compatibility (same as --disk-kv-restore)
    },
    "prompt_normalization": { "<rule>": true|false, ... }
                                 rules that rewrite what clients vary per request,
    "tool_call_grammar": true    every tool call held to the call syntax and its tool's
                                 schema (false: strict tools only; same as --tool-call-grammar)
  }
Every key, with its values and default: qmlx cache --help.
A flag given on the command line overrides the file. "~" is expanded. Unknown keys are
reported as warnings; an invalid value or a missing model is an error before the port opens.
)";

// The "model" object's keys; each is read by apply_model_section.
const ConfigKeyDoc kModelKeys[] = {
    {"model.path", "string", "none (--model, or the built-in demo model)",
     "model folder or .gguf file (same as --model; \"~\" is expanded)"},
    {"model.hybrid_attention", "true|false", "false",
     "accepted for qMLX compatibility (same as --hybrid-attention); the architecture is "
     "detected from the model's config.json"},
    {"model.deltanet_state_aware", "true|false", "false",
     "restore K/V and recurrent state from the SSD cache (same as --disk-kv-restore)"},
};

const ConfigKeyDoc kToolCallGrammarKey = {
    "tool_call_grammar", "true|false", kDefaultToolCallGrammar ? "true" : "false",
    "hold every tool call to the chat template's call syntax and its tool's parameter schema "
    "from the moment the model opens it (false: only tools marked strict are held; the others' "
    "calls are whatever the model writes). Same as --tool-call-grammar"};

// The keys that `docs` names under `prefix`, without it ("model.path" is "path" in "model").
std::set<std::string> keys_under(const std::string& prefix, const std::vector<ConfigKeyDoc>& docs) {
  std::set<std::string> keys;
  for (const ConfigKeyDoc& doc : docs) {
    if (doc.name.starts_with(prefix)) keys.insert(doc.name.substr(prefix.size()));
  }
  return keys;
}

const nlohmann::json* find_key(const nlohmann::json& object, const char* key) {
  auto it = object.find(key);
  return it == object.end() ? nullptr : &*it;
}

bool set_by(const std::vector<std::string>& flags, const std::string& name) {
  return std::find(flags.begin(), flags.end(), name) != flags.end();
}

[[noreturn]] void invalid(const std::string& file, const std::string& key,
                          const std::string& expected) {
  throw Error(file + ": \"" + key + "\" must be " + expected);
}

bool read_bool(const nlohmann::json& value, const std::string& file, const std::string& key) {
  if (!value.is_boolean()) invalid(file, key, "true or false");
  return value.get<bool>();
}

void warn_unknown_keys(const nlohmann::json& object, const std::set<std::string>& known,
                       const std::string& file, const std::string& prefix,
                       std::vector<std::string>& warnings) {
  for (const auto& [key, value] : object.items()) {
    if (!known.count(key)) {
      warnings.push_back(file + ": unknown key \"" + prefix + key + "\" ignored");
    }
  }
}

void apply_model_section(const nlohmann::json& model, const std::string& file,
                         const std::vector<std::string>& set_by_flags, ServerOptions& options) {
  if (!model.is_object()) invalid(file, "model", "an object");
  warn_unknown_keys(model, keys_under("model.", server_config_keys()), file, "model.",
                    options.warnings);
  if (const auto* path = find_key(model, "path")) {
    if (!path->is_string()) invalid(file, "model.path", "a string");
    if (!set_by(set_by_flags, "model")) options.model_path = expand_user(path->get<std::string>());
  }
  if (const auto* hybrid = find_key(model, "hybrid_attention")) {
    bool value = read_bool(*hybrid, file, "model.hybrid_attention");
    if (!set_by(set_by_flags, "hybrid_attention")) options.hybrid_attention = value;
  }
  if (const auto* aware = find_key(model, "deltanet_state_aware")) {
    bool value = read_bool(*aware, file, "model.deltanet_state_aware");
    if (!set_by(set_by_flags, "deltanet_state_aware")) options.deltanet_state_aware = value;
  }
}

void apply_prompt_normalization_section(const nlohmann::json& section, const std::string& file,
                                        ServerOptions& options) {
  if (!section.is_object()) invalid(file, "prompt_normalization", "an object");
  const std::set<std::string> rules = keys_under("prompt_normalization.", server_config_keys());
  warn_unknown_keys(section, rules, file, "prompt_normalization.", options.warnings);
  for (const auto& [rule, value] : section.items()) {
    if (!rules.count(rule)) continue;
    options.prompt_normalization.set(rule, read_bool(value, file, "prompt_normalization." + rule));
  }
}

nlohmann::json read_json_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Error(path + ": cannot open the configuration file");
  try {
    return nlohmann::json::parse(in);
  } catch (const nlohmann::json::parse_error& e) {
    throw Error(path + ": invalid JSON: " + e.what());
  }
}

void add_sampling_flags(CLI::App& app, SamplingDefaults& s) {
  app.add_option("--default-temperature", s.temperature,
                 "Temperature when a request sets none (0 = greedy)")
      ->check(CLI::Range(0.0, 100.0))
      ->capture_default_str();
  app.add_option("--default-top-p", s.top_p, "top_p when a request sets none")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  app.add_option("--default-top-k", s.top_k, "top_k when a request sets none (0 = off)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--default-min-p", s.min_p, "min_p when a request sets none")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  app.add_option("--default-repetition-penalty", s.repetition_penalty,
                 "Repetition penalty when a request sets none (1 = off)")
      ->check(CLI::Range(0.0, 100.0))
      ->capture_default_str();
  app.add_option("--default-presence-penalty", s.presence_penalty,
                 "Presence penalty when a request sets none")
      ->check(CLI::Range(-2.0, 2.0))
      ->capture_default_str();
  app.add_option("--default-frequency-penalty", s.frequency_penalty,
                 "Frequency penalty when a request sets none")
      ->check(CLI::Range(-2.0, 2.0))
      ->capture_default_str();
}

}  // namespace

const char* config_file_help() { return kConfigHelp; }

std::string config_keys_help() {
  std::vector<ConfigKeyDoc> keys = cache_config_keys();
  for (ConfigKeyDoc& key : server_config_keys()) keys.push_back(std::move(key));
  return "Keys of cache_config.json (qmlx serve --cache-config FILE; qmlx cache reads its "
         "\"cache\" object):\n" +
         format_config_keys(keys) +
         "Unknown keys are reported as warnings; a wrong type or a value out of range is an "
         "error naming the key.\n";
}

std::vector<ConfigKeyDoc> server_config_keys() {
  std::vector<ConfigKeyDoc> keys(std::begin(kModelKeys), std::end(kModelKeys));
  keys.push_back(kToolCallGrammarKey);
  for (const PromptNormalizationRule& rule : prompt_normalization_rules()) {
    keys.push_back({std::string("prompt_normalization.") + rule.name, "true|false",
                    rule.on_by_default ? "true" : "false", rule.help});
  }
  return keys;
}

void apply_config_file(const nlohmann::json& document, const std::string& file_name,
                       const std::vector<std::string>& set_by_flags, ServerOptions& options) {
  if (!document.is_object()) throw Error(file_name + ": the top level must be a JSON object");
  warn_unknown_keys(document, {"cache", "model", "prompt_normalization", "tool_call_grammar"},
                    file_name, "", options.warnings);
  if (const auto* grammar = find_key(document, "tool_call_grammar")) {
    bool value = read_bool(*grammar, file_name, "tool_call_grammar");
    if (!set_by(set_by_flags, "tool_call_grammar")) options.tool_call_grammar = value;
  }
  if (const auto* cache = find_key(document, "cache")) {
    if (!cache->is_object()) invalid(file_name, "cache", "an object");
    options.cache_config = *cache;
  }
  if (const auto* model = find_key(document, "model")) {
    apply_model_section(*model, file_name, set_by_flags, options);
  }
  if (const auto* rules = find_key(document, "prompt_normalization")) {
    apply_prompt_normalization_section(*rules, file_name, options);
  }
}

void validate_options(const ServerOptions& options) {
  if (!options.model_path.empty()) {
    fs::path dir(options.model_path);
    if (dir.extension() == ".gguf") {
      if (!fs::is_regular_file(dir))
        throw Error("GGUF model file not found: " + options.model_path);
    } else {
      if (!fs::is_directory(dir)) throw Error("model folder not found: " + options.model_path);
      if (!fs::exists(dir / "config.json")) {
        throw Error("not a model folder (no config.json): " + options.model_path);
      }
    }
  }
  if (options.port < 1 || options.port > 65535) throw Error("--port must be in 1..65535");
  if (options.metrics_port < 0 || options.metrics_port > 65535) {
    throw Error("--metrics-port must be in 1..65535");
  }
  if (options.metrics_port == options.port) {
    throw Error("--metrics-port must differ from --port");
  }
  if (options.max_body_mb < 1) throw Error("--max-body-mb must be at least 1");
  if (options.max_context < 0) throw Error("--max-context must not be negative");
  if (options.max_image_pixels < 1) throw Error("--max-image-pixels must be at least 1");
  if (options.image_max_tokens < 0) throw Error("--image-max-tokens must be 0 or more");
  if (options.max_images_per_request < 0) {
    throw Error("--max-images-per-request must not be negative (0 refuses every image)");
  }
  if (options.parallel < 1 || options.parallel > kMaxParallel) {
    throw Error("--parallel must be in 1.." + std::to_string(kMaxParallel) +
                " (sequences in flight at once), not " + std::to_string(options.parallel));
  }
  if (options.max_batch_memory_mb < 0) {
    throw Error("--max-batch-memory must not be negative (0 = --parallel full-context sequences)");
  }
  if (options.speculative_tokens > 0 && options.parallel > 1) {
    // Speculative steps (k + 1 generated rows, then a rollback) are not batched with other
    // sequences yet; a speculating session runs its forwards itself, one slot at a time.
    throw Error("--speculative needs --parallel 1 (speculative decoding is not batched yet), not " +
                std::to_string(options.parallel));
  }
}

ParsedCommandLine parse_serve_command_line(int argc, char** argv) {
  ServerOptions options;
  std::string log_format = "text";
  CLI::App app{"Serve a model over the OpenAI and Anthropic HTTP APIs", "qmlx serve"};
  app.footer(kConfigHelp);
  auto* model = app.add_option("--model", options.model_path,
                               "Model folder (HF or MLX safetensors) or .gguf file "
                               "(default: the built-in demo model)");
  app.add_option("--cache-config", options.cache_config_path,
                 "qMLX cache_config.json (see below); flags override it");
  app.add_option("--host", options.host, "Address to listen on")->capture_default_str();
  app.add_option("--port", options.port, "Port for the API")->capture_default_str();
  app.add_option("--max-context", options.max_context,
                 "Largest prompt + max_tokens accepted (0 = the model's context length)")
      ->capture_default_str();
  auto* hybrid = app.add_flag("--hybrid-attention", options.hybrid_attention,
                              "Accepted for qMLX compatibility; the architecture is detected "
                              "from the model's config.json");
  auto* disk = app.add_flag("--disk-kv-restore", options.disk_kv_restore,
                            "Restore K/V and recurrent state from the SSD cache (qMLX flag; "
                            "same as model.deltanet_state_aware)");
  app.add_option("--metrics-port", options.metrics_port, "Port for Prometheus /metrics (0 = none)")
      ->capture_default_str();
  app.add_option("--model-id", options.model_id,
                 "Model id in /v1/models and responses (default: the model folder's name)");
  app.add_option("--model-alias", options.model_aliases,
                 "Another name for the served model, listed in /v1/models (repeatable)")
      ->take_all()
      ->allow_extra_args(false);
  app.add_flag("--strict-model-id", options.strict_model_id,
               "Answer 404 to a request naming a model other than --model-id or an alias "
               "(default: any name is served by the one loaded model)");
  app.add_option("--api-key", options.api_key,
                 "Require this key (Authorization: Bearer KEY, or x-api-key on Anthropic "
                 "routes); without it any non-empty key is accepted");
  app.add_option("--threads", options.threads, "Compute threads (0 = all cores)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--device", options.device,
                 "Where the forward pass runs: cpu (default), vulkan (the first Vulkan device that "
                 "can run it, a discrete GPU before an integrated one or lavapipe) or vulkan:N "
                 "(qmlx devices lists them)")
      ->capture_default_str();
  add_cpu_moe_flags(app, options.cpu_moe_layers);
  app.add_option("--mmproj", options.mmproj,
                 "A llama.cpp mmproj GGUF file holding the vision tower (Qwen3-VL / Qwen3.5 "
                 "merger): images are read with it, in place of the checkpoint's own tower. One "
                 "that does not fit the model is dropped with a warning; text still serves");
  const std::map<std::string, ModelLoadOptions::TowerOffload> offloads = {
      {"auto", ModelLoadOptions::TowerOffload::kAuto},
      {"on", ModelLoadOptions::TowerOffload::kOn},
      {"off", ModelLoadOptions::TowerOffload::kOff}};
  app.add_option("--mmproj-offload", options.vision_offload,
                 "With --device: where the vision tower runs. auto (default): on the device, "
                 "unless the device is the CPU's own cores (lavapipe), where the CPU encoder is "
                 "far faster; on: on the device; off: on the CPU")
      ->transform(CLI::CheckedTransformer(offloads, CLI::ignore_case))
      ->default_str("auto");
  std::string kv_cache_dtype = dtype_name(options.kv_cache_dtype);
  app.add_option("--kv-cache-dtype", kv_cache_dtype,
                 "K/V cache storage: bf16, or int8 (codes + a float32 scale per row and head: "
                 "half the bytes in RAM and in the prefix cache, small logits error), or "
                 "f32 / f16. The cache keeps each dtype's checkpoints apart.")
      ->check(CLI::Validator(
          [](std::string& name) {
            return dtype_from_name(name)
                       ? std::string()
                       : "must be one of " + dtype_choices() + ", not '" + name + "'";
          },
          dtype_choices()))
      ->capture_default_str();
  std::string speculative, speculative_config;
  auto* speculative_flag =
      app.add_option("--speculative", speculative,
                     "Speculative decoding with the model's MTP head: mtp (1 draft token per "
                     "step), mtp:K (K = 1..4) or off (default). Output is unchanged; a model "
                     "without an MTP head decodes plainly");
  app.add_option("--speculative-config", speculative_config,
                 "qMLX / vLLM form of --speculative: "
                 "'{\"method\":\"mtp\",\"num_speculative_tokens\":K}'")
      ->excludes(speculative_flag);
  add_sampling_flags(app, options.sampling);
  app.add_option("--log-format", log_format, "Log lines as text or json")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
  app.add_option("--max-body-mb", options.max_body_mb, "Largest request body in MB (413 above)")
      ->capture_default_str();
  app.add_option("--max-image-pixels", options.max_image_pixels,
                 "Largest image accepted, in pixels (width x height; more gets 400), and the "
                 "most the vision tower is given (the resize's max_pixels; see also "
                 "--image-max-tokens). "
                 "Below the checkpoint's own 16.7 Mpx because encoding time grows with the "
                 "square of the pixels: a 4K screenshot (8.3 Mpx) passes, a 4096 x 4096 image "
                 "would take minutes to encode on a CPU")
      ->capture_default_str();
  app.add_option("--image-max-tokens", options.image_max_tokens,
                 "Most tokens one image is encoded as (one per 32 x 32 pixels); a bigger image "
                 "is scaled down to fit, as Qwen's processor does. The default keeps a 1920 x "
                 "1080 screenshot whole; 0 leaves only --max-image-pixels")
      ->capture_default_str();
  app.add_option("--max-images-per-request", options.max_images_per_request,
                 "Most images one request may carry, its history included (more gets 400; "
                 "0 refuses images)")
      ->capture_default_str();
  app.add_option("--max-queue", options.max_queue,
                 "Requests that may wait for the engine; more get 429")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  CLI::Option* parallel =
      app.add_option("--parallel", options.parallel,
                     "Sequences in flight at once (1.." + std::to_string(kMaxParallel) +
                         "); they share each engine step, so decode reads the weights once for all "
                         "[default: " +
                         std::to_string(kDefaultParallel) + ", 1 with --speculative]");
  app.add_option("--max-batch-memory", options.max_batch_memory_mb,
                 "MiB of K/V and recurrent state the running sequences may need together at "
                 "worst (prompt + max_tokens each); a request waits for room, or gets 503 when "
                 "it cannot fit alone (0 = --parallel full-context sequences)")
      ->capture_default_str();
  app.add_option("--max-step-ms", options.max_step_ms,
                 "Longest engine step, in ms: a long prefill is cut into steps this long, so "
                 "sequences decoding beside it get a token at least this often, and a client "
                 "that leaves stops its prefill within one step (steps of prefills alone may "
                 "last 4 times this; 0 = whole prefill chunks)")
      ->check(CLI::Range(0, 600000))
      ->capture_default_str();
  auto* tool_call_grammar =
      app.add_option("--tool-call-grammar", options.tool_call_grammar,
                     "Hold every tool call to the call syntax and its tool's parameter schema "
                     "(true/false; false: only strict tools' calls)")
          ->capture_default_str();
  bool no_ui = false;
  app.add_flag("--no-ui", no_ui,
               "Turn off the status page (GET /) and its data routes (/admin/ui/...)");
  app.add_flag("--ui-show-text", options.ui_show_text,
               "Show prompt text on the status page: the text on both sides of a divergence "
               "(off: its positions and the kind of span only)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return {std::nullopt, app.exit(e)};
  }
  options.ui_enabled = !no_ui;
  if (!speculative.empty()) options.speculative_tokens = parse_speculative_flag(speculative);
  if (!speculative_config.empty())
    options.speculative_tokens = parse_speculative_config(speculative_config);
  // Speculative steps are not batched, so speculation keeps one slot unless asked otherwise.
  if (options.speculative_tokens > 0 && !parallel->count()) options.parallel = 1;
  options.log_format = log_format == "json" ? LogFormat::kJson : LogFormat::kText;
  options.kv_cache_dtype = *dtype_from_name(kv_cache_dtype);
  options.model_path = expand_user(options.model_path);
  if (disk->count()) options.deltanet_state_aware = true;
  if (!options.cache_config_path.empty()) {
    options.cache_config_path = expand_user(options.cache_config_path);
    std::vector<std::string> from_flags;
    if (model->count()) from_flags.push_back("model");
    if (hybrid->count()) from_flags.push_back("hybrid_attention");
    if (disk->count()) from_flags.push_back("deltanet_state_aware");
    if (tool_call_grammar->count()) from_flags.push_back("tool_call_grammar");
    apply_config_file(read_json_file(options.cache_config_path), options.cache_config_path,
                      from_flags, options);
  }
  validate_options(options);
  return {std::move(options), 0};
}

}  // namespace qmlx::server
