#include "server/scheduling/runtime_loader.h"

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "base/error.h"
#include "base/logging.h"
#include "base/process.h"
#include "base/progress.h"
#include "engine/batch_engine.h"
#include "engine/model_identity.h"
#include "engine/sampler.h"
#include "engine/session.h"
#include "engine/speculative.h"
#include "engine/speculative_config.h"
#include "image/preprocessor_config.h"
#include "model/vision_config.h"
#include "server/scheduling/batch_memory.h"
#include "server/scheduling/image_encoding.h"
#include "text/template/chat_prompt.h"

namespace qmlx::server {
namespace {

namespace fs = std::filesystem;
using ordered_json = nlohmann::ordered_json;

class EngineSampler : public TokenSampler {
 public:
  EngineSampler(const qmlx::SamplingParams& params, int32_t max_token_id)
      : sampler_(params, max_token_id) {}
  int32_t sample(std::span<const float> logits, std::span<const int32_t> history) override {
    return sampler_.sample(logits, history);
  }
  Sampler& engine() { return sampler_; }

 private:
  Sampler sampler_;
};

class EngineSpeculation : public SpeculativeDecoding {
 public:
  EngineSpeculation(Session& session, const SpeculativeOptions& options)
      : decoder_(session, options) {}
  const SpeculativeStep& step(int32_t token, TokenSampler& sampler,
                              std::span<const int32_t> history, int max_drafts,
                              TokenConstraint* constraint) override {
    auto* engine = dynamic_cast<EngineSampler*>(&sampler);
    if (!engine) throw Error("speculative decoding needs the engine's own sampler");
    return decoder_.step(token, engine->engine(), history, max_drafts, constraint);
  }
  void keep(int used) override { decoder_.keep(used); }
  const StateSource& state_after(int fed) override { return decoder_.state_after(fed); }
  const SpeculativeCounts& counts() const override { return decoder_.counts(); }
  SpeculativeDecoder& decoder() { return decoder_; }

 private:
  SpeculativeDecoder decoder_;
};

class EngineSession : public InferenceSession {
 public:
  // speculative.draft_tokens 0: plain decoding.
  EngineSession(std::shared_ptr<const Model> model, SessionOptions options,
                const SpeculativeOptions& speculative)
      : session_(std::move(model), options) {
    if (speculative.draft_tokens > 0)
      speculation_ = std::make_unique<EngineSpeculation>(session_, speculative);
  }
  int64_t position() const override { return session_.position(); }
  void reset() override { session_.reset(0); }
  // Through the decoder when speculating, so the MTP head sees the prompt's rows too.
  void prefill(std::span<const int32_t> ids) override {
    if (speculation_)
      speculation_->decoder().prefill(ids);
    else
      session_.prefill(ids);
  }
  int64_t prefill_until_cancelled(std::span<const int32_t> ids,
                                  const std::atomic<bool>& cancel) override {
    if (speculation_) return InferenceSession::prefill_until_cancelled(ids, cancel);
    const int64_t before = session_.position();
    session_.prefill(ids, {}, &cancel);
    return session_.position() - before;
  }
  void decode(int32_t id) override { session_.decode(id); }
  std::span<const float> logits() const override { return session_.logits(); }
  StateSource& state_source() override { return session_; }
  StateSink& state_sink() override { return session_; }
  void set_images(std::vector<SequenceImage> images) override {
    session_.set_images(std::move(images));
  }
  SpeculativeDecoding* speculative() override { return speculation_.get(); }

 private:
  Session session_;
  std::unique_ptr<EngineSpeculation> speculation_;
};

// The speculative decoding of `options` for `model`: off, with one line saying why, when it
// cannot run there (no MTP head, or one its device does not run: speculation_unavailable).
// Throws when its head is
// there but was dropped at load (incomplete or malformed): the checkpoint promised multi-token
// prediction and cannot give it.
SpeculativeOptions speculative_options(const Model& model, const ServerOptions& options) {
  SpeculativeOptions speculative;
  speculative.draft_tokens = 0;
  if (options.speculative_tokens == 0) return speculative;
  if (model.mtp_dropped())
    throw Error("speculative decoding (--speculative) needs the MTP head, but " +
                model.mtp_unavailable_reason());
  if (const std::string why = speculation_unavailable(model); !why.empty()) {
    log_info("speculative decoding off: " + why);
    return speculative;
  }
  speculative.draft_tokens = options.speculative_tokens;
  speculative.reject_probability = speculative_reject_probability_from_env();
  log_info("speculative decoding: MTP head, " + std::to_string(speculative.draft_tokens) +
           " draft token(s) per step" +
           (speculative.reject_probability > 0
                ? " (test hook: drafts rejected with probability " +
                      std::to_string(speculative.reject_probability) + ")"
                : ""));
  return speculative;
}

qmlx::SamplingParams engine_params(const SamplingParams& p, uint64_t seed) {
  qmlx::SamplingParams e;
  e.temperature = static_cast<float>(p.temperature);
  e.top_k = p.top_k;
  e.top_p = static_cast<float>(p.top_p);
  e.min_p = static_cast<float>(p.min_p);
  e.repetition_penalty = static_cast<float>(p.repetition_penalty);
  e.presence_penalty = static_cast<float>(p.presence_penalty);
  e.frequency_penalty = static_cast<float>(p.frequency_penalty);
  e.seed = seed;
  return e;
}

int64_t context_length_of(const std::string& dir) {
  std::ifstream in(fs::path(dir) / "config.json");
  auto config = nlohmann::json::parse(in, nullptr, false);
  if (config.is_discarded()) return 0;
  for (const auto* section :
       {&config, config.contains("text_config") ? &config["text_config"] : &config}) {
    auto it = section->find("max_position_embeddings");
    if (it != section->end() && it->is_number_integer()) return it->get<int64_t>();
  }
  return 0;
}

std::vector<int32_t> stop_ids(const Tokenizer& tokenizer, const ChatTemplate& chat) {
  std::vector<int32_t> ids;
  for (const std::string& name :
       {std::string("<|im_end|>"), std::string("<|endoftext|>"), chat.eos_token()}) {
    if (name.empty()) continue;
    auto id = tokenizer.token_id(name);
    if (id && std::find(ids.begin(), ids.end(), *id) == ids.end()) ids.push_back(*id);
  }
  return ids;
}

RenderedPrompt render(const ChatTemplate& chat, const Tokenizer& tokenizer,
                      const ordered_json& messages, const ordered_json& tools,
                      bool add_generation_prompt, const ordered_json& kwargs) {
  ChatPrompt prompt =
      render_chat_prompt(chat, tokenizer, messages, tools.empty() ? ordered_json(nullptr) : tools,
                         add_generation_prompt, kwargs);
  return {std::move(prompt.text),
          std::move(prompt.ids),
          static_cast<int64_t>(prompt.last_message_end),
          static_cast<int64_t>(prompt.last_user_start),
          std::vector<int64_t>(prompt.edit_points.begin(), prompt.edit_points.end()),
          {}};
}

// Why the preprocessing's patch geometry cannot feed `tower`, or "" when it can. The two are
// read from different files (preprocessor_config.json and the tower's config.json or mmproj
// keys), and a fine-tune or converter can change one without the other; the pixel_values rows
// and the pads per image would then fit no tower, so every image request would fail. `source`
// names where `preprocess` came from.
std::string geometry_mismatch(const image::VisionPreprocessConfig& preprocess,
                              const VisionConfig& tower, const std::string& source) {
  struct Key {
    const char* name;  // in preprocessor_config.json
    int value;
    const char* tower_name;  // in the tower's vision_config
    int tower_value;
  };
  const Key keys[] = {
      {"patch_size", preprocess.patch_size, "patch_size", tower.patch_size},
      {"temporal_patch_size", preprocess.temporal_patch_size, "temporal_patch_size",
       tower.temporal_patch_size},
      {"merge_size", preprocess.merge_size, "spatial_merge_size", tower.spatial_merge_size}};
  std::string differences;
  for (const Key& k : keys) {
    if (k.value == k.tower_value) continue;
    differences += std::string(differences.empty() ? "" : ", ") + k.name + " " +
                   std::to_string(k.value) + " differs from the vision tower's " + k.tower_name +
                   " " + std::to_string(k.tower_value);
  }
  return differences.empty() ? "" : source + " " + differences;
}

// The vision fields of the runtime: whether the model reads images, its preprocessing (the
// folder's preprocessor_config.json, Qwen3.5's values without one) and the <|image_pad|> id. A
// preprocessor_config.json that does not parse, or whose patch geometry is not the tower's,
// turns images off with one warning naming why, as a tower that does not load does: the text
// model still serves, and an image request gets the text-only model's 400 with that reason.
void set_vision(const Model& model, const std::string& model_dir, const Tokenizer& tokenizer,
                ModelRuntime& runtime) {
  runtime.vision_unavailable = model.has_vision() ? "" : model.vision_unavailable_reason();
  const auto turn_images_off = [&runtime](const std::string& why) {
    if (!runtime.vision_unavailable.empty()) return;  // off already, for a reason said before
    log_warn("images are turned off: " + why);
    runtime.vision_unavailable = why;
  };
  const fs::path config = fs::path(model_dir) / "preprocessor_config.json";
  std::string preprocess_source = "the default preprocessing (no preprocessor_config.json)";
  if (fs::is_directory(model_dir) && fs::exists(config)) {
    preprocess_source = "preprocessor_config.json";
    try {
      std::ifstream in(config, std::ios::binary);
      const std::string text((std::istreambuf_iterator<char>(in)), {});
      runtime.vision_preprocess = image::parse_preprocessor_config(text, config.string());
    } catch (const Error& e) {
      turn_images_off(e.what());
    }
  }
  if (model.has_vision()) {
    const std::string mismatch = geometry_mismatch(
        runtime.vision_preprocess, model.weights().vision->config, preprocess_source);
    if (!mismatch.empty()) turn_images_off(mismatch);
  }
  runtime.image_pad_id = tokenizer.token_id("<|image_pad|>").value_or(-1);
  if (runtime.vision_unavailable.empty() && runtime.image_pad_id < 0) {
    runtime.vision_unavailable = "the tokenizer has no <|image_pad|> token";
  }
}

std::string describe_layers(const ModelConfig& config) {
  int full = 0;
  for (int i = 0; i < config.num_layers; ++i) full += config.is_full_attention(i) ? 1 : 0;
  std::string text = std::to_string(config.num_layers) + " layers (" + std::to_string(full) +
                     " full attention, " + std::to_string(config.num_layers - full) +
                     " Gated DeltaNet)";
  if (config.num_experts > 0) {
    text += ", MoE " + std::to_string(config.num_experts) + " experts top-" +
            std::to_string(config.experts_per_token);
  }
  return text;
}

void warn_on_contradictions(const ModelConfig& config, const ServerOptions& options) {
  bool recurrent = false;
  for (int i = 0; i < config.num_layers; ++i) recurrent |= !config.is_full_attention(i);
  if (options.hybrid_attention && !recurrent) {
    log_warn("--hybrid-attention was given, but the model (" + config.model_type +
             ") has attention layers only; continuing with the detected architecture");
  }
  if (options.deltanet_state_aware && !recurrent) {
    log_warn("deltanet_state_aware / --disk-kv-restore was given, but the model (" +
             config.model_type + ") has no Gated DeltaNet layers; nothing to do for them");
  }
}

// A person watching a terminal gets a bar; a log (a file, a pipe, or JSON lines even on a
// terminal) gets a plain line every few seconds.
ProgressDisplay weights_progress(const ServerOptions& options) {
  const std::string label = "loading weights";
  if (options.log_format == LogFormat::kText && isatty(fileno(stderr))) {
    return ProgressDisplay::bar(label, stderr);
  }
  return ProgressDisplay::lines(
      label, [](const std::string& line) { log_info(line); }, std::chrono::seconds(5));
}

}  // namespace

std::shared_ptr<ModelRuntime> load_model_runtime(const std::string& model_dir,
                                                 const ServerOptions& options) {
  log_info("loading model from " + model_dir);
  ProgressDisplay progress = weights_progress(options);
  ModelLoadOptions load_options;
  load_options.device = options.device;
  load_options.cpu_moe_layers = options.cpu_moe_layers;
  load_options.mmproj = options.mmproj;
  load_options.vision_offload = options.vision_offload;
  std::shared_ptr<const Model> model = Model::load(
      model_dir, [&progress](uint64_t done, uint64_t total) { progress.update(done, total); },
      load_options);
  progress.finish();
  log_info("loaded weights (" + std::to_string(current_rss_bytes() >> 20) + " MiB resident)");
  if (const DeviceForward* device = model->device())
    log_info("forward pass on " + device->description() + ": " +
             std::to_string(device->weight_bytes() >> 20) + " MiB of weights in device memory");
  if (const DeviceForward* device = model->device())
    if (const std::string line = describe_host_experts(device->host_experts()); !line.empty())
      log_info(line);
  // First, so a request the model cannot serve ends the start before anything else loads.
  const SpeculativeOptions speculative = speculative_options(*model, options);
  std::shared_ptr<const Tokenizer> tokenizer = Tokenizer::from_file(model_dir);
  auto chat = std::make_shared<const ChatTemplate>(ChatTemplate::from_model_dir(model_dir));
  log_info("loaded tokenizer and chat template");
  warn_on_contradictions(model->config(), options);

  auto runtime = std::make_shared<ModelRuntime>();
  const fs::path model_path = fs::path(model_dir).lexically_normal();
  std::string folder = model_path.extension() == ".gguf" ? model_path.stem().string()
                                                         : model_path.filename().string();
  if (folder.empty()) folder = fs::path(model_dir).lexically_normal().parent_path().filename();
  runtime->model_id = options.model_id.empty() ? folder : options.model_id;
  runtime->architecture = model->config().model_type;
  runtime->backend = model->backend_description();
  if (const DeviceForward* device = model->device()) {
    runtime->device_state_memory =
        device_state_memory(device->memory_bytes(), device->weight_bytes(), options.device);
  }
  runtime->description = describe_layers(model->config());
  runtime->context_length = context_length_of(model_dir);
  runtime->identity = model_identity(*model);
  SessionOptions session_options;
  session_options.kv_dtype = options.kv_cache_dtype;
  runtime->state_layout = state_layout_of(*model, session_options.kv_dtype);
  runtime->tokenizer = tokenizer;
  runtime->stop_token_ids = stop_ids(*tokenizer, *chat);
  runtime->tool_call_format = tool_call_format_for_template(chat->source());
  set_vision(*model, model_dir, *tokenizer, *runtime);
  if (runtime->vision_unavailable.empty()) {
    runtime->encode_images =
        make_image_encoder(model, std::make_shared<ImageEmbeddingCache>(kImageEmbeddingCacheBytes));
  }
  runtime->render_chat = [chat, tokenizer](const ordered_json& messages, const ordered_json& tools,
                                           bool add_generation_prompt, const ordered_json& kwargs) {
    return render(*chat, *tokenizer, messages, tools, add_generation_prompt, kwargs);
  };
  runtime->render_text = [chat](const ordered_json& messages, const ordered_json& tools,
                                bool add_generation_prompt, const ordered_json& kwargs) {
    return chat->render(messages, tools.empty() ? ordered_json(nullptr) : tools,
                        add_generation_prompt, kwargs);
  };
  runtime->speculative_tokens = speculative.draft_tokens;
  // One step loop for every session: with --parallel N the slots' sequences share its steps.
  // Speculative decoding is not batched yet: its sessions run their forwards directly, which is
  // only safe with one slot (options.cpp refuses --speculative with --parallel above 1).
  BatchEngineOptions engine_options;
  engine_options.max_step_seconds = options.max_step_ms / 1000.0;
  // Prefills alone are bounded too (their client may leave, which is heard at a step's end),
  // but looser: no one decodes beside them, and 500 ms steps cost a lone 8k prefill 17% of its
  // throughput on the 0.8B shape (weights read again each step; BENCHMARKS.md).
  engine_options.max_prefill_step_seconds =
      kPrefillAloneStepFactor * engine_options.max_step_seconds;
  auto engine = std::make_shared<BatchEngine>(model, engine_options);
  engine->calibrate();
  runtime->max_step_ms = options.max_step_ms;
  runtime->prefill_rate = [engine](int64_t depth) {
    return engine->step_times().prefill_rate(depth, engine->step_tokens());
  };
  if (speculative.draft_tokens == 0) session_options.engine = engine;
  runtime->new_session = [model, session_options, speculative] {
    return std::make_unique<EngineSession>(model, session_options, speculative);
  };
  runtime->listen_steps = [engine](StepListener listener) {
    if (!listener) return engine->set_step_observer({});
    engine->set_step_observer([listener = std::move(listener)](const BatchStepStats& s) {
      listener(s.sequences, s.decode_rows + s.prompt_rows, s.seconds);
    });
  };
  int32_t max_token_id = tokenizer->vocab_size() - 1;
  runtime->new_sampler = [max_token_id](const SamplingParams& params, uint64_t seed) {
    return make_engine_sampler(params, seed, max_token_id);
  };
  return runtime;
}

std::unique_ptr<TokenSampler> make_engine_sampler(const SamplingParams& params, uint64_t seed,
                                                  int32_t max_token_id) {
  return std::make_unique<EngineSampler>(engine_params(params, seed), max_token_id);
}

}  // namespace qmlx::server
