// Decode speed with MTP speculative decoding against acceptance, on a model with an MTP head.
// A random model's head agrees with nothing, so the drafts come from an oracle: the plain greedy
// run's own tokens (SpeculativeOptions::draft_override, the head still runs and costs what it
// costs), and the test hook rejects each with probability p (reject_probability): acceptance is
// then ~(1 - p) per draft. Every run's tokens are checked against the plain run's.
// Prints one JSON line per configuration (k = 0 is plain decoding).
//   qmlx_speculative_bench MODEL_DIR [prompt_tokens=64] [decode_tokens=64] [threads=0]
//                          [--kv-cache-dtype bf16] [--k 1,2,3] [--reject 0,0.1,0.3,0.5]
//                          [--rollback keep|recompute|both]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/thread_pool.h"
#include "bench/engine/weight_bytes.h"
#include "engine/speculative.h"

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

std::vector<double> parse_list(const std::string& text) {
  std::vector<double> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) out.push_back(std::atof(item.c_str()));
  return out;
}

struct Run {
  std::vector<int32_t> tokens;
  double decode_s = 0;
  qmlx::SpeculativeCounts counts;
};

Run plain(std::shared_ptr<const qmlx::Model> model, const qmlx::SessionOptions& options,
          const std::vector<int32_t>& prompt, int n) {
  qmlx::Session session(model, options);
  session.prefill(prompt);
  qmlx::Sampler sampler({}, -1);
  Run run;
  run.tokens.push_back(sampler.sample(session.logits()));
  auto start = Clock::now();
  while (int(run.tokens.size()) < n) {
    session.decode(run.tokens.back());
    run.tokens.push_back(sampler.sample(session.logits()));
  }
  run.decode_s = seconds_since(start);
  return run;
}

Run speculative(std::shared_ptr<const qmlx::Model> model, const qmlx::SessionOptions& options,
                const std::vector<int32_t>& prompt, int n, qmlx::SpeculativeOptions so) {
  qmlx::Session session(model, options);
  qmlx::SpeculativeDecoder decoder(session, so);
  decoder.prefill(prompt);
  qmlx::Sampler sampler({}, -1);
  Run run;
  run.tokens.push_back(sampler.sample(session.logits()));
  auto start = Clock::now();
  while (int(run.tokens.size()) < n) {
    const int room = n - int(run.tokens.size());
    const qmlx::SpeculativeStep& s = decoder.step(run.tokens.back(), sampler, {}, room - 1);
    for (int32_t t : s.tokens)
      if (int(run.tokens.size()) < n) run.tokens.push_back(t);
  }
  run.decode_s = seconds_since(start);
  run.counts = decoder.counts();
  return run;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args;
  qmlx::DType kv_dtype = qmlx::DType::kBF16;
  std::vector<double> ks = {1, 2, 3}, rejects = {0, 0.1, 0.3, 0.5};
  std::string rollback = "keep";
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--kv-cache-dtype" && i + 1 < argc) {
      auto t = qmlx::dtype_from_name(argv[++i]);
      if (!t) {
        std::fprintf(stderr, "--kv-cache-dtype must be one of %s\n", qmlx::dtype_choices().c_str());
        return 2;
      }
      kv_dtype = *t;
    } else if (arg == "--k" && i + 1 < argc) {
      ks = parse_list(argv[++i]);
    } else if (arg == "--reject" && i + 1 < argc) {
      rejects = parse_list(argv[++i]);
    } else if (arg == "--rollback" && i + 1 < argc) {
      rollback = argv[++i];
    } else {
      args.push_back(arg);
    }
  }
  if (args.empty() || (rollback != "keep" && rollback != "recompute" && rollback != "both")) {
    std::fprintf(stderr,
                 "usage: %s MODEL_DIR [prompt_tokens] [decode_tokens] [threads] "
                 "[--kv-cache-dtype T] [--k 1,2,3] [--reject 0,0.1,0.3,0.5] "
                 "[--rollback keep|recompute|both]\n",
                 argv[0]);
    return 2;
  }
  const std::string dir = args[0];
  const int prompt_tokens = args.size() > 1 ? std::atoi(args[1].c_str()) : 64;
  const int decode_tokens = args.size() > 2 ? std::atoi(args[2].c_str()) : 64;
  if (args.size() > 3 && std::atoi(args[3].c_str()) > 0)
    qmlx::set_default_threads(std::atoi(args[3].c_str()));

  auto model = qmlx::Model::load(dir);
  if (!model->has_mtp()) {
    std::fprintf(stderr, "%s has no MTP head (make-model --mtp)\n", dir.c_str());
    return 2;
  }
  std::mt19937 rng(1);
  std::vector<int32_t> prompt(prompt_tokens);
  for (auto& t : prompt) t = int32_t(rng() % 1000);
  qmlx::SessionOptions options;
  options.kv_dtype = kv_dtype;

  const Run reference = plain(model, options, prompt, decode_tokens);
  const double plain_tps = (decode_tokens - 1) / reference.decode_s;
  const double step_bytes = qmlx::bench::weight_bytes_per_token(*model);
  auto print = [&](const nlohmann::json& fields) {
    nlohmann::json out = {{"model", dir},
                          {"kv_cache_dtype", qmlx::dtype_name(kv_dtype)},
                          {"threads", qmlx::default_pool().size()},
                          {"prompt_tokens", prompt_tokens},
                          {"decode_tokens", decode_tokens}};
    out.update(fields);
    std::printf("%s\n", out.dump().c_str());
    std::fflush(stdout);
  };
  print(
      {{"k", 0}, {"decode_tokens_per_second", plain_tps}, {"weight_bytes_per_token", step_bytes}});

  std::vector<qmlx::RollbackMethod> methods;
  if (rollback != "recompute") methods.push_back(qmlx::RollbackMethod::kKeepStates);
  if (rollback != "keep") methods.push_back(qmlx::RollbackMethod::kRecompute);
  for (double k : ks)
    for (double p : rejects)
      for (auto method : methods) {
        qmlx::SpeculativeOptions so;
        so.draft_tokens = int(k);
        so.rollback = method;
        so.reject_probability = p;
        so.reject_seed = 7;
        const std::vector<int32_t>& oracle = reference.tokens;
        const int64_t first = prompt_tokens;  // position of the first generated token
        so.draft_override = [&](int64_t position, int32_t drafted) {
          const int64_t i = position - first;
          return i >= 0 && i < int64_t(oracle.size()) ? oracle[i] : drafted;
        };
        const Run run = speculative(model, options, prompt, decode_tokens, so);
        const qmlx::SpeculativeCounts& c = run.counts;
        const double tps = (decode_tokens - 1) / run.decode_s;
        const double per_step = c.steps ? double(c.tokens) / c.steps : 0;
        // A step reads the main model once over k+1 rows (its LM head twice: the last row's
        // logits and the others'), and the head's k drafts (fc, one layer, the LM head each).
        nlohmann::json fields = {
            {"k", int(k)},
            {"rollback", method == qmlx::RollbackMethod::kKeepStates ? "keep" : "recompute"},
            {"reject_probability", p},
            {"acceptance_rate", c.drafted ? double(c.accepted) / c.drafted : 0},
            {"tokens_per_step", per_step},
            {"decode_tokens_per_second", tps},
            {"speedup", tps / plain_tps},
            {"main_weight_bytes_per_step",
             qmlx::bench::weight_bytes_per_forward(*model, int(k) + 1)},
            {"main_weight_bytes_per_token",
             per_step > 0 ? qmlx::bench::weight_bytes_per_forward(*model, int(k) + 1) / per_step
                          : 0},
            {"mtp_weight_bytes_per_draft", qmlx::bench::mtp_weight_bytes_per_draft(*model)},
            {"weight_bytes_per_token",
             per_step > 0
                 ? (qmlx::bench::weight_bytes_per_forward(*model, int(k) + 1) +
                    double(c.drafted) / c.steps * qmlx::bench::mtp_weight_bytes_per_draft(*model)) /
                       per_step
                 : 0},
            {"exact", run.tokens == reference.tokens}};
        print(fields);
      }
  return 0;
}
