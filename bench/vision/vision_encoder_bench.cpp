// Vision encoder time per image size on the Qwen3.5-35B-A3B tower shape (VisionConfig's
// defaults: 27 blocks, width 1152, 16 heads of 72, MLP 4304, 16 x 16 patches, 2 temporal
// copies, 2 x 2 merge, a 48 x 48 position grid; out_hidden_size 2048, the 35B-A3B language
// model's width), random BF16 weights held in memory, against a roofline: the encoder's FLOPs
// divided by this machine's measured rate for one dense BF16 matmul of the tower's MLP shape,
// [patches x 1152] x [1152 x 4304], through the same kernel the encoder's projections take
// (matmul_biased). One block's pieces are timed on their own too, so the table says whether
// attention (quadratic in the patches), the projections or the GELUs take the time.
//
// Per image: smart_resize with Qwen3.5's preprocessor bounds (65,536 to 16,777,216 pixels,
// factor 32) gives the grid the processor would; the pixel_values rows are random (the
// encoder's cost does not depend on them).
//
//   qmlx_vision_bench [--sizes WxH,...] [--repeat N] [--threads T] [--smoke] [--parts-only]
//                     [--device vulkan[:N]]
//     --sizes   default 512x512,1024x1024,1920x1080
//     --repeat  encoder runs per image, median reported (default 3); scaled down by the
//               patch count, max(1, N * 1024 / patches), so a 1080p image runs once
//     --threads default: the machine's cores
//     --smoke   a 2-block width-64 tower and one 256x256 image (CI: the binary works)
//     --parts-only  the pieces and the matmul rate alone, no whole encoder (its columns nan):
//               a quick look at where the time goes
//     --device  the device encoder (model/vulkan/vision_forward.h) against the CPU's instead:
//               per image the CPU encoder's median, the device's first run (pipelines built)
//               and median of the runs after it, and the largest |device - CPU| difference;
//               the tower's upload is timed once
// Prints a markdown table and one JSON line per image (after the table, prefixed "json: ").
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "base/thread_pool.h"
#include "image/smart_resize.h"
#include "kernels/activations.h"
#include "kernels/biased_matmul.h"
#include "kernels/bidirectional_attention.h"
#include "kernels/scalar_type.h"
#include "model/vision_encoder.h"
#ifdef QMLX_BENCH_VULKAN
#include "backend/vulkan/context.h"
#include "model/vulkan/vision_forward.h"
#endif

namespace {

using namespace qmlx;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// All threads' CPU time: on a machine shared with other jobs, wall time over CPU time / threads
// says how much of a run the others took.
double process_cpu_seconds() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

template <typename Fn>
double best_seconds(int runs, Fn&& fn) {
  double best = 1e30;
  for (int i = 0; i < runs; ++i) {
    const auto start = Clock::now();
    fn();
    best = std::min(best, seconds_since(start));
  }
  return best;
}

// Uniform in [-limit, limit), from a counter hash so that filling in parallel gives the same
// values whatever the split.
float random_value(uint64_t seed, uint64_t i, float limit) {
  uint64_t x = seed * 0x9e3779b97f4a7c15ull + i + 1;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  x ^= x >> 31;
  return limit * (float(x >> 40) * (2.0f / 16777216.0f) - 1.0f);
}

std::vector<float> random_floats(uint64_t seed, size_t n, float limit) {
  std::vector<float> out(n);
  default_pool().parallel_for(n, [&](size_t begin, size_t end) {
    for (size_t i = begin; i < end; ++i) out[i] = random_value(seed, i, limit);
  });
  return out;
}

// The tower's weights: BF16 matrices in buffers this object owns, the views pointing into them.
class RandomTower {
 public:
  explicit RandomTower(const VisionConfig& c) {
    w_.config = c;
    const int H = c.hidden_size, merged = H * c.merge_unit();
    w_.patch_embed = linear(H, c.patch_dim());
    w_.pos_embed = matrix(c.num_position_embeddings, H, 0.5f);
    for (int b = 0; b < c.depth; ++b) {
      VisionBlockWeights block;
      block.norm1 = norm(H);
      block.norm2 = norm(H);
      block.qkv = linear(3 * H, H);
      block.proj = linear(H, H);
      block.fc1 = linear(c.intermediate_size, H);
      block.fc2 = linear(H, c.intermediate_size);
      w_.blocks.push_back(std::move(block));
    }
    w_.merger_norm = norm(H);
    w_.merger_fc1 = linear(merged, merged);
    w_.merger_fc2 = linear(c.out_hidden_size, merged);
  }
  const VisionWeights& weights() const { return w_; }

 private:
  WeightMatrix matrix(int rows, int cols, float limit) {
    const std::vector<float> values = random_floats(++seed_, size_t(rows) * cols, limit);
    auto& bytes = storage_.emplace_back(values.size());
    for (size_t i = 0; i < values.size(); ++i) bytes[i] = float_to_bf16(values[i]);
    WeightMatrix m;
    m.format = WeightFormat::kBF16;
    m.rows = rows;
    m.cols = cols;
    m.data = reinterpret_cast<const uint8_t*>(bytes.data());
    return m;
  }
  // Weights of std 1/sqrt(in) (uniform, limit sqrt(3/in)), as make-model's random towers.
  BiasedLinear linear(int out, int in) {
    return {matrix(out, in, std::sqrt(3.f / float(in))), random_floats(++seed_, size_t(out), 0.1f)};
  }
  LayerNormWeights norm(int n) {
    std::vector<float> weight = random_floats(++seed_, size_t(n), 0.1f);
    for (float& v : weight) v += 1.f;
    return {std::move(weight), random_floats(++seed_, size_t(n), 0.1f)};
  }

  VisionWeights w_;
  std::vector<std::vector<uint16_t>> storage_;
  uint64_t seed_ = 1;
};

// The encoder's floating-point operations, one multiply-add counted as 2, for N patches in t
// frames of F = N / t (H the width, I the MLP width, P the patch row's length 3*2*16*16, O the
// output width, M = 4 patches per merged token, L blocks):
//   patch embed          2 N P H
//   per block: qkv       2 N H (3H)
//              Q K^T     2 t F^2 H     (each head: F x F scores over D; heads * D = H)
//              P V       2 t F^2 H
//              proj      2 N H H
//              MLP       2 N H I + 2 N I H
//   merger               2 (N/M) (MH)(MH) + 2 (N/M) (MH) O
// LayerNorms, GELUs, the softmax's exponentials, the rotary and the residual adds are linear
// in N and H with small constants, left out (they land in the "other" column of the time).
struct Flops {
  double patch_embed = 0, qkv = 0, attention = 0, proj = 0, mlp = 0, merger = 0;
  double projections() const { return patch_embed + qkv + proj + mlp + merger; }
  double total() const { return projections() + attention; }
};

Flops encoder_flops(const VisionConfig& c, const PatchGrid& g) {
  const double N = g.patches(), F = double(g.h) * g.w, t = g.t, H = c.hidden_size,
               I = c.intermediate_size, P = c.patch_dim(), O = c.out_hidden_size,
               M = c.merge_unit(), L = c.depth;
  Flops f;
  f.patch_embed = 2 * N * P * H;
  f.qkv = L * 2 * N * H * 3 * H;
  f.attention = L * 2 * (2 * t * F * F * H);
  f.proj = L * 2 * N * H * H;
  f.mlp = L * 2 * (2 * N * H * I);
  f.merger = 2 * (N / M) * (M * H) * (M * H) + 2 * (N / M) * (M * H) * O;
  return f;
}

// One block's pieces timed alone on random activations (best of `runs`), seconds for the
// whole tower: the block's times times the depth, plus the patch embedding and the merger.
struct PartTimes {
  double attention = 0;    // bidirectional_attention only (QK^T, softmax, PV)
  double projections = 0;  // every Linear: qkv, proj, fc1, fc2, patch embed, merger
  double gelu = 0;         // the MLP's tanh GELU over [N][I] and the merger's erf GELU
  double softmax = 0;      // the part of `attention` spent in softmax (estimated from a sample)
  double matmul_rate = 0;  // FLOP/s of fc1 alone: the roofline's rate
};

double time_linear(const BiasedLinear& l, int T, int runs, std::vector<float>& y) {
  const std::vector<float> x = random_floats(7, size_t(T) * l.weight.cols, 1.f);
  y.resize(size_t(T) * l.weight.rows);
  return best_seconds(runs, [&] { matmul_biased(x.data(), T, l.weight, l.bias.data(), y.data()); });
}

PartTimes time_parts(const VisionWeights& w, const PatchGrid& g, int runs) {
  const VisionConfig& c = w.config;
  const int N = g.patches(), H = c.hidden_size, frame = g.h * g.w;
  const VisionBlockWeights& b = w.blocks.front();
  std::vector<float> y;
  const double fc1 = time_linear(b.fc1, N, runs, y);
  const double block_linears = time_linear(b.qkv, N, runs, y) + time_linear(b.proj, N, runs, y) +
                               fc1 + time_linear(b.fc2, N, runs, y);
  const int tokens = N / c.merge_unit();
  const double once = time_linear(w.patch_embed, N, runs, y) +
                      time_linear(w.merger_fc1, tokens, runs, y) +
                      time_linear(w.merger_fc2, tokens, runs, y);
  // Attention reads q, k and v where the qkv projection writes them: [N][3H] rows.
  const std::vector<float> qkv = random_floats(9, size_t(N) * 3 * H, 1.f);
  std::vector<float> out(size_t(N) * H);
  const BidirectionalAttentionShape shape{frame, c.num_heads, c.head_dim(), size_t(3) * H,
                                          1.f / std::sqrt(float(c.head_dim()))};
  const double attention = best_seconds(runs, [&] {
    for (int f = 0; f < g.t; ++f) {
      const float* q = &qkv[size_t(f) * frame * 3 * H];
      bidirectional_attention(shape, q, q + H, q + 2 * H, &out[size_t(f) * frame * H]);
    }
  });
  // The activations, on the values the projections would give them (random: any finite
  // values cost the same).
  std::vector<float> u = random_floats(11, size_t(N) * c.intermediate_size, 3.f);
  const double gelu_block = best_seconds(runs, [&] {
    if (c.mlp_gelu_tanh) {
      gelu_tanh_in_place(u.data(), u.size());
    } else {
      gelu_erf_in_place(u.data(), u.size());
    }
  });
  u.resize(size_t(tokens) * w.merger_fc1.weight.rows);
  const double gelu_merger = best_seconds(runs, [&] { gelu_erf_in_place(u.data(), u.size()); });
  // Softmax as the attention kernel runs it: per (head, block of 48 queries) item, each score
  // row scaled and normalised over all F keys (F exponentials a row: heads * F^2 a block). A
  // sample of items spread over the pool, scaled to all of them.
  constexpr int kQueryBlock = 48;  // bidirectional_attention.cpp's
  const size_t items = size_t((frame + kQueryBlock - 1) / kQueryBlock) * c.num_heads * g.t;
  const size_t sample = std::min(items, size_t(4) * default_threads());
  const float scale = shape.scale;
  const double softmax_sample = best_seconds(runs, [&] {
    default_pool().parallel_for(sample, [&](size_t begin, size_t end) {
      std::vector<float> scores(size_t(kQueryBlock) * frame);  // not timed apart: filled once
      for (size_t i = 0; i < scores.size(); ++i) scores[i] = random_value(13 + begin, i, 8.f);
      for (size_t item = begin; item < end; ++item) {
        for (int i = 0; i < kQueryBlock; ++i) {
          float* row = &scores[size_t(i) * frame];
          for (int j = 0; j < frame; ++j) row[j] *= scale;
          softmax_vector_exp(row, size_t(frame));  // as bidirectional_attention
        }
      }
    });
  });
  PartTimes p;
  p.attention = attention * c.depth;
  p.softmax = softmax_sample * double(items) / double(sample) * c.depth;
  p.gelu = gelu_block * c.depth + gelu_merger;
  p.projections = block_linears * c.depth + once;
  p.matmul_rate = 2.0 * N * H * c.intermediate_size / fc1;
  return p;
}

struct Size {
  int width = 0, height = 0;
};

std::vector<Size> parse_sizes(const std::string& text) {
  std::vector<Size> sizes;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find(',', start);
    if (end == std::string::npos) end = text.size();
    Size s;
    if (std::sscanf(text.substr(start, end - start).c_str(), "%dx%d", &s.width, &s.height) != 2 ||
        s.width <= 0 || s.height <= 0) {
      std::fprintf(stderr, "bad size '%s' (want WxH)\n", text.substr(start, end - start).c_str());
      std::exit(2);
    }
    sizes.push_back(s);
    start = end + 1;
  }
  return sizes;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// --device: the device encoder against the CPU's, per image.
int compare_with_device(const std::string& device, const VisionWeights& tower,
                        const std::vector<Size>& sizes, int repeat, int factor, int64_t min_pixels,
                        int64_t max_pixels) {
#ifdef QMLX_BENCH_VULKAN
  const VisionConfig& config = tower.config;
  vulkan::ContextOptions options;
  options.device = device;
  options.fence_timeout = std::chrono::milliseconds(600000);  // lavapipe: big images are slow
  std::unique_ptr<vulkan::Context> context = vulkan::Context::create(options);
  const auto upload_start = Clock::now();
  vulkan::VisionTower on_device(*context, tower);
  const double upload_s = seconds_since(upload_start);
  std::fprintf(stderr, "device %s: tower of %.1f MiB uploaded in %.2f s\n",
               context->device_info().name.c_str(), double(on_device.bytes()) / (1 << 20),
               upload_s);
  std::printf(
      "| image | grid (patches) | runs | CPU encode s (median) | device first s | "
      "device encode s (median) | CPU / device | max abs diff | max abs CPU |\n"
      "|---|---|---|---|---|---|---|---|---|\n");
  std::vector<std::string> json;
  std::mutex context_mutex;
  for (const Size& size : sizes) {
    const image::ResizedSize r =
        image::smart_resize(size.height, size.width, factor, min_pixels, max_pixels);
    const PatchGrid grid{1, r.height / config.patch_size, r.width / config.patch_size};
    const int N = grid.patches();
    const std::vector<float> pixels = random_floats(3, size_t(N) * config.patch_dim(), 1.f);
    const int runs = std::max(1, repeat * 1024 / N);
    std::vector<double> cpu_times, device_times;
    std::vector<float> cpu_out, device_out;
    for (int i = 0; i < runs; ++i) {
      const auto start = Clock::now();
      cpu_out = encode_image(tower, pixels, grid);
      cpu_times.push_back(seconds_since(start));
      std::fprintf(stderr, "%dx%d: CPU run %d: %.3f s\n", size.width, size.height, i + 1,
                   cpu_times.back());
    }
    double first = 0;
    for (int i = 0; i <= runs; ++i) {  // the first builds the pipelines: reported apart
      std::string why;
      const auto start = Clock::now();
      std::optional<std::vector<float>> out = on_device.encode(pixels, grid, context_mutex, &why);
      const double s = seconds_since(start);
      std::fprintf(stderr, "%dx%d: device run %d%s: %.3f s\n", size.width, size.height, i + 1,
                   i == 0 ? " (pipelines built)" : "", s);
      if (!out) {
        std::fprintf(stderr, "%dx%d: not on the device: %s\n", size.width, size.height,
                     why.c_str());
        return 1;
      }
      if (i == 0) {
        first = s;
      } else {
        device_times.push_back(s);
      }
      device_out = std::move(*out);
    }
    float diff = 0, largest = 0;
    for (size_t i = 0; i < cpu_out.size(); ++i) {
      diff = std::max(diff, std::abs(device_out[i] - cpu_out[i]));
      largest = std::max(largest, std::abs(cpu_out[i]));
    }
    const double cpu_s = median(cpu_times), device_s = median(device_times);
    std::printf(
        "| %dx%d (to %dx%d) | %dx%d (%d) | %d | %.3g | %.3g | %.3g | %.2f | %.3g | %.3g |\n",
        size.width, size.height, r.width, r.height, grid.h, grid.w, N, runs, cpu_s, first, device_s,
        cpu_s / device_s, double(diff), double(largest));
    std::fflush(stdout);
    char line[512];
    std::snprintf(line, sizeof line,
                  "{\"width\": %d, \"height\": %d, \"patches\": %d, \"runs\": %d, "
                  "\"cpu_encode_s\": %.4f, \"device_first_s\": %.4f, \"device_encode_s\": "
                  "%.4f, \"max_abs_diff\": %.3g, \"upload_s\": %.3f, \"device\": \"%s\"}",
                  size.width, size.height, N, runs, cpu_s, first, device_s, double(diff), upload_s,
                  context->device_info().name.c_str());
    json.emplace_back(line);
  }
  for (const std::string& line : json) std::printf("json: %s\n", line.c_str());
  return 0;
#else
  (void)tower, (void)sizes, (void)repeat, (void)factor, (void)min_pixels, (void)max_pixels;
  std::fprintf(stderr, "--device %s: this build has no Vulkan backend\n", device.c_str());
  return 2;
#endif
}

}  // namespace

int main(int argc, char** argv) {
  std::string sizes_text = "512x512,1024x1024,1920x1080";
  int repeat = 3, threads = 0;
  bool smoke = false, parts_only = false;
  std::string device;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const bool has_value = i + 1 < argc;
    if (arg == "--sizes" && has_value) {
      sizes_text = argv[++i];
    } else if (arg == "--repeat" && has_value) {
      repeat = std::max(1, std::atoi(argv[++i]));
    } else if (arg == "--threads" && has_value) {
      threads = std::atoi(argv[++i]);
    } else if (arg == "--smoke") {
      smoke = true;
    } else if (arg == "--parts-only") {
      parts_only = true;
    } else if (arg == "--device" && has_value) {
      device = argv[++i];
    } else {
      std::fprintf(
          stderr,
          "usage: %s [--sizes WxH,...] [--repeat N] [--threads T] [--smoke] [--parts-only] "
          "[--device vulkan[:N]]\n",
          argv[0]);
      return 2;
    }
  }
  if (threads > 0) set_default_threads(threads);

  VisionConfig config;            // the real tower's shape
  config.out_hidden_size = 2048;  // Qwen3.5-35B-A3B's language model width
  if (smoke) {
    config.depth = 2;
    config.hidden_size = 64;
    config.num_heads = 2;
    config.intermediate_size = 128;
    config.num_position_embeddings = 36;
    config.out_hidden_size = 64;
    sizes_text = "256x256";
  }
  // Qwen3.5's preprocessor_config.json: factor = patch 16 x merge 2, 65,536 to 16.7 Mpx.
  const int factor = config.patch_size * config.spatial_merge_size;
  const int64_t min_pixels = 65536, max_pixels = 16777216;

  const auto build_start = Clock::now();
  const RandomTower tower(config);
  std::fprintf(stderr, "tower: depth %d, width %d, %d heads, MLP %d, out %d; built in %.1f s\n",
               config.depth, config.hidden_size, config.num_heads, config.intermediate_size,
               config.out_hidden_size, seconds_since(build_start));
  if (!device.empty())
    return compare_with_device(device, tower.weights(), parse_sizes(sizes_text), repeat, factor,
                               min_pixels, max_pixels);

  std::printf(
      "| image | grid (patches) | tokens | runs | encode s (median) | CPU s | GFLOP | GFLOP/s | "
      "matmul "
      "GFLOP/s | roofline s | of roofline | attention s (GFLOP/s) | of which softmax s | "
      "projections "
      "s (GFLOP/s) | GELU s | other s |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
      "---|---|\n");
  std::vector<std::string> json;
  for (const Size& size : parse_sizes(sizes_text)) {
    const image::ResizedSize r =
        image::smart_resize(size.height, size.width, factor, min_pixels, max_pixels);
    const PatchGrid grid{1, r.height / config.patch_size, r.width / config.patch_size};
    const int N = grid.patches(), tokens = N / config.merge_unit();
    const std::vector<float> pixels = random_floats(3, size_t(N) * config.patch_dim(), 1.f);
    const int runs = parts_only ? 0 : std::max(1, repeat * 1024 / N);

    std::vector<double> times, cpu_times;
    for (int i = 0; i < runs; ++i) {
      const auto start = Clock::now();
      const double cpu_start = process_cpu_seconds();
      const std::vector<float> out = encode_image(tower.weights(), pixels, grid);
      times.push_back(seconds_since(start));
      cpu_times.push_back(process_cpu_seconds() - cpu_start);
      if (out.size() != size_t(tokens) * config.out_hidden_size || !std::isfinite(out[0])) {
        std::fprintf(stderr, "encoder output malformed\n");
        return 1;
      }
    }
    const double seconds = runs ? median(times) : NAN, cpu_seconds = runs ? median(cpu_times) : NAN;
    // Matmuls are cheap next to the encoder: best of 3 even for the large images.
    const PartTimes parts = time_parts(tower.weights(), grid, 3);
    const Flops f = encoder_flops(config, grid);
    const double roofline = f.total() / parts.matmul_rate;
    const double other = seconds - parts.attention - parts.projections - parts.gelu;
    std::printf(
        "| %dx%d (to %dx%d) | %dx%d (%d) | %d | %d | %.3g | %.3g | %.1f | %.1f | %.1f | %.3g | "
        "%.0f%% | "
        "%.3g (%.1f) | %.3g | %.3g (%.1f) | %.3g | %.3g |\n",
        size.width, size.height, r.width, r.height, grid.h, grid.w, N, tokens, runs, seconds,
        cpu_seconds, f.total() / 1e9, f.total() / seconds / 1e9, parts.matmul_rate / 1e9, roofline,
        100 * roofline / seconds, parts.attention, f.attention / parts.attention / 1e9,
        parts.softmax, parts.projections, f.projections() / parts.projections / 1e9, parts.gelu,
        other);
    std::fflush(stdout);
    char line[1024];
    std::snprintf(line, sizeof line,
                  "{\"width\": %d, \"height\": %d, \"resized\": [%d, %d], \"patches\": %d, "
                  "\"tokens\": %d, \"runs\": %d, \"encode_s\": %.4f, \"encode_cpu_s\": %.4f, "
                  "\"gflop\": %.2f, "
                  "\"attention_gflop\": %.2f, \"matmul_gflops\": %.2f, \"roofline_s\": %.4f, "
                  "\"attention_s\": %.4f, \"softmax_s\": %.4f, \"projections_s\": %.4f, "
                  "\"gelu_s\": %.4f, "
                  "\"threads\": %d}",
                  size.width, size.height, r.width, r.height, N, tokens, runs, seconds, cpu_seconds,
                  f.total() / 1e9, f.attention / 1e9, parts.matmul_rate / 1e9, roofline,
                  parts.attention, parts.softmax, parts.projections, parts.gelu, default_threads());
    json.emplace_back(line);
  }
  for (const std::string& line : json) std::printf("json: %s\n", line.c_str());
  return 0;
}
