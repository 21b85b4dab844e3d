// Kernel rooflines. Measures the two ceilings every kernel is judged against, then the matmul
// kernels next to them:
//   - read bandwidth: parallel sums over a buffer much larger than the last-level cache
//     (STREAM-like, read only, because decode only reads weights);
//   - FMA peak per core: independent chains of 256-bit fused multiply-adds (per CPU-second);
//   - decode GEMV (T = 1) on MLX affine 8/4-bit and GGUF Q8_0/Q4_K/Q6_K matrices of Qwen3.5-0.8B's
//   MLP shape, enough of
//     them that the weights stream from memory: GB/s read and fraction of the bandwidth;
//   - prefill GEMM (T = 512 and 2048): GFLOP/s, and GFLOP per CPU-second against the per-core peak.
//   - MoE expert GEMM (few tokens): the panel kernel against the few-token kernel.
//   - decode attention over a K/V cache of 8k and 32k rows of each storage type (0.8B head shape).
//   - batched decode GEMV: B = 1, 2, 4, 8 generated rows over the 0.8B decode matrices.
//   - one Gated DeltaNet layer, recurrence and chunked form, per token.
//   qmlx_kernel_bench [threads=2]
//                     [bandwidth|gemv|experts|moe-dense|attention|batched-gemv|gated-delta]
//   ("batched-gemv", "gated-delta": only those rows; "bandwidth":
//   print only the GB/s figure; "gemv": the decode GEMVs, cached and streamed; "experts": only
//   the expert GEMM rows; "moe-dense": the MoE model's dense-layer GEMMs; "attention": only the
//   decode attention rows)
#include <immintrin.h>

#include <time.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "base/thread_pool.h"
#include "kernels/attention.h"
#include "kernels/few_token_gemm.h"
#include "kernels/gated_delta.h"
#include "kernels/kv_row.h"
#include "kernels/affine_tiles.h"
#include "kernels/matmul.h"
#include "kernels/packed_gemm.h"
#include "kernels/vec.h"

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

double process_cpu_seconds() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

struct Timing {
  double wall = 1e30;
  double cpu = 1e30;  // all threads: on a shared machine, compute rates per CPU-second hold up
};

// Best of several passes: the least disturbed by the other jobs on a shared machine.
template <typename Fn>
Timing best_timing(int reps, Fn&& fn) {
  Timing best;
  for (int i = 0; i < reps; ++i) {
    auto start = Clock::now();
    double cpu = process_cpu_seconds();
    fn();
    best.cpu = std::min(best.cpu, process_cpu_seconds() - cpu);
    best.wall = std::min(best.wall, seconds_since(start));
  }
  return best;
}

template <typename Fn>
double best_seconds(int reps, Fn&& fn) {
  return best_timing(reps, fn).wall;
}

double read_bandwidth_gb_per_s() {
  const size_t n = size_t(512) << 20 >> 2;  // 512 MiB of floats
  std::vector<float> buf(n, 1.f);
  std::vector<float> partial(qmlx::default_pool().size(), 0.f);
  double s = best_seconds(5, [&] {
    qmlx::default_pool().parallel_for(n, [&](size_t b, size_t e) {
      partial[b * partial.size() / n] = qmlx::vec::sum(buf.data() + b, e - b);
    });
  });
  if (partial[0] < 0) std::printf("impossible\n");
  return double(n * sizeof(float)) / s / 1e9;
}

// 10 independent accumulators cover the FMA latency (4-5 cycles) times the two FMA pipes.
double fma_gflops_per_core() {
  const long iters = 50'000'000;
  float sink = 0;
  double s = best_timing(3, [&] {
               __m256 acc[10];
               for (int j = 0; j < 10; ++j) acc[j] = _mm256_set1_ps(float(j));
               const __m256 a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-7f);
               for (long i = 0; i < iters; ++i)
                 for (auto& v : acc) v = _mm256_fmadd_ps(v, a, b);
               for (auto& v : acc) sink += _mm256_cvtss_f32(v);
             }).cpu;
  if (sink == 12345.f) std::printf("impossible\n");
  return double(iters) * 10 * 16 / s / 1e9;
}

struct AffineMatrix {
  std::vector<uint8_t> codes;
  std::vector<uint16_t> scales, biases;  // bf16
  qmlx::WeightMatrix view;
  qmlx::AffineTileStorage tiles;  // the view's bytes once tiled
};

// The matrix in 16-row tiles, as models load them (unless QMLX_AFFINE_TILES=0).
void tile_like_a_model(AffineMatrix& m) {
  if (!qmlx::affine_tiles_enabled() || !qmlx::affine_tiles_supported(m.view)) return;
  m.view = qmlx::tile_affine_matrix(m.view, m.tiles);
  std::vector<uint8_t>().swap(m.codes);
  std::vector<uint16_t>().swap(m.scales);
  std::vector<uint16_t>().swap(m.biases);
}

uint16_t bf16_of(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return uint16_t(u >> 16);
}

AffineMatrix random_affine(int rows, int cols, int bits, int group_size, std::mt19937& rng) {
  AffineMatrix m;
  m.codes.resize(size_t(rows) * cols * bits / 8);
  for (auto& b : m.codes) b = uint8_t(rng());
  const size_t groups = size_t(rows) * cols / group_size;
  std::uniform_real_distribution<float> scale(1e-3f, 2e-3f), bias(-0.1f, 0.f);
  for (size_t i = 0; i < groups; ++i) {
    m.scales.push_back(bf16_of(scale(rng)));
    m.biases.push_back(bf16_of(bias(rng)));
  }
  m.view = {qmlx::WeightFormat::kAffine,
            rows,
            cols,
            m.codes.data(),
            bits,
            group_size,
            qmlx::ScalarType::kBF16,
            reinterpret_cast<const uint8_t*>(m.scales.data()),
            reinterpret_cast<const uint8_t*>(m.biases.data())};
  return m;
}

// Decode GEMV shapes: streamed, many 0.8B MLP gate/up matrices (3584 x 1024; enough of them
// that nothing stays in the 32 MB L3); cached, one 1024 x 1024 matrix run 400 times from the
// caches: the kernel's compute ceiling, in weights per CPU-second (far above the streaming
// rate: the kernel waits on memory; close: on arithmetic).
constexpr int kGemvCols = 1024;
int gemv_rows(bool cached) { return cached ? 1024 : 3584; }

// Times the decode GEMV over `ms` (all of one shape) and prints its row of the table.
void time_gemv(const std::string& label, const std::vector<qmlx::WeightMatrix>& ms, bool cached,
               double bandwidth, std::mt19937& rng) {
  const int rows = ms.front().rows, cols = ms.front().cols, reps = cached ? 400 : 1;
  std::vector<float> x(cols), y(rows);
  for (auto& v : x) v = std::uniform_real_distribution<float>(-1, 1)(rng);
  double bytes = 0;
  for (auto& m : ms) bytes += double(m.bytes());
  const Timing time = best_timing(5, [&] {
    for (int i = 0; i < reps; ++i)
      for (auto& m : ms) qmlx::matmul(x.data(), 1, m, y.data(), 1);
  });
  if (cached) {
    std::printf("| GEMV T=1 %s %dx%d cached | %.1f G weights per CPU-s (%.1f GB/s) |\n",
                label.c_str(), rows, cols, double(rows) * cols * reps / time.cpu / 1e9,
                bytes * reps / time.cpu / 1e9);
    return;
  }
  const double gbs = bytes / time.wall / 1e9;
  std::printf("| GEMV T=1 %s %dx%d x%zu | %.0f MB | %.2f GB/s | %.0f%% of %.1f GB/s |\n",
              label.c_str(), rows, cols, ms.size(), bytes / 1e6, gbs, 100 * gbs / bandwidth,
              bandwidth);
}

// Decode GEMV on MLX affine matrices (48 at 8-bit, ~180 MB, when streamed).
void bench_gemv(int bits, double bandwidth, bool cached = false) {
  const int count = cached ? 1 : bits == 8 ? 48 : 96;
  std::mt19937 rng(bits);
  std::vector<AffineMatrix> ms;
  for (int i = 0; i < count; ++i)
    ms.push_back(random_affine(gemv_rows(cached), kGemvCols, bits, 64, rng));
  std::vector<qmlx::WeightMatrix> views;
  for (auto& m : ms) views.push_back(m.view);
  time_gemv(std::to_string(bits) + "-bit gs64", views, cached, bandwidth, rng);
}

// Random GGUF blocks with small finite f16 scales (random bytes there could be NaN or huge).
std::vector<uint8_t> random_gguf(qmlx::GgufType t, int rows, int cols, std::mt19937& rng) {
  std::vector<uint8_t> bytes(qmlx::gguf_bytes(t, size_t(rows) * cols));
  for (auto& b : bytes) b = uint8_t(rng());
  const size_t block = qmlx::gguf_block_bytes(t);
  auto set_half = [&](size_t at, float v) {
    const uint16_t h = qmlx::float_to_f16(v);
    std::memcpy(&bytes[at], &h, 2);
  };
  for (size_t b = 0; b < bytes.size(); b += block) {
    if (t == qmlx::GgufType::kQ6_K) {
      set_half(b + 208, 1e-3f);
    } else {
      set_half(b, 1e-3f);
      if (t == qmlx::GgufType::kQ4_K) set_half(b + 2, 1e-3f);
    }
  }
  return bytes;
}

// Decode GEMV on GGUF blocks (64 matrices when streamed).
void bench_gguf_gemv(qmlx::GgufType t, double bandwidth, bool cached = false) {
  const int rows = gemv_rows(cached), count = cached ? 1 : 64;
  std::mt19937 rng{uint32_t(t)};
  std::vector<std::vector<uint8_t>> blobs;
  std::vector<qmlx::WeightMatrix> ms;
  for (int i = 0; i < count; ++i) blobs.push_back(random_gguf(t, rows, kGemvCols, rng));
  for (auto& b : blobs) {
    qmlx::WeightMatrix m;
    m.format = qmlx::WeightFormat::kGguf;
    m.gguf_type = t;
    m.rows = rows;
    m.cols = kGemvCols;
    m.data = b.data();
    ms.push_back(m);
  }
  time_gemv(std::string("GGUF ") + qmlx::gguf_type_name(t), ms, cached, bandwidth, rng);
}

void bench_gemm(int bits, int T, double peak_gflops, int rows = 3584, int cols = 1024) {
  std::mt19937 rng(bits + 100);
  AffineMatrix m = random_affine(rows, cols, bits, 64, rng);
  std::vector<float> x(size_t(T) * cols), y(size_t(T) * rows);
  for (auto& v : x) v = std::uniform_real_distribution<float>(-1, 1)(rng);
  Timing t = best_timing(3, [&] { qmlx::matmul(x.data(), T, m.view, y.data(), 0); });
  const double flop = 2.0 * T * rows * cols;
  const double per_core = flop / t.cpu / 1e9;
  std::printf(
      "| GEMM T=%d %d-bit gs64 %dx%d | %.1f GFLOP | %.1f GFLOP/s wall, %.1f per CPU-s | %.0f%% of "
      "%.0f GFLOP/s per core |\n",
      T, bits, rows, cols, flop / 1e9, flop / t.wall / 1e9, per_core, 100 * per_core / peak_gflops,
      peak_gflops);
}

// An MoE expert's matmuls in prefill: few tokens (a 512-token chunk gives each of 256 experts
// ~16 of its 8 x 512 routes) against 32 distinct expert matrices, so the weights come from
// memory as they do in the model. Both prefill kernels on the same inputs, split over the pool.
void bench_expert_gemm(int bits, int rows, int cols, int T, double peak_gflops) {
  const int count = 32;
  std::mt19937 rng(bits * 1000 + rows + T);
  std::vector<AffineMatrix> ms;
  for (int i = 0; i < count; ++i) ms.push_back(random_affine(rows, cols, bits, 64, rng));
  std::vector<float> x(size_t(T) * cols), y(size_t(T) * rows);
  for (auto& v : x) v = std::uniform_real_distribution<float>(-1, 1)(rng);
  auto pass = [&](auto kernel) {
    return best_timing(1, [&] {
      for (auto& m : ms)
        qmlx::default_pool().parallel_for(
            rows,
            [&](size_t b, size_t e) { kernel(x.data(), T, m.view, y.data(), int(b), int(e)); }, 16);
    });
  };
  // The two kernels alternate, best of 7 each: on a shared machine a slow spell then costs
  // both, not one.
  Timing panel, few;
  for (int rep = 0; rep < 7; ++rep) {
    const Timing a = pass(qmlx::packed_gemm_rows), b = pass(qmlx::few_token_gemm_rows);
    panel = {std::min(panel.wall, a.wall), std::min(panel.cpu, a.cpu)};
    few = {std::min(few.wall, b.wall), std::min(few.cpu, b.cpu)};
  }
  const double flop = 2.0 * T * rows * cols * count;
  std::printf(
      "| expert GEMM T=%d %d-bit %dx%d x%d | %.2f GFLOP | panel %.1f, few-token %.1f GFLOP per "
      "CPU-s (%.0f%% / %.0f%% of %.0f); wall %.2fx |\n",
      T, bits, rows, cols, count, flop / 1e9, flop / panel.cpu / 1e9, flop / few.cpu / 1e9,
      100 * flop / panel.cpu / 1e9 / peak_gflops, 100 * flop / few.cpu / 1e9 / peak_gflops,
      peak_gflops, panel.wall / few.wall);
}

// Decode attention (T = 1) of the Qwen3.5-0.8B head shape (8 query heads over 2 KV heads of 256)
// over n cached rows of type t: best of 20 calls, and the K+V bytes it reads per second.
void bench_decode_attention(qmlx::KvType t, const char* name, int n, double bandwidth) {
  const int Nh = 8, Nkv = 2, D = 256;
  const size_t head = qmlx::kv_head_bytes(t, D);
  std::mt19937 rng(1);
  std::normal_distribution<float> normal;
  std::vector<float> q(Nh * D), out(Nh * D), row(D);
  for (float& x : q) x = normal(rng);
  std::vector<uint8_t> k(size_t(n) * Nkv * head), v(k.size());
  for (size_t r = 0; r < size_t(n) * Nkv; ++r) {
    for (float& x : row) x = normal(rng);
    qmlx::store_kv_head(row.data(), D, t, k.data() + r * head);
    qmlx::store_kv_head(row.data(), D, t, v.data() + r * head);
  }
  qmlx::AttentionShape s{1, Nh, Nkv, D, n - 1, 1.f / 16};
  double best = 1e30;
  for (int rep = 0; rep < 20; ++rep) {
    auto start = Clock::now();
    qmlx::attention(s, q.data(), k.data(), v.data(), t, out.data());
    best = std::min(best, seconds_since(start));
  }
  const double gbs = double(k.size() + v.size()) / best / 1e9;
  std::printf("| decode attention %s, %d rows | %.1f MB K+V | %.2f ms, %.2f GB/s | %.0f%% |\n",
              name, n, double(k.size() + v.size()) / 1e6, best * 1e3, gbs, 100 * gbs / bandwidth);
}

void bench_decode_attention(double bandwidth) {
  for (int n : {8192, 32768}) {
    bench_decode_attention(qmlx::KvType::kBF16, "bf16", n, bandwidth);
    bench_decode_attention(qmlx::KvType::kInt8, "int8", n, bandwidth);
  }
}

// Batched decode: one step of B sequences over the Qwen3.5-0.8B decode matrices at 8-bit gs64
// (per layer the MLP's gate, up and down and a Gated DeltaNet layer's qkv, z and out
// projections; 24 layers; the 248320 x 1024 tied LM head), ~770 MB, so the weights stream from
// memory. Step time, aggregate rows/s, and weight bytes per step over the step time against
// the read bandwidth. "separate" runs the B rows as B one-row calls (a batch-less engine);
// "batched" as one call with B generated rows (kernels/matmul.h).
void bench_batched_gemv(double bandwidth) {
  std::mt19937 rng(42);
  std::vector<AffineMatrix> ms;
  for (int layer = 0; layer < 24; ++layer)
    for (auto [rows, cols] : {std::pair{3584, 1024},
                              {3584, 1024},
                              {1024, 3584},
                              {6144, 1024},
                              {2048, 1024},
                              {1024, 2048}})
      ms.push_back(random_affine(rows, cols, 8, 64, rng));
  ms.push_back(random_affine(248320, 1024, 8, 64, rng));
  for (AffineMatrix& m : ms) tile_like_a_model(m);
  double bytes = 0;
  size_t widest = 0;
  for (auto& m : ms) {
    bytes += double(m.view.bytes());
    widest = std::max({widest, size_t(m.view.rows), size_t(m.view.cols)});
  }
  std::printf(
      "| B | mode | step ms | CPU ms | rows/s | weight GB/s | of %.1f GB/s |\n"
      "|---|---|---|---|---|---|---|\n",
      bandwidth);
  for (int B : {1, 2, 4, 8}) {
    std::vector<float> x(size_t(B) * widest), y(size_t(B) * widest);
    for (auto& v : x) v = std::uniform_real_distribution<float>(-1, 1)(rng);
    auto separate = [&] {
      for (auto& m : ms)
        for (int b = 0; b < B; ++b)
          qmlx::matmul(x.data() + size_t(b) * m.view.cols, 1, m.view,
                       y.data() + size_t(b) * m.view.rows, 1);
    };
    auto batched = [&] {
      for (auto& m : ms) qmlx::matmul(x.data(), B, m.view, y.data(), B);
    };
    // Interleaved, best of 5 each: a slow spell on the shared machine then costs both. CPU
    // time (all threads) is the steadier figure there; wall time is what a step takes.
    Timing sep, bat;
    for (int rep = 0; rep < 5; ++rep) {
      const Timing a = best_timing(1, separate), b = best_timing(1, batched);
      sep = {std::min(sep.wall, a.wall), std::min(sep.cpu, a.cpu)};
      bat = {std::min(bat.wall, b.wall), std::min(bat.cpu, b.cpu)};
    }
    for (auto [mode, t] : {std::pair{"separate", sep}, {"batched", bat}})
      std::printf("| %d | %s | %.1f | %.1f | %.1f | %.2f | %.0f%% |\n", B, mode, t.wall * 1e3,
                  t.cpu * 1e3, B / t.wall, bytes / t.wall / 1e9,
                  100 * bytes / t.wall / 1e9 / bandwidth);
  }
}

// One Gated DeltaNet layer of Qwen3.5-0.8B (16 key and 16 value heads of 128): the recurrence
// (the form the model runs for every T) and the chunked WY form, per token, for T = 1 (a decode
// step, 256 calls), 64 and 512 (a prefill chunk). Interleaved, best of 5; CPU time per token.
void bench_gated_delta() {
  const int Hk = 16, Hv = 16, Dk = 128, Dv = 128;
  const size_t stride = size_t(2 * Hk * Dk + Hv * Dv);
  std::mt19937 rng(3);
  std::normal_distribution<float> normal;
  std::printf(
      "| GDN layer 16x128 | recurrence us/token (CPU) | chunked us/token (CPU) |\n"
      "|---|---|---|\n");
  for (int T : {1, 64, 512}) {
    std::vector<float> rows(size_t(T) * stride), g(size_t(T) * Hv), beta(g.size());
    for (auto& x : rows) x = normal(rng) / std::sqrt(float(Dk));
    for (auto& x : g) x = -std::fabs(normal(rng)) * 0.1f;
    for (auto& x : beta) x = 1.f / (1.f + std::exp(-normal(rng)));
    std::vector<float> state(size_t(Hv) * Dv * Dk, 0.f), out(size_t(T) * Hv * Dv);
    qmlx::GatedDeltaInputs in;
    in.T = T, in.Hk = Hk, in.Hv = Hv, in.Dk = Dk, in.Dv = Dv;
    in.q = rows.data(), in.k = rows.data() + Hk * Dk, in.v = rows.data() + 2 * Hk * Dk;
    in.row_stride = stride, in.g = g.data(), in.beta = beta.data();
    const int calls = T == 1 ? 256 : 1;
    auto pass = [&](auto form) {
      return best_timing(1, [&] {
        for (int c = 0; c < calls; ++c) form(in, state.data(), out.data());
      });
    };
    Timing rec, chunk;
    for (int rep = 0; rep < 5; ++rep) {
      // The chunked form is not timed for T = 1 (it never runs decode steps).
      const Timing a = pass(qmlx::gated_delta_recurrent),
                   b = T == 1 ? Timing{} : pass(qmlx::gated_delta_chunked);
      rec = {std::min(rec.wall, a.wall), std::min(rec.cpu, a.cpu)};
      chunk = {std::min(chunk.wall, b.wall), std::min(chunk.cpu, b.cpu)};
    }
    const double tokens = double(T) * calls;
    if (T == 1)
      std::printf("| T=1 | %.1f | - |\n", rec.cpu / tokens * 1e6);
    else
      std::printf("| T=%d | %.1f | %.1f |\n", T, rec.cpu / tokens * 1e6, chunk.cpu / tokens * 1e6);
  }
}

}  // namespace

int main(int argc, char** argv) {
  const int threads = argc > 1 ? std::atoi(argv[1]) : 2;
  qmlx::set_default_threads(threads);
  const double bandwidth = read_bandwidth_gb_per_s();
  if (argc > 2 && std::string(argv[2]) == "bandwidth") {
    std::printf("%.2f\n", bandwidth);
    return 0;
  }
  if (argc > 2 && std::string(argv[2]) == "gated-delta") {
    bench_gated_delta();
    return 0;
  }
  if (argc > 2 && std::string(argv[2]) == "batched-gemv") {
    bench_batched_gemv(bandwidth);
    return 0;
  }
  if (argc > 2 && std::string(argv[2]) == "attention") {
    bench_decode_attention(bandwidth);
    return 0;
  }
  const double fma = fma_gflops_per_core();
  if (argc > 2 && std::string(argv[2]) == "moe-dense") {
    bench_gemm(8, 512, fma, 8192, 2048);
    bench_gemm(8, 512, fma, 2048, 4096);
    bench_gemm(8, 512, fma, 3584, 1024);
    return 0;
  }
  if (argc > 2 && std::string(argv[2]) == "gemv") {
    for (bool cached : {true, false}) {
      for (int bits : {8, 4}) bench_gemv(bits, bandwidth, cached);
      for (auto t : {qmlx::GgufType::kQ8_0, qmlx::GgufType::kQ4_K, qmlx::GgufType::kQ6_K})
        bench_gguf_gemv(t, bandwidth, cached);
    }
    return 0;
  }
  if (argc > 2 && std::string(argv[2]) == "experts") {
    for (int bits : {8, 4})
      for (int T : {4, 8, 16, 32, 64}) {
        bench_expert_gemm(bits, 512, 2048, T, fma);
        bench_expert_gemm(bits, 2048, 512, T, fma);
      }
    return 0;
  }
  std::printf(
      "threads %d: read bandwidth %.1f GB/s, FMA peak %.1f GFLOP/s per core (%.1f total)\n\n",
      threads, bandwidth, fma, fma * threads);
  std::printf("| kernel | moved | rate | roofline |\n|---|---|---|---|\n");
  bench_gemv(8, bandwidth);
  bench_gemv(4, bandwidth);
  for (auto t : {qmlx::GgufType::kQ8_0, qmlx::GgufType::kQ4_K, qmlx::GgufType::kQ6_K})
    bench_gguf_gemv(t, bandwidth);
  for (int T : {512, 2048})
    for (int bits : {8, 4}) bench_gemm(bits, T, fma);
  bench_gemm(6, 512, fma);
  bench_decode_attention(bandwidth);
  return 0;
}
