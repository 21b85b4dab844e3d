// What the K/V storage dtype (--kv-cache-dtype) costs and saves, on one model folder. Prints one
// JSON line per measurement.
//
//   qmlx_kv_cache_bench accuracy MODEL_DIR --context N [--decode M=16] [--dtypes bf16,int8]
//     Prefills the same N random tokens with f32 K/V (the reference: the engine's exact mode,
//     which the oracle tests hold to the float64 numpy reference) and with each dtype, then
//     decodes M tokens along the reference's greedy path. Per dtype: the logits error against
//     the reference at every step (max |a - b| and max |a - b| / max |b|), how many steps pick
//     the reference's token (top-1 agreement), and for how many steps greedy decoding would
//     produce the reference's tokens (the agreeing prefix).
//
//   qmlx_kv_cache_bench accuracy MODEL_DIR --context N --reference-logits FILE
//                       --reference-tokens T1,T2,... [--dtypes f32,bf16,int8]
//     The same against the float64 numpy reference itself (tools/reference/reference.py run on
//     `prompt`'s ids with --max-tokens M --logits-out FILE; its greedy tokens are the path), so
//     f32 K/V is one of the dtypes measured rather than the yardstick.
//
//   qmlx_kv_cache_bench prompt MODEL_DIR --context N
//     Prints the N random prompt ids `accuracy` uses, comma-separated (reference.py's --tokens).
//
//   qmlx_kv_cache_bench restore MODEL_DIR --context N --kv-cache-dtype D [--prompt P=512]
//     A Session at N positions (a P-token prefill, its K/V rows repeated: long_context.h) is
//     checkpointed into a fresh disk cache and restored into a new Session: the store's bytes
//     and the restore time with the files in the page cache (hot) and after dropping them from
//     it with posix_fadvise (cold, read from the disk).
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/thread_pool.h"
#include "bench/kv_cache/long_context.h"
#include "cache/hash.h"
#include "cache/prefix_cache.h"
#include "engine/model_identity.h"
#include "engine/session.h"

namespace qmlx::bench {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

double load_average() {
  double avg[1] = {0};
  return getloadavg(avg, 1) == 1 ? avg[0] : -1.0;
}

struct Args {
  std::string command, model;
  int64_t context = 1024, prompt = 512;
  int decode = 16;
  DType kv_dtype = DType::kBF16;
  std::vector<DType> dtypes = {DType::kBF16, DType::kInt8};
  std::string reference_logits;           // float32 rows of the float64 reference, if given
  std::vector<int32_t> reference_tokens;  // its greedy tokens: the path
};

DType parse_dtype(const std::string& name) {
  if (auto t = dtype_from_name(name)) return *t;
  throw std::runtime_error("unknown K/V dtype '" + name + "' (" + dtype_choices() + ")");
}

Args parse_args(int argc, char** argv) {
  Args a;
  std::vector<std::string> positional;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw std::runtime_error(arg + " needs a value");
      return argv[++i];
    };
    if (arg == "--context") {
      a.context = std::atoll(value().c_str());
    } else if (arg == "--decode") {
      a.decode = std::atoi(value().c_str());
    } else if (arg == "--prompt") {
      a.prompt = std::atoll(value().c_str());
    } else if (arg == "--kv-cache-dtype") {
      a.kv_dtype = parse_dtype(value());
    } else if (arg == "--dtypes") {
      a.dtypes.clear();
      std::stringstream list(value());
      for (std::string name; std::getline(list, name, ',');) a.dtypes.push_back(parse_dtype(name));
    } else if (arg == "--reference-logits") {
      a.reference_logits = value();
    } else if (arg == "--reference-tokens") {
      std::stringstream list(value());
      for (std::string id; std::getline(list, id, ',');)
        a.reference_tokens.push_back(int32_t(std::atol(id.c_str())));
    } else if (arg == "--threads") {
      set_default_threads(std::atoi(value().c_str()));
    } else {
      positional.push_back(arg);
    }
  }
  if (positional.size() != 2) throw std::runtime_error("usage: see the comment at the top");
  a.command = positional[0];
  a.model = positional[1];
  return a;
}

std::vector<int32_t> random_tokens(const Model& model, int64_t n) {
  std::mt19937 rng(1);
  std::vector<int32_t> tokens(static_cast<size_t>(n));
  const uint32_t range = uint32_t(std::min(model.config().vocab_size, 50000));
  for (int32_t& t : tokens) t = int32_t(rng() % range);
  return tokens;
}

int32_t argmax(std::span<const float> logits) {
  return int32_t(std::max_element(logits.begin(), logits.end()) - logits.begin());
}

// The float64 reference's logits rows (reference.py --logits-out: float32, vocab per row), one
// per token of its path.
std::vector<std::vector<float>> read_reference(const Args& a, size_t vocab) {
  std::FILE* f = std::fopen(a.reference_logits.c_str(), "rb");
  if (!f) throw std::runtime_error("cannot open " + a.reference_logits);
  std::vector<std::vector<float>> rows(a.reference_tokens.size(), std::vector<float>(vocab));
  for (auto& row : rows)
    if (std::fread(row.data(), sizeof(float), vocab, f) != vocab) {
      std::fclose(f);
      throw std::runtime_error(a.reference_logits + ": fewer rows than --reference-tokens");
    }
  std::fclose(f);
  return rows;
}

void accuracy(const Args& a) {
  std::shared_ptr<const Model> model = Model::load(a.model);
  const std::vector<int32_t> prompt = random_tokens(*model, a.context);
  // The reference's logits at each step and its greedy tokens.
  std::vector<std::vector<float>> reference;
  std::vector<int32_t> path;
  const bool float64 = !a.reference_logits.empty();
  if (float64) {
    reference = read_reference(a, size_t(model->config().vocab_size));
    path = a.reference_tokens;
  } else {
    SessionOptions options;
    options.kv_dtype = DType::kF32;
    Session session(model, options);
    auto start = Clock::now();
    session.prefill(prompt);
    std::fprintf(stderr, "f32 prefill of %lld tokens: %.1f s\n", (long long)a.context,
                 seconds_since(start));
    for (int i = 0; i < a.decode; ++i) {
      reference.emplace_back(session.logits().begin(), session.logits().end());
      path.push_back(argmax(session.logits()));
      session.decode(path.back());
    }
  }
  for (DType dtype : a.dtypes) {
    SessionOptions options;
    options.kv_dtype = dtype;
    Session session(model, options);
    auto start = Clock::now();
    session.prefill(prompt);
    const double prefill_s = seconds_since(start);
    double max_abs = 0, max_rel = 0, sum_rel = 0;
    int top1 = 0, prefix = -1;
    for (int i = 0; i < int(path.size()); ++i) {
      std::span<const float> logits = session.logits();
      double abs_err = 0, scale = 0;
      for (size_t v = 0; v < logits.size(); ++v) {
        abs_err = std::max(abs_err, std::abs(double(logits[v]) - reference[i][v]));
        scale = std::max(scale, std::abs(double(reference[i][v])));
      }
      max_abs = std::max(max_abs, abs_err);
      max_rel = std::max(max_rel, abs_err / scale);
      sum_rel += abs_err / scale;
      const bool same = argmax(logits) == path[size_t(i)];
      top1 += same ? 1 : 0;
      if (!same && prefix < 0) prefix = i;
      session.decode(path[size_t(i)]);  // teacher forcing: the reference's token
    }
    nlohmann::json out = {{"bench", "kv_accuracy"},
                          {"model", a.model},
                          {"kv_cache_dtype", dtype_name(dtype)},
                          {"reference", float64 ? "float64" : "f32"},
                          {"context", a.context},
                          {"decode_steps", path.size()},
                          {"logits_max_abs_error", max_abs},
                          {"logits_max_rel_error", max_rel},
                          {"logits_mean_rel_error", sum_rel / double(path.size())},
                          {"top1_agreement", top1},
                          {"greedy_agreeing_prefix", prefix < 0 ? int(path.size()) : prefix},
                          {"prefill_s", prefill_s},
                          {"threads", default_pool().size()},
                          {"load_average_1min", load_average()}};
    std::printf("%s\n", out.dump().c_str());
    std::fflush(stdout);
  }
}

uint64_t bytes_under(const fs::path& dir) {
  uint64_t total = 0;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file()) total += e.file_size();
  return total;
}

// Drops the (clean, fsync'ed) pages of every file under dir from the page cache.
void drop_from_page_cache(const fs::path& dir) {
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (!e.is_regular_file()) continue;
    int fd = ::open(e.path().c_str(), O_RDONLY);
    if (fd < 0) continue;
    ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    ::close(fd);
  }
}

void restore(const Args& a) {
  std::shared_ptr<const Model> model = Model::load(a.model);
  SessionOptions options;
  options.kv_dtype = a.kv_dtype;
  Session session(model, options);
  const std::vector<int32_t> prompt = random_tokens(*model, a.prompt);
  session.prefill(prompt);
  repeat_context(session, a.context);
  std::vector<int32_t> tokens(size_t(a.context));
  for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = prompt[i % prompt.size()];

  const fs::path root =
      fs::temp_directory_path() /
      ("qmlx-kv-restore-" + std::to_string(::getpid()) + "-" + dtype_name(a.kv_dtype));
  fs::remove_all(root);
  CacheConfig config = CacheConfig::defaults();
  config.disk_cache_dir = root.string();
  config.memory_prefix_cache = false;
  config.fsync = true;
  config.restore_guard_enabled = false;
  const Hash128 fingerprint = model_fingerprint(model_identity(*model), session.layout());
  nlohmann::json out = {{"bench", "kv_restore"},
                        {"model", a.model},
                        {"kv_cache_dtype", dtype_name(a.kv_dtype)},
                        {"context", a.context},
                        {"kv_bytes_per_token", session.layout().kv_bytes_per_token()}};
  {
    PrefixCache cache(config, fingerprint, session.layout());
    auto start = Clock::now();
    if (!cache.capture(session, tokens, SnapshotKind::kMessageBoundary))
      throw std::runtime_error("the checkpoint was not queued");
    cache.flush();
    out["write_s"] = seconds_since(start);
    out["store_bytes"] = bytes_under(root);
  }
  for (const char* pages : {"hot", "cold"}) {
    if (std::string(pages) == "cold") drop_from_page_cache(root);
    PrefixCache cache(config, fingerprint, session.layout());
    Session restored(model, options);
    auto start = Clock::now();
    RestoreResult r = cache.restore(tokens, restored);
    const double total = seconds_since(start);
    if (!r.hit || r.cached_tokens != a.context)
      throw std::runtime_error("the checkpoint was not restored");
    out[std::string(pages) + "_restore_s"] = total;
    out[std::string(pages) + "_read_s"] = r.read_seconds;
    out[std::string(pages) + "_verify_s"] = r.verify_seconds;
    out[std::string(pages) + "_install_s"] = r.install_seconds;
    out["bytes_read"] = r.bytes_read;
  }
  out["load_average_1min"] = load_average();
  fs::remove_all(root);
  std::printf("%s\n", out.dump().c_str());
}

}  // namespace
}  // namespace qmlx::bench

int main(int argc, char** argv) {
  try {
    qmlx::bench::Args args = qmlx::bench::parse_args(argc, argv);
    if (args.command == "prompt") {
      const std::vector<int32_t> prompt =
          qmlx::bench::random_tokens(*qmlx::Model::load(args.model), args.context);
      for (size_t i = 0; i < prompt.size(); ++i) std::printf(i ? ",%d" : "%d", prompt[i]);
      std::printf("\n");
    } else if (args.command == "accuracy") {
      qmlx::bench::accuracy(args);
    } else if (args.command == "restore") {
      qmlx::bench::restore(args);
    } else {
      throw std::runtime_error("unknown command '" + args.command +
                               "' (accuracy | prompt | restore)");
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "qmlx_kv_cache_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
