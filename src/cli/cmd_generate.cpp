// `qmlx generate`: loads a model, prefills a prompt (token ids or text), and generates tokens
// greedily or by sampling. With --json it prints one object with the tokens, top log-probs,
// text and timings; --logits-out writes, per generated token, the logits row it was drawn from
// (raw little-endian float32), which is what the oracle tests compare with the reference.
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "base/logging.h"
#include "base/process.h"
#include "base/thread_pool.h"
#include "cli/command.h"
#include "engine/cpu_moe_flags.h"
#include "engine/sampler.h"
#include "engine/session.h"
#include "engine/speculative.h"
#include "engine/speculative_config.h"
#include "model/gguf_file.h"
#include "modelgen/demo_model.h"
#include "text/tokenizer/tokenizer.h"

namespace qmlx::cli {
namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

std::vector<int32_t> parse_token_list(const std::string& list) {
  std::vector<int32_t> ids;
  std::stringstream in(list);
  std::string item;
  while (std::getline(in, item, ',')) {
    try {
      size_t used = 0;
      long v = std::stol(item, &used);
      if (used != item.size()) throw std::invalid_argument(item);
      ids.push_back(int32_t(v));
    } catch (const std::exception&) {
      throw Error("--tokens: '" + item + "' is not a token id");
    }
  }
  return ids;
}

DType parse_kv_dtype(const std::string& s) {
  if (auto t = dtype_from_name(s)) return *t;
  throw Error("--kv-cache-dtype must be one of " + dtype_choices() + ", not '" + s + "'");
}

std::unique_ptr<Tokenizer> load_tokenizer(const std::string& dir) {
  if (!is_gguf_path(dir) && !std::filesystem::exists(dir + "/tokenizer.json")) return nullptr;
  return Tokenizer::from_file(dir);
}

double per_second(size_t n, double ms) { return ms > 0 ? 1000.0 * double(n) / ms : 0.0; }

struct Options {
  std::string model, tokens, prompt, logits_out, kv_dtype = "f32", device = "cpu";
  int max_tokens = 16, top_logprobs = 0, threads = 0, cpu_moe_layers = 0;
  bool json = false, stop_at_eos = false;
  SamplingParams sampling;
  std::string speculative, speculative_config;
};

// Draft tokens per step from --speculative / --speculative-config; 0 (with one line saying why)
// when it cannot run (engine/speculative.h's speculation_unavailable). Throws when its head is
// there but was dropped at load (incomplete or malformed): the checkpoint promised multi-token
// prediction and cannot give it.
int speculative_tokens(const Options& o, const Model& model) {
  const int k = !o.speculative.empty()          ? parse_speculative_flag(o.speculative)
                : !o.speculative_config.empty() ? parse_speculative_config(o.speculative_config)
                                                : 0;
  if (k > 0 && model.mtp_dropped())
    throw Error("speculative decoding (--speculative) needs the MTP head, but " +
                model.mtp_unavailable_reason());
  if (k > 0) {
    if (const std::string why = speculation_unavailable(model); !why.empty()) {
      log_info("speculative decoding off: " + why);
      return 0;
    }
  }
  return k;
}

int run_generate(int argc, char** argv) {
  CLI::App app{"Generate tokens from a prompt", "generate"};
  Options o;
  app.add_option("--model", o.model, "model folder (default: the built-in demo model)");
  auto* tokens = app.add_option("--tokens", o.tokens, "prompt as comma-separated token ids");
  auto* prompt = app.add_option("--prompt", o.prompt, "prompt text (needs tokenizer.json)");
  tokens->excludes(prompt);
  app.add_option("--max-tokens", o.max_tokens, "tokens to generate")->check(CLI::NonNegativeNumber);
  app.add_option("--temperature", o.sampling.temperature, "0 = greedy");
  app.add_option("--top-k", o.sampling.top_k, "keep the k most likely tokens (0 = off)");
  app.add_option("--top-p", o.sampling.top_p, "nucleus sampling mass (1 = off)");
  app.add_option("--min-p", o.sampling.min_p, "drop tokens below min_p * p_max (0 = off)");
  app.add_option("--seed", o.sampling.seed, "sampling seed");
  app.add_option("--top-logprobs", o.top_logprobs, "report the K most likely tokens per step");
  app.add_option("--threads", o.threads, "worker threads (default: all cores)");
  app.add_option("--device", o.device,
                 "Where the forward pass runs: cpu (default), vulkan (the first Vulkan device that "
                 "can run it, a discrete GPU before an integrated one or lavapipe) or vulkan:N "
                 "(qmlx devices lists them)");
  add_cpu_moe_flags(app, o.cpu_moe_layers);
  app.add_option("--kv-cache-dtype,--kv-dtype", o.kv_dtype,
                 "K/V cache storage: f32 (default here: exact, what the oracle tests compare) | "
                 "bf16 (serve's default) | int8 (codes + a float32 scale per row and head: "
                 "half of bf16's bytes) | f16");
  app.add_option("--logits-out", o.logits_out, "write each step's logits (float32) to FILE");
  app.add_flag("--stop-at-eos", o.stop_at_eos, "stop at <|im_end|> / <|endoftext|>");
  app.add_flag("--json", o.json, "print one JSON object");
  auto* speculative_flag = app.add_option(
      "--speculative", o.speculative,
      "speculative decoding with the model's MTP head: mtp (1 draft token per step), mtp:K "
      "(K = 1..4) or off; the output is unchanged");
  app.add_option("--speculative-config", o.speculative_config,
                 "qMLX / vLLM form: '{\"method\":\"mtp\",\"num_speculative_tokens\":K}'")
      ->excludes(speculative_flag);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  if (o.tokens.empty() && o.prompt.empty()) throw Error("give --tokens or --prompt");
  if (o.threads > 0) set_default_threads(o.threads);
  if (o.model.empty()) o.model = ensure_demo_model();

  auto load_start = Clock::now();
  ModelLoadOptions load_options;
  load_options.device = o.device;
  load_options.cpu_moe_layers = o.cpu_moe_layers;
  std::shared_ptr<const Model> model = Model::load(o.model, {}, load_options);
  const double load_ms = ms_since(load_start);
  log_info("loaded " + o.model + ": " + std::to_string(model->weights().matrix_bytes() >> 20) +
           " MiB of weights, resident " + std::to_string(current_rss_bytes() >> 20) + " MiB" +
           (model->device() ? ", forward pass on " + model->backend_description() : ""));
  if (const DeviceForward* device = model->device())
    if (const std::string line = describe_host_experts(device->host_experts()); !line.empty())
      log_info(line);
  const int draft_tokens = speculative_tokens(o, *model);

  std::unique_ptr<Tokenizer> tokenizer = load_tokenizer(o.model);
  std::vector<int32_t> prompt_ids;
  if (!o.prompt.empty()) {
    if (!tokenizer) throw Error(o.model + "/tokenizer.json: missing file (needed for --prompt)");
    prompt_ids = tokenizer->encode(o.prompt);
  } else {
    prompt_ids = parse_token_list(o.tokens);
  }
  if (prompt_ids.empty()) throw Error("the prompt is empty");
  const int32_t max_token_id = tokenizer ? tokenizer->vocab_size() - 1 : -1;
  std::vector<int32_t> eos;
  if (tokenizer)
    for (const char* t : {"<|im_end|>", "<|endoftext|>"})
      if (auto id = tokenizer->token_id(t)) eos.push_back(*id);

  SessionOptions session_options;
  session_options.kv_dtype = parse_kv_dtype(o.kv_dtype);
  Session session(model, session_options);
  std::unique_ptr<std::ofstream> logits_file;
  if (!o.logits_out.empty()) {
    logits_file = std::make_unique<std::ofstream>(o.logits_out, std::ios::binary);
    if (!*logits_file) throw Error(o.logits_out + ": cannot open for writing");
  }

  std::unique_ptr<SpeculativeDecoder> speculative;
  if (draft_tokens > 0) {
    SpeculativeOptions so;
    so.draft_tokens = draft_tokens;
    so.reject_probability = speculative_reject_probability_from_env();
    speculative = std::make_unique<SpeculativeDecoder>(session, so);
  }

  auto prefill_start = Clock::now();
  if (speculative)
    speculative->prefill(prompt_ids);
  else
    session.prefill(prompt_ids);
  const double prefill_ms = ms_since(prefill_start);

  Sampler sampler(o.sampling, max_token_id);
  std::vector<int32_t> generated;
  nlohmann::json top = nlohmann::json::array();
  double decode_ms = 0;
  size_t decoded = 0;
  // The last speculative step's tokens, taken one by one like sampled ones.
  const SpeculativeStep* step = nullptr;
  size_t taken = 0;
  for (int i = 0; i < o.max_tokens; ++i) {
    std::span<const float> logits;
    int32_t token;
    if (step && taken < step->tokens.size()) {
      logits = step->logits[taken];
      token = step->tokens[taken++];
    } else {
      step = nullptr;
      logits = session.logits();
      token = sampler.sample(logits, generated);
    }
    if (logits_file)
      logits_file->write(reinterpret_cast<const char*>(logits.data()),
                         std::streamsize(logits.size() * sizeof(float)));
    if (o.top_logprobs > 0) {
      nlohmann::json step_top = nlohmann::json::array();
      for (const auto& t : top_logprobs(logits, o.top_logprobs, max_token_id))
        step_top.push_back({t.id, t.logprob});
      top.push_back(step_top);
    }
    generated.push_back(token);
    if (o.stop_at_eos && std::find(eos.begin(), eos.end(), token) != eos.end()) break;
    if (i + 1 == o.max_tokens) break;
    if (step && taken < step->tokens.size()) continue;  // a kept draft: already fed
    auto step_start = Clock::now();
    if (speculative) {
      step = &speculative->step(token, sampler, generated, o.max_tokens - i - 2);
      taken = 0;
    } else {
      session.decode(token);
    }
    decode_ms += ms_since(step_start);
    decoded += step ? step->tokens.size() : 1;
  }
  if (step) speculative->keep(int(taken));
  std::string text = tokenizer ? tokenizer->decode(generated) : "";

  nlohmann::json timings = {
      {"load_ms", load_ms},
      {"prefill_ms", prefill_ms},
      {"prefill_tokens_per_second", per_second(prompt_ids.size(), prefill_ms)},
      {"decode_ms", decode_ms},
      {"decode_tokens_per_second", per_second(decoded, decode_ms)},
      {"peak_rss_bytes", peak_rss_bytes()}};
  if (speculative) {
    const SpeculativeCounts& c = speculative->counts();
    timings["speculative"] = {
        {"draft_tokens", c.drafted},
        {"accepted_tokens", c.accepted},
        {"steps", c.steps},
        {"acceptance_rate", c.drafted ? double(c.accepted) / double(c.drafted) : 0.0},
        {"tokens_per_step", c.steps ? double(c.tokens) / double(c.steps) : 0.0}};
  }
  if (o.json) {
    nlohmann::json out = {{"prompt_tokens", prompt_ids},
                          {"tokens", generated},
                          {"top_logprobs", top},
                          {"text", text},
                          {"timings", timings}};
    std::printf("%s\n", out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
    return 0;
  }
  if (tokenizer) {
    std::printf("%s\n", text.c_str());
  } else {
    for (size_t i = 0; i < generated.size(); ++i) std::printf("%s%d", i ? "," : "", generated[i]);
    std::printf("\n");
  }
  std::fprintf(stderr,
               "prefill %zu tokens in %.1f ms (%.1f tok/s), decode %zu in %.1f ms (%.1f tok/s)\n",
               prompt_ids.size(), prefill_ms, per_second(prompt_ids.size(), prefill_ms), decoded,
               decode_ms, per_second(decoded, decode_ms));
  if (speculative) {
    const SpeculativeCounts& c = speculative->counts();
    std::fprintf(stderr, "speculative: %lld of %lld drafts accepted (%.2f), %.2f tokens per step\n",
                 static_cast<long long>(c.accepted), static_cast<long long>(c.drafted),
                 c.drafted ? double(c.accepted) / double(c.drafted) : 0.0,
                 c.steps ? double(c.tokens) / double(c.steps) : 0.0);
  }
  return 0;
}

}  // namespace

QMLX_COMMAND(generate, "generate", "generate tokens from a prompt with a local model",
             run_generate);

}  // namespace qmlx::cli
