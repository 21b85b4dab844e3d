// Measures prefill and decode throughput of one model folder, and the machine's read bandwidth,
// so decode speed can be judged against its roofline: bandwidth / weight bytes read per token.
// Prints one JSON line.
//   qmlx_engine_bench MODEL_DIR [prompt_tokens=512] [decode_tokens=32] [threads=0]
//                     [--kv-cache-dtype bf16|int8|f32|f16] [--context N]
// --kv-cache-dtype: how the Session stores K/V rows (default bf16, the server's default).
// --context N: decode runs after N positions, the prompt's K/V rows repeated up to N
// (bench/kv_cache/long_context.h): decode speed at long context without the long prefill.
// --device D: the forward pass on D (cpu, vulkan, vulkan:N); with a device, give the device's
// copy bandwidth (bench/gpu/device_bandwidth) as QMLX_BENCH_BANDWIDTH_GBS for its roofline.
// --batch B[,B...]: also decodes B sequences together (Model::forward_batch, one generated row
// each, every sequence after the same prompt) for decode_tokens steps, per B: the time of one
// step and the aggregate tokens/s (batch_decode in the JSON).
// QMLX_BENCH_BANDWIDTH_GBS=<GB/s> skips the bandwidth pass (whose 512 MiB buffer would
// otherwise count in the peak resident memory) and uses the given figure for the roofline.
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/process.h"
#include "base/thread_pool.h"
#include "bench/engine/weight_bytes.h"
#include "bench/kv_cache/long_context.h"
#include "engine/session.h"
#include "kernels/vec.h"
#include "model/device_forward.h"

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// CPU seconds of all threads: on a shared machine, tokens per CPU-second says more about the
// code than wall time does.
double process_cpu_seconds() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

// Best of several parallel passes summing a buffer much larger than the last-level cache.
double read_bandwidth_gb_per_s() {
  const size_t n = size_t(512) << 20 >> 2;  // 512 MiB of floats
  std::vector<float> buf(n, 1.f);
  double best = 0;
  for (int rep = 0; rep < 4; ++rep) {
    std::vector<float> partial(qmlx::default_pool().size(), 0.f);
    auto start = Clock::now();
    qmlx::default_pool().parallel_for(n, [&](size_t b, size_t e) {
      partial[b * partial.size() / n] = qmlx::vec::sum(buf.data() + b, e - b);
    });
    double s = seconds_since(start);
    if (partial[0] < 0) std::printf("impossible\n");
    best = std::max(best, double(n * sizeof(float)) / s / 1e9);
  }
  return best;
}

// Token ids the benchmarks feed: the first 1,000 of the vocabulary (fewer in a tiny model's).
uint32_t token_range(const qmlx::Model& model) {
  return uint32_t(std::min(1000, model.config().vocab_size));
}

// Decode steps of `batch` sequences together, each at the prompt's state: one forward_batch of
// one generated row per sequence per step.
nlohmann::json batch_decode(const qmlx::Model& model, const qmlx::ModelState& prompt_state,
                            int batch, int steps, std::mt19937& rng) {
  std::vector<qmlx::ModelState> states;
  for (int b = 0; b < batch; ++b) states.push_back(model.clone_state(prompt_state));
  std::vector<int32_t> tokens(batch);
  std::vector<std::vector<float>> logits(batch, std::vector<float>(model.config().vocab_size));
  std::vector<qmlx::BatchSegment> segments(batch);
  for (int b = 0; b < batch; ++b) {
    segments[b].tokens = std::span(&tokens[b], 1);
    segments[b].state = &states[b];
    segments[b].kind = qmlx::RowKind::kGenerated;
    segments[b].logits = logits[b].data();
  }
  auto start = Clock::now();
  for (int step = 0; step < steps; ++step) {
    for (int32_t& t : tokens) t = int32_t(rng() % token_range(model));
    model.forward_batch(segments);
  }
  const double s = std::max(1e-9, seconds_since(start));
  return {{"batch", batch},
          {"step_seconds", s / steps},
          {"tokens_per_second", double(batch) * steps / s}};
}

qmlx::vulkan::TransferCounts device_counts(const qmlx::Model& model) {
  return model.device() ? model.device()->counts() : qmlx::vulkan::TransferCounts{};
}

// Per decode step on a device: submissions, dispatches, read-backs, and the host's time
// recording commands against its time waiting for the device (the profile that says whether a
// step is bound by the host's recording or by the device); null on the CPU.
nlohmann::json device_step_profile(const qmlx::vulkan::TransferCounts& a,
                                   const qmlx::vulkan::TransferCounts& b, int steps) {
  if (b.submissions == a.submissions || steps <= 0) return nullptr;
  const double n = steps;
  return {{"submissions", double(b.submissions - a.submissions) / n},
          {"dispatches", double(b.dispatches - a.dispatches) / n},
          {"host_reads", double(b.host_reads - a.host_reads) / n},
          {"staging_allocations", double(b.staging_allocations - a.staging_allocations) / n},
          {"record_ms", double(b.record_ns - a.record_ns) / n / 1e6},
          {"wait_ms", double(b.wait_ns - a.wait_ns) / n / 1e6}};
}

double load_average() {
  double avg[1] = {0};
  return getloadavg(avg, 1) == 1 ? avg[0] : -1.0;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args;
  qmlx::DType kv_dtype = qmlx::DType::kBF16;
  int64_t context = 0;
  std::vector<int> batches;
  qmlx::ModelLoadOptions load_options;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--kv-cache-dtype" && i + 1 < argc) {
      auto t = qmlx::dtype_from_name(argv[++i]);
      if (!t) {
        std::fprintf(stderr, "--kv-cache-dtype must be one of %s\n", qmlx::dtype_choices().c_str());
        return 2;
      }
      kv_dtype = *t;
    } else if (arg == "--device" && i + 1 < argc) {
      load_options.device = argv[++i];
    } else if (arg == "--context" && i + 1 < argc) {
      context = std::atoll(argv[++i]);
    } else if (arg == "--batch" && i + 1 < argc) {
      for (const char* p = argv[++i]; *p;) {
        char* end = nullptr;
        const long b = std::strtol(p, &end, 10);
        if (end == p || b < 1 || (*end && *end != ',')) {
          std::fprintf(stderr, "--batch takes sizes like 1,2,4,8\n");
          return 2;
        }
        batches.push_back(int(b));
        p = *end ? end + 1 : end;
      }
    } else {
      args.push_back(arg);
    }
  }
  if (args.empty()) {
    std::fprintf(stderr,
                 "usage: %s MODEL_DIR [prompt_tokens] [decode_tokens] [threads] "
                 "[--kv-cache-dtype %s] [--context N] [--batch B[,B...]] [--device D]\n"
                 "  QMLX_PREFILL_CHUNK: tokens per prefill forward call (default: the engine's)\n",
                 argv[0], qmlx::dtype_choices().c_str());
    return 2;
  }
  const std::string dir = args[0];
  const int prompt_tokens = args.size() > 1 ? std::atoi(args[1].c_str()) : 512;
  const int decode_tokens = args.size() > 2 ? std::atoi(args[2].c_str()) : 32;
  if (args.size() > 3 && std::atoi(args[3].c_str()) > 0)
    qmlx::set_default_threads(std::atoi(args[3].c_str()));

  const char* given_bandwidth = std::getenv("QMLX_BENCH_BANDWIDTH_GBS");
  const double bandwidth = given_bandwidth ? std::atof(given_bandwidth) : read_bandwidth_gb_per_s();
  auto load_start = Clock::now();
  auto model = qmlx::Model::load(dir, {}, load_options);
  const double load_s = seconds_since(load_start);
  const double per_token = qmlx::bench::weight_bytes_per_token(*model);

  std::mt19937 rng(1);
  std::vector<int32_t> prompt(prompt_tokens);
  for (auto& t : prompt) t = int32_t(rng() % token_range(*model));

  qmlx::SessionOptions session_options;
  session_options.kv_dtype = kv_dtype;
  if (const char* chunk = std::getenv("QMLX_PREFILL_CHUNK"))
    session_options.prefill_chunk = std::atoi(chunk);
  qmlx::Session session(model, session_options);
  double cpu = process_cpu_seconds();
  auto prefill_start = Clock::now();
  session.prefill(prompt);
  const double prefill_s = seconds_since(prefill_start);
  const double prefill_cpu = process_cpu_seconds() - cpu;
  if (context > session.position()) qmlx::bench::repeat_context(session, context);
  const int64_t decode_context = session.position();

  cpu = process_cpu_seconds();
  const qmlx::vulkan::TransferCounts before = device_counts(*model);
  auto decode_start = Clock::now();
  for (int i = 0; i < decode_tokens; ++i) session.decode(int32_t(rng() % token_range(*model)));
  const double decode_s = std::max(1e-9, seconds_since(decode_start));
  const double decode_cpu = process_cpu_seconds() - cpu;
  const nlohmann::json device_step =
      device_step_profile(before, device_counts(*model), decode_tokens);

  nlohmann::json batched = nlohmann::json::array();
  if (!batches.empty()) {
    qmlx::ModelState prompt_state = model->new_state(qmlx::kv_type_of(kv_dtype));
    std::vector<float> logits(model->config().vocab_size);
    model->forward(prompt, prompt_state, logits.data());
    for (int b : batches)
      batched.push_back(batch_decode(*model, prompt_state, b, decode_tokens, rng));
  }

  nlohmann::json out = {
      {"engine", "qmlx"},
      {"backend", model->backend_description()},
      {"model", dir},
      {"threads", qmlx::default_pool().size()},
      {"load_s", load_s},
      {"weight_bytes_per_token", per_token},
      {"read_bandwidth_gb_per_s", bandwidth},
      {"kv_cache_dtype", qmlx::dtype_name(kv_dtype)},
      {"decode_context", decode_context},
      {"prefill_tokens", prompt_tokens},
      {"prefill_tokens_per_second", prompt_tokens / prefill_s},
      {"decode_tokens", decode_tokens},
      {"decode_tokens_per_second", decode_tokens / decode_s},
      {"decode_roofline_tokens_per_second", bandwidth * 1e9 / per_token},
      {"decode_fraction_of_roofline", (decode_tokens / decode_s) / (bandwidth * 1e9 / per_token)},
      {"prefill_tokens_per_cpu_second", prompt_tokens / prefill_cpu},
      {"decode_tokens_per_cpu_second", decode_tokens / decode_cpu},
      {"load_average_1min", load_average()},
      {"batch_decode", batched},
      {"device_decode_step", device_step},
      // What the weights take in device memory (GGUF blocks as stored, or as their affine
      // rewrite with QMLX_VULKAN_MASK_FEATURES=gguf-blocks); null on the CPU.
      {"device_weight_bytes",
       model->device() ? nlohmann::json(model->device()->weight_bytes()) : nlohmann::json()},
      {"peak_rss_bytes", qmlx::peak_rss_bytes()}};
  std::printf("%s\n", out.dump().c_str());
  return 0;
}
