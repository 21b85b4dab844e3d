// Matmul by expert id (matmul_by_expert.h) against the plain device matmul of each route's
// expert, bit for bit (both run matmul_float_dot.glsl / matmul_affine_dot.glsl), and against
// the CPU's matmul of that expert within matmul_test.cpp's bounds (summation_bounds.h): bit for
// bit for float weights on lavapipe where the width is a multiple of 8, as the plain matmul.
#include "backend/vulkan/matmul_by_expert.h"

#include <algorithm>
#include <numeric>

#include "base/error.h"
#include "host_matrix.h"
#include "kernels/gguf_affine.h"
#include "kernels/matmul.h"
#include "summation_bounds.h"
#include "vulkan_fixture.h"

namespace qmlx::vulkan::testing {
namespace {

struct Format {
  std::string name;
  WeightFormat format;
  int bits = 0, group_size = 0;
  ScalarType scale_type = ScalarType::kF32;
  GgufType gguf_type = GgufType::kF32;
};

const Format kFormats[] = {
    {"f32", WeightFormat::kF32},
    {"f16", WeightFormat::kF16},
    {"bf16", WeightFormat::kBF16},
    {"affine4_g64_bf16", WeightFormat::kAffine, 4, 64, ScalarType::kBF16},
    {"affine8_g32_f16", WeightFormat::kAffine, 8, 32, ScalarType::kF16},
    {"affine3_g64_f16", WeightFormat::kAffine, 3, 64, ScalarType::kF16},
    {"gguf_q4_k", WeightFormat::kGguf, 0, 0, ScalarType::kF32, GgufType::kQ4_K},
    {"gguf_q6_k", WeightFormat::kGguf, 0, 0, ScalarType::kF32, GgufType::kQ6_K},
};

std::vector<HostMatrix> random_experts(const Format& f, int E, int rows, int cols, uint64_t seed) {
  std::vector<HostMatrix> experts;
  for (int e = 0; e < E; ++e)
    experts.push_back(f.format == WeightFormat::kAffine
                          ? affine_matrix(f.bits, f.group_size, f.scale_type, rows, cols, seed + e)
                      : f.format == WeightFormat::kGguf
                          ? gguf_matrix(f.gguf_type, rows, cols, seed + e)
                          : float_matrix(f.format, rows, cols, seed + e));
  return experts;
}

// k distinct experts of E per token, in a random order (as the router gives them).
std::vector<int32_t> random_ids(int T, int E, int k, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<int32_t> ids;
  for (int t = 0; t < T; ++t) {
    std::vector<int32_t> all(E);
    std::iota(all.begin(), all.end(), 0);
    std::shuffle(all.begin(), all.end(), rng);
    ids.insert(ids.end(), all.begin(), all.begin() + k);
  }
  return ids;
}

DeviceExperts upload_stack(Context& ctx, const std::vector<HostMatrix>& experts) {
  std::vector<const WeightMatrix*> views;
  for (const HostMatrix& m : experts) views.push_back(&m.w);
  return upload_experts(ctx, views);
}

struct Results {
  std::vector<float> routed;              // [T * k][rows]
  std::vector<std::vector<float>> plain;  // per expert: the plain matmul over every x row
  size_t routed_dispatches = 0;
};

// Every route's outputs: the plain device matmul's bits, and the CPU's within the bounds.
void check_routes(const std::vector<HostMatrix>& experts, const std::vector<float>& x,
                  ExpertInput input, const std::vector<int32_t>& ids, int T, int k,
                  const Results& r, bool exact_float) {
  const int rows = experts[0].w.rows, cols = experts[0].w.cols;
  // GGUF experts run with their affine rewrite's arithmetic (kernels/gguf_affine.h).
  const bool affine =
      experts[0].w.format == WeightFormat::kAffine || experts[0].w.format == WeightFormat::kGguf;
  for (int route = 0; route < T * k; ++route) {
    SCOPED_TRACE("route " + std::to_string(route));
    const int e = ids[size_t(route)];
    const int x_row = input == ExpertInput::kToken ? route / k : route;
    const auto got = r.routed.begin() + ptrdiff_t(route) * rows;
    const std::vector<float> routed(got, got + rows);
    const auto want = r.plain[size_t(e)].begin() + ptrdiff_t(x_row) * rows;
    size_t differing = 0;
    for (int o = 0; o < rows; ++o) differing += bits_of(routed[size_t(o)]) != bits_of(want[o]);
    EXPECT_EQ(differing, 0u) << "against the plain matmul of expert " << e;

    const std::vector<float> xr(x.begin() + ptrdiff_t(x_row) * cols,
                                x.begin() + ptrdiff_t(x_row + 1) * cols);
    std::vector<float> cpu(static_cast<size_t>(rows));
    // Float weights: the CPU's generated-row arithmetic, which the device follows. Affine: its
    // prompt rows (dequantized to f32 like the device), as matmul_test.cpp compares them.
    matmul(xr.data(), 1, experts[size_t(e)].w, cpu.data(), affine ? 0 : 1);
    if (!affine && exact_float && cols % 8 == 0) {
      differing = 0;
      for (int o = 0; o < rows; ++o)
        differing += bits_of(routed[size_t(o)]) != bits_of(cpu[size_t(o)]);
      EXPECT_EQ(differing, 0u) << "against the CPU's matmul of expert " << e;
      continue;
    }
    const WeightMatrix& w = experts[size_t(e)].w;
    const int bits = w.format == WeightFormat::kGguf ? gguf_affine_bits(w.gguf_type) : w.bits;
    const int step = !affine ? 1 : 32 % bits == 0 ? 32 / bits : 32;  // matmul_affine_dot.glsl
    const double chain = affine ? double((cols / step + 63) / 64) * step + 6 : double(cols);
    expect_within_summation_bounds(w, xr, 1, routed, cpu, chain);
  }
}

class MatmulByExpertTest : public VulkanTest {
 protected:
  // The routed matmul, and each expert's plain device matmul over all of x, in one submission.
  Results run(const std::vector<HostMatrix>& experts, const std::vector<float>& x,
              ExpertInput input, const std::vector<int32_t>& ids, int T, int k) {
    Context& ctx = context();
    const int rows = experts[0].w.rows, cols = experts[0].w.cols;
    const int x_rows = int(x.size() / size_t(cols));
    const DeviceExperts stacked = upload_stack(ctx, experts);
    std::vector<DeviceMatrix> singles;
    for (const HostMatrix& m : experts) singles.push_back(upload_matrix(ctx, m.w));
    Buffer xb = upload(x);
    Buffer idb = ctx.create_buffer(ids.size() * 4);
    ctx.upload(idb, 0, ids.data(), ids.size() * 4);
    Buffer yb = ctx.create_buffer(size_t(T) * k * rows * 4);
    std::vector<Buffer> plain;
    CommandRecorder recorder(ctx);
    record_matmul_by_expert(recorder, stacked, xb, input, idb, T, k, yb);
    Results r;
    r.routed_dispatches = recorder.dispatch_count();
    for (const DeviceMatrix& m : singles) {
      plain.push_back(ctx.create_buffer(size_t(x_rows) * rows * 4));
      record_matmul(recorder, m, xb, x_rows, plain.back());
    }
    recorder.submit_and_wait();
    r.routed = download(yb, size_t(T) * k * rows);
    for (const Buffer& b : plain) r.plain.push_back(download(b, size_t(x_rows) * rows));
    return r;
  }
};

TEST_F(MatmulByExpertTest, RoutesEqualThePlainMatmulOfTheirExpert) {
  const int E = 6, T = 4, k = 3, rows = 37;
  for (const Format& f : kFormats)
    for (const int cols : {512, 768, 1003})  // 768: GGUF Q6_K experts start 2 bytes off a word
      for (const ExpertInput input : {ExpertInput::kToken, ExpertInput::kRoute}) {
        if (f.format >= WeightFormat::kAffine && cols % 256 != 0) continue;
        SCOPED_TRACE(f.name + " cols=" + std::to_string(cols) +
                     (input == ExpertInput::kToken ? " per token" : " per route"));
        const std::vector<HostMatrix> experts = random_experts(f, E, rows, cols, uint64_t(cols));
        const int x_rows = input == ExpertInput::kToken ? T : T * k;
        const std::vector<float> x = random_floats(size_t(x_rows) * cols, uint64_t(cols) + 1);
        const std::vector<int32_t> ids = random_ids(T, E, k, uint64_t(cols) + 2);
        const Results r = run(experts, x, input, ids, T, k);
        EXPECT_EQ(r.routed_dispatches, 1u);
        check_routes(experts, x, input, ids, T, k, r, exact_device());
      }
}

// A stack of experts over one binding (lavapipe: 128 MiB) is dispatched in windows of experts,
// and each route still gets its expert's exact result.
TEST_F(MatmulByExpertTest, StacksLargerThanABindingAreSplitByExpert) {
  const int rows = 2048, cols = 2048, T = 2, k = 3;
  const size_t expert_bytes = size_t(rows) * cols * 4;
  const int E = int(context().device_info().max_storage_buffer_range / expert_bytes) + 1;
  if (size_t(E) * expert_bytes > (size_t(1) << 30))
    GTEST_SKIP() << "this device binds " << E - 1 << " f32 experts of 16 MiB at once";
  const Format f32{"f32", WeightFormat::kF32};
  const std::vector<HostMatrix> experts = random_experts(f32, E, rows, cols, 21);
  const std::vector<float> x = random_floats(size_t(T) * cols, 22);
  // The first, the last and one between: routes in both windows.
  const std::vector<int32_t> ids = {0, E - 1, E / 2, E - 1, 1, E - 2};
  const Results r = run(experts, x, ExpertInput::kToken, ids, T, k);
  EXPECT_GE(r.routed_dispatches, 2u);
  check_routes(experts, x, ExpertInput::kToken, ids, T, k, r, exact_device());
}

TEST_F(MatmulByExpertTest, ExpertsOfDifferentShapesAreRefused) {
  const Format f32{"f32", WeightFormat::kF32};
  std::vector<HostMatrix> experts = random_experts(f32, 2, 8, 16, 1);
  experts.push_back(float_matrix(WeightFormat::kF32, 9, 16, 2));
  EXPECT_THROW(upload_stack(context(), experts), Error);
}

}  // namespace
}  // namespace qmlx::vulkan::testing
