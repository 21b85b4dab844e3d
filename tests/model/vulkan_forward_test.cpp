// The forward pass on a Vulkan device (model/vulkan/, lavapipe in CI) against the CPU's, and
// its own promises: a sequence's logits and state do not depend on how its prompt was split or
// on what shares its batch (bit for bit), and a state copied out to the host and back in (what
// the cache does on a checkpoint and a restore) continues exactly as the original. Dense Qwen3.5
// (gated attention + Gated DeltaNet), Qwen3.5-MoE and Qwen3-Next (routed experts chosen on the
// device, shared expert), Qwen3, float and MLX 4/8-bit weights, every K/V dtype; images with
// M-RoPE; and the bound on a decode step's submissions, read-backs and dispatches.
// And MoE models whose routed experts stay in host memory and run on the CPU (--cpu-moe, and
// --n-cpu-moe 1: one layer's experts on the CPU, the others' on the device), which keep all of
// those promises too.
//
// Against the CPU: the device computes every row with the CPU's generated-row arithmetic, where
// the CPU computes prompt rows in another summation order, and its exp() is not glibc's; the
// logits therefore agree to rounding (relative 2e-4 of their scale; observed below 1e-5 on
// float weights), and greedy tokens agree except at near-ties, which the test skips.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <random>

#include "backend/vulkan/device_probe.h"
#include "backend/vulkan/validation_report.h"
#include "base/error.h"
#include "base/human_bytes.h"
#include "engine/speculative.h"
#include "image_prompt.h"
#include "model/model.h"
#include "modelgen/gguf_model_writer.h"
#include "modelgen/model_writer.h"
#include "speculative_harness.h"
#include "tiny_model.h"
#include "vulkan_model_checks.h"

namespace qmlx {
namespace {

using testing::expect_no_validation_findings;
using testing::vulkan_skip_reason;

using modelgen::Arch;

struct Variant {
  std::string name;
  Arch arch;
  modelgen::Layout layout;
  int bits;  // MLX quantization, 0 for float weights
  modelgen::TensorDType dtype;
  KvType kv;
  std::string gguf = "";       // a GGUF recipe ("q4_k_m"): one .gguf file instead of `layout`
  int linear_head_dim = 0;     // key and value head size of the delta-net layers; 0: the default
  int linear_value_heads = 0;  // 0: the default
  int cpu_moe_layers = 0;      // ModelLoadOptions::cpu_moe_layers of the device model
};

std::ostream& operator<<(std::ostream& out, const Variant& v) { return out << v.name; }

const Variant kVariants[] = {
    {"qwen3_5_hf_f32_kv_f32", Arch::kQwen35, modelgen::Layout::kHF, 0, modelgen::TensorDType::kF32,
     KvType::kF32},
    {"qwen3_5_mlx4_kv_bf16", Arch::kQwen35, modelgen::Layout::kMLX, 4, modelgen::TensorDType::kF32,
     KvType::kBF16},
    {"qwen3_hf_bf16_kv_int8", Arch::kQwen3, modelgen::Layout::kHF, 0, modelgen::TensorDType::kBF16,
     KvType::kInt8},
    {"qwen3_mlx8_kv_f16", Arch::kQwen3, modelgen::Layout::kMLX, 8, modelgen::TensorDType::kF32,
     KvType::kF16},
    {"qwen3_5_moe_mlx4_kv_bf16", Arch::kQwen35Moe, modelgen::Layout::kMLX, 4,
     modelgen::TensorDType::kF32, KvType::kBF16},
    {"qwen3_next_hf_f32_kv_f32", Arch::kQwen3Next, modelgen::Layout::kHF, 0,
     modelgen::TensorDType::kF32, KvType::kF32},
    // Codes that run across words (3 bits), GGUF K-quants in groups of 16 and 32 (Q4_K with
    // Q6_K where llama-quantize's mix puts it), and routed experts of Q3_K.
    {"qwen3_mlx3_kv_bf16", Arch::kQwen3, modelgen::Layout::kMLX, 3, modelgen::TensorDType::kF32,
     KvType::kBF16},
    // (Value heads of 128, as in every Qwen3.5: each 256-value block of llama.cpp's tiled
    // out_proj spans two heads, so the device moves the activations into the file's order, as
    // the CPU does; 6 value heads on 2 key heads tile in an order that is not its own inverse.)
    {"qwen3_5_gguf_q4_k_m_kv_f16", Arch::kQwen35, modelgen::Layout::kHF, 0,
     modelgen::TensorDType::kF32, KvType::kF16, "q4_k_m", 128, 6},
    {"qwen3_5_moe_gguf_q3_k_kv_bf16", Arch::kQwen35Moe, modelgen::Layout::kHF, 0,
     modelgen::TensorDType::kF32, KvType::kBF16, "q3_k", 32},
    // Routed experts on the CPU: every layer's (MLX 4-bit), the first of four layers' (GGUF
    // Q3_K: CPU-expert and device-expert layers in one pass).
    {"qwen3_5_moe_mlx4_kv_bf16_cpu_moe", Arch::kQwen35Moe, modelgen::Layout::kMLX, 4,
     modelgen::TensorDType::kF32, KvType::kBF16, "", 0, 0, ModelLoadOptions::kAllLayers},
    {"qwen3_5_moe_gguf_q3_k_kv_f32_n_cpu_moe_1", Arch::kQwen35Moe, modelgen::Layout::kHF, 0,
     modelgen::TensorDType::kF32, KvType::kF32, "q3_k", 32, 0, 1},
};

// The model at `path` with its forward pass on the Vulkan device, the routed experts of layers
// [0, cpu_moe_layers) in host memory.
std::shared_ptr<const Model> load_on_device(const std::string& path, int cpu_moe_layers = 0) {
  ModelLoadOptions on_device;
  on_device.device = "vulkan";
  on_device.cpu_moe_layers = cpu_moe_layers;
  return Model::load(path, {}, on_device);
}

// A random model with an MTP head written to `path`: `arch` in `layout`, MLX-quantized to `bits`
// (0: float weights).
void write_mtp_model(const std::string& path, Arch arch, modelgen::Layout layout, int bits,
                     uint64_t seed) {
  modelgen::ModelOptions o;
  o.arch = arch;
  o.layout = layout;
  if (bits) o.quantization = modelgen::QuantParams{bits, 32};
  o.shape = modelgen::default_shape(arch);
  o.shape.mtp = true;
  o.seed = seed;
  modelgen::write_random_model(o, path);
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * 4) == 0;
}

int argmax(const std::vector<float>& v) {
  return int(std::max_element(v.begin(), v.end()) - v.begin());
}

// The gap between the largest and second-largest logit.
float top_gap(std::vector<float> v) {
  std::partial_sort(v.begin(), v.begin() + 2, v.end(), std::greater<float>());
  return v[0] - v[1];
}

// Every K/V row and recurrent state of a device state, read back as the cache reads them.
std::vector<uint8_t> device_state_bytes(const Model& model, const ModelState& s) {
  std::vector<uint8_t> out;
  const size_t bytes = size_t(s.position) * s.kv_row_bytes;
  std::vector<uint8_t> k(bytes), v(bytes);
  for (size_t a = 0; a < s.kv.size(); ++a) {
    model.read_kv_rows(s, int(a), 0, s.position, k.data(), v.data());
    out.insert(out.end(), k.begin(), k.end());
    out.insert(out.end(), v.begin(), v.end());
  }
  const ModelConfig& c = model.config();
  std::vector<float> conv(size_t(c.conv_kernel - 1) * c.conv_channels()),
      ssm(size_t(c.linear_value_heads) * c.linear_value_dim * c.linear_key_dim);
  for (size_t r = 0; r < s.recurrent.size(); ++r) {
    model.read_recurrent(s, int(r), conv.data(), ssm.data());
    const auto* cb = reinterpret_cast<const uint8_t*>(conv.data());
    const auto* sb = reinterpret_cast<const uint8_t*>(ssm.data());
    out.insert(out.end(), cb, cb + conv.size() * 4);
    out.insert(out.end(), sb, sb + ssm.size() * 4);
  }
  return out;
}

class VulkanForwardTest : public ::testing::TestWithParam<Variant> {
 protected:
  static void SetUpTestSuite() {
    skip_ = vulkan_skip_reason();
    dir_ = testing::make_temp_dir("vulkan_forward");
  }
  static void TearDownTestSuite() { std::filesystem::remove_all(dir_); }
  void TearDown() override {
    if (skip_.empty()) expect_no_validation_findings();
  }

  void SetUp() override {
    if (!skip_.empty()) GTEST_SKIP() << skip_;
    const Variant& v = GetParam();
    modelgen::ModelOptions o;
    o.arch = v.arch;
    o.layout = v.layout;
    o.dtype = v.dtype;
    if (v.bits) o.quantization = modelgen::QuantParams{v.bits, 32};
    o.shape = modelgen::default_shape(v.arch);
    if (v.linear_value_heads) o.shape.linear_value_heads = v.linear_value_heads;
    if (v.linear_head_dim) {  // llama.cpp's qwen35 takes them equal
      o.shape.linear_key_dim = o.shape.linear_value_dim = v.linear_head_dim;
    }
    o.seed = 11;
    std::string path = dir_ + "/" + v.name;
    if (v.gguf.empty()) {
      modelgen::write_random_model(o, path);
    } else {
      path += ".gguf";
      modelgen::write_random_gguf_model(o, modelgen::parse_gguf_recipe(v.gguf), path);
    }
    cpu_ = Model::load(path);
    gpu_ = load_on_device(path, v.cpu_moe_layers);
    V_ = gpu_->config().vocab_size;
  }

  std::vector<int32_t> random_tokens(size_t n) {
    std::vector<int32_t> t(n);
    for (auto& x : t) x = int32_t(rng_() % uint64_t(V_));
    return t;
  }
  int uniform(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }

  std::vector<uint8_t> state_bytes(const ModelState& s) const {
    return device_state_bytes(*gpu_, s);
  }

  static std::string skip_, dir_;
  std::shared_ptr<const Model> cpu_, gpu_;
  int V_ = 0;
  std::mt19937_64 rng_{99};
};
std::string VulkanForwardTest::skip_, VulkanForwardTest::dir_;

// A prompt, then greedy decoding on both: logits within rounding of the CPU's at every step,
// and the same tokens wherever the choice is not a near-tie.
TEST_P(VulkanForwardTest, MatchesTheCpuWithinRounding) {
  const KvType kv = GetParam().kv;
  ModelState on_cpu = cpu_->new_state(kv), on_gpu = gpu_->new_state(kv);
  ASSERT_NE(on_gpu.device, nullptr);
  const std::vector<int32_t> prompt = random_tokens(37);
  std::vector<float> a(V_), b(V_);
  cpu_->forward(prompt, on_cpu, a.data());
  gpu_->forward(prompt, on_gpu, b.data());
  double worst = 0;
  for (int step = 0; step < 12; ++step) {
    const double error = testing::relative_error(b, a);
    worst = std::max(worst, error);
    EXPECT_LT(error, 2e-4) << "step " << step;
    int32_t next = argmax(a);
    if (top_gap(a) > 1e-3f * std::abs(a[next])) {
      EXPECT_EQ(argmax(b), next) << "step " << step;
    }
    const ForwardOptions generated{DeltaRuleForm::kAuto, RowKind::kGenerated};
    cpu_->forward(std::span(&next, 1), on_cpu, a.data(), generated);
    gpu_->forward(std::span(&next, 1), on_gpu, b.data(), generated);
  }
  EXPECT_EQ(on_gpu.position, on_cpu.position);
  std::printf("[ %s ] worst relative logits error against the CPU: %.3g\n", GetParam().name.c_str(),
              worst);
}

// The same prompt fed whole and in random pieces (some of one token): the logits after it and
// every byte of the state are identical.
TEST_P(VulkanForwardTest, PromptSplitsGiveIdenticalBits) {
  const KvType kv = GetParam().kv;
  const std::vector<int32_t> prompt = random_tokens(61);
  ModelState whole = gpu_->new_state(kv);
  std::vector<float> expected(V_), got(V_);
  gpu_->forward(prompt, whole, expected.data());
  for (int trial = 0; trial < 3; ++trial) {
    ModelState pieces = gpu_->new_state(kv);
    for (size_t done = 0; done < prompt.size();) {
      const size_t n =
          std::min(prompt.size() - done, size_t(uniform(0, 2) == 0 ? 1 : uniform(1, 20)));
      gpu_->forward(std::span(prompt).subspan(done, n), pieces, got.data());
      done += n;
    }
    EXPECT_TRUE(same_bits(got, expected)) << "trial " << trial;
    EXPECT_EQ(state_bytes(pieces), state_bytes(whole)) << "trial " << trial;
  }
}

// Random batches of 1-5 sequences, each fed a prompt chunk or 1-3 generated rows, in random
// segment order: every sequence's logits (all rows) and state equal those of a twin fed the
// same rows alone.
TEST_P(VulkanForwardTest, BatchesGiveIdenticalBitsToEachSequenceAlone) {
  const KvType kv = GetParam().kv;
  for (int trial = 0; trial < 4; ++trial) {
    const int n = uniform(1, 5);
    std::vector<ModelState> batched, alone;
    std::vector<std::vector<int32_t>> fed{size_t(n)};
    std::vector<RowKind> kinds(static_cast<size_t>(n));
    std::vector<float> scratch(V_);
    for (int i = 0; i < n; ++i) {
      const std::vector<int32_t> history = random_tokens(size_t(uniform(0, 30)));
      batched.push_back(gpu_->new_state(kv));
      alone.push_back(gpu_->new_state(kv));
      if (!history.empty()) {
        gpu_->forward(history, batched.back(), scratch.data());
        gpu_->forward(history, alone.back(), scratch.data());
      }
      kinds[size_t(i)] = rng_() % 2 ? RowKind::kPrompt : RowKind::kGenerated;
      fed[size_t(i)] = random_tokens(kinds[size_t(i)] == RowKind::kPrompt ? size_t(uniform(1, 16))
                                                                          : size_t(uniform(1, 3)));
    }
    std::vector<std::vector<float>> batch_logits{size_t(n)}, alone_logits{size_t(n)};
    std::vector<BatchSegment> segments;
    for (int i = 0; i < n; ++i) {
      batch_logits[size_t(i)].assign(fed[size_t(i)].size() * size_t(V_), 0.f);
      BatchSegment s;
      s.tokens = fed[size_t(i)];
      s.state = &batched[size_t(i)];
      s.kind = kinds[size_t(i)];
      s.all_logits = batch_logits[size_t(i)].data();
      segments.push_back(s);
    }
    std::shuffle(segments.begin(), segments.end(), rng_);
    gpu_->forward_batch(segments);
    for (int i = 0; i < n; ++i) {
      alone_logits[size_t(i)].assign(fed[size_t(i)].size() * size_t(V_), 0.f);
      BatchSegment s;
      s.tokens = fed[size_t(i)];
      s.state = &alone[size_t(i)];
      s.kind = kinds[size_t(i)];
      s.all_logits = alone_logits[size_t(i)].data();
      gpu_->forward_batch(std::span(&s, 1));
      const std::string what = "trial " + std::to_string(trial) + " sequence " + std::to_string(i);
      EXPECT_TRUE(same_bits(batch_logits[size_t(i)], alone_logits[size_t(i)])) << what;
      EXPECT_EQ(state_bytes(batched[size_t(i)]), state_bytes(alone[size_t(i)])) << what;
    }
  }
}

// A state read out to the host and written into a fresh one (a checkpoint, then a restore into
// another sequence), or copied on the device, continues bit for bit as the original does.
TEST_P(VulkanForwardTest, StateCopiedThroughTheHostContinuesIdentically) {
  const KvType kv = GetParam().kv;
  ModelState original = gpu_->new_state(kv);
  std::vector<float> a(V_), b(V_);
  gpu_->forward(random_tokens(300), original, a.data());  // past the first K/V reservation
  ModelState restored = gpu_->new_state(kv);
  restored.position = original.position;
  const size_t bytes = size_t(original.position) * original.kv_row_bytes;
  std::vector<uint8_t> k(bytes), v(bytes);
  for (size_t l = 0; l < original.kv.size(); ++l) {
    gpu_->read_kv_rows(original, int(l), 0, original.position, k.data(), v.data());
    gpu_->write_kv_rows(restored, int(l), 0, original.position, k.data(), v.data());
  }
  const ModelConfig& c = gpu_->config();
  std::vector<float> conv(size_t(c.conv_kernel - 1) * c.conv_channels()),
      ssm(size_t(c.linear_value_heads) * c.linear_value_dim * c.linear_key_dim);
  for (size_t r = 0; r < original.recurrent.size(); ++r) {
    gpu_->read_recurrent(original, int(r), conv.data(), ssm.data());
    gpu_->write_recurrent(restored, int(r), conv.data(), ssm.data());
  }
  // A copy made on the device (Model::clone_state) continues the same way too.
  ModelState cloned = gpu_->clone_state(original);
  std::vector<float> from_clone(V_);
  const std::vector<int32_t> more = random_tokens(9);
  gpu_->forward(more, original, a.data());
  gpu_->forward(more, restored, b.data());
  gpu_->forward(more, cloned, from_clone.data());
  EXPECT_TRUE(same_bits(a, b));
  EXPECT_TRUE(same_bits(a, from_clone));
  EXPECT_EQ(state_bytes(original), state_bytes(restored));
  EXPECT_EQ(state_bytes(original), state_bytes(cloned));
}

// What one forward call of a warm device did: one submission (ids and positions ride in it,
// and the logits come back in it), one read-back per logits row asked for, no staging buffer
// allocated, and a bounded number of dispatches: per layer a fixed set over the whole batch
// plus a few per sequence (its K/V store, attention, conv and delta rule, with the copies of
// its rows). A dispatch per head, per row or per expert would break the bound.
struct StepWork {
  vulkan::TransferCounts before, after;
  uint64_t submissions() const { return after.submissions - before.submissions; }
  uint64_t dispatches() const { return after.dispatches - before.dispatches; }
  uint64_t writes() const { return after.host_writes - before.host_writes; }
  uint64_t reads() const { return after.host_reads - before.host_reads; }
  uint64_t allocations() const { return after.staging_allocations - before.staging_allocations; }
};

uint64_t dispatch_bound(const ModelConfig& c, int sequences) {
  constexpr uint64_t kPerLayer = 26, kPerSequenceLayer = 6, kOutside = 4;
  return uint64_t(c.num_layers) * (kPerLayer + kPerSequenceLayer * uint64_t(sequences)) + kOutside;
}

void expect_one_submission_per_step(const Model& model, KvType kv) {
  const int V = model.config().vocab_size;
  std::vector<ModelState> states;
  std::vector<std::vector<float>> logits(3, std::vector<float>(size_t(V)));
  for (int i = 0; i < 3; ++i) {
    states.push_back(model.new_state(kv));
    const std::vector<int32_t> prompt(size_t(10 + i), int32_t(5 + i));
    model.forward(prompt, states.back(), logits[size_t(i)].data());
  }
  const std::vector<int32_t> next = {7, 8, 9};
  auto step = [&](int sequences) {
    std::vector<BatchSegment> segments(static_cast<size_t>(sequences));
    for (int i = 0; i < sequences; ++i) {
      segments[size_t(i)].tokens = std::span(next).subspan(size_t(i), 1);
      segments[size_t(i)].state = &states[size_t(i)];
      segments[size_t(i)].kind = RowKind::kGenerated;
      segments[size_t(i)].logits = logits[size_t(i)].data();
    }
    StepWork work;
    work.before = model.device()->counts();
    model.forward_batch(segments);
    work.after = model.device()->counts();
    return work;
  };
  // A layer whose routed experts run on the CPU (--cpu-moe) ends a submission: its rows and
  // routes come back in it, and the experts' outputs go up at the start of the next.
  const uint64_t host_layers = uint64_t(model.device()->host_experts().layers);
  step(3);  // warms the scratch buffers and the staging pool for three rows
  for (int sequences : {1, 3}) {
    const StepWork w = step(sequences);
    const std::string what = std::to_string(sequences) + " sequences";
    EXPECT_EQ(w.submissions(), 1u + host_layers) << what;
    EXPECT_EQ(w.reads(), uint64_t(sequences) + 2 * host_layers) << what;
    EXPECT_EQ(w.writes(), 2u + host_layers) << what << " (ids, positions, expert outputs)";
    EXPECT_EQ(w.allocations(), 0u) << what;
    EXPECT_LE(w.dispatches(), dispatch_bound(model.config(), sequences)) << what;
    EXPECT_GE(w.dispatches(), uint64_t(model.config().num_layers)) << what;
    std::printf("[ decode step ] %s: %llu dispatches in %llu submission(s), %llu read-backs\n",
                what.c_str(), static_cast<unsigned long long>(w.dispatches()),
                static_cast<unsigned long long>(w.submissions()),
                static_cast<unsigned long long>(w.reads()));
  }
}

// One decode step is one submission with its read-backs in it (on lavapipe, where the host
// shares the device's memory: the in-place path); one more per layer of CPU experts.
TEST_P(VulkanForwardTest, ADecodeStepIsOneSubmission) {
  expect_one_submission_per_step(*gpu_, GetParam().kv);
}

INSTANTIATE_TEST_SUITE_P(Variants, VulkanForwardTest, ::testing::ValuesIn(kVariants),
                         [](const auto& info) { return info.param.name; });

// The MTP head on the device (Qwen3.5 dense and MoE, float and 4-bit): the main model's final
// hidden rows and the head's logits within rounding of the CPU's, prompt rows and drafts (with
// the head's own output as the next input); its rows bit-identical fed at once or one by one
// and after a rolled-back draft.
struct MtpVariant {
  std::string name;
  Arch arch;
  modelgen::Layout layout;
  int bits;
};

class VulkanMtpTest : public ::testing::TestWithParam<MtpVariant> {};

std::vector<float> final_hidden_rows(const Model& model, const std::vector<int32_t>& tokens) {
  ModelState state = model.new_state(KvType::kBF16);
  std::vector<float> hidden(tokens.size() * size_t(model.config().hidden_size));
  std::vector<float> logits(size_t(model.config().vocab_size));
  ForwardOptions o;
  o.final_hidden = hidden.data();
  model.forward(tokens, state, logits.data(), o);
  return hidden;
}

TEST_P(VulkanMtpTest, TheHeadMatchesTheCpuAndItsOwnSplits) {
  const std::string skip = vulkan_skip_reason();
  if (!skip.empty()) GTEST_SKIP() << skip;
  const MtpVariant& v = GetParam();
  const std::string dir = testing::make_temp_dir("vulkan_mtp");
  write_mtp_model(dir + "/m", v.arch, v.layout, v.bits, 5);
  auto cpu = Model::load(dir + "/m");
  auto gpu = load_on_device(dir + "/m");
  ASSERT_TRUE(gpu->has_mtp()) << gpu->mtp_unavailable_reason();
  const size_t H = size_t(gpu->config().hidden_size), V = size_t(gpu->config().vocab_size);

  std::mt19937_64 rng(17);
  std::vector<int32_t> tokens(23);
  for (int32_t& t : tokens) t = int32_t(rng() % V);
  const std::vector<float> hidden_cpu = final_hidden_rows(*cpu, tokens);
  const std::vector<float> hidden_gpu = final_hidden_rows(*gpu, tokens);
  EXPECT_LT(testing::relative_error(hidden_gpu, hidden_cpu), 2e-4);
  const size_t rows = tokens.size() - 1;  // row p: hidden p with token p + 1
  const std::vector<int32_t> next(tokens.begin() + 1, tokens.end());

  // The prompt's rows, then three drafts fed the head's own output, on both.
  ModelState head_cpu = cpu->new_mtp_state(KvType::kBF16);
  ModelState head_gpu = gpu->new_mtp_state(KvType::kBF16);
  ASSERT_NE(head_gpu.device, nullptr);
  std::vector<float> a(V), b(V), out_a(H), out_b(H);
  cpu->mtp_forward(std::span(hidden_gpu).first((rows - 1) * H), std::span(next).first(rows - 1),
                   head_cpu, a.data(), RowKind::kPrompt);
  gpu->mtp_forward(std::span(hidden_gpu).first((rows - 1) * H), std::span(next).first(rows - 1),
                   head_gpu, b.data(), RowKind::kPrompt);
  EXPECT_LT(testing::relative_error(b, a), 2e-4);
  std::vector<float> input(hidden_gpu.end() - ptrdiff_t(H), hidden_gpu.end());
  int32_t token = next.back();
  for (int draft = 0; draft < 3; ++draft) {
    cpu->mtp_forward(input, std::span(&token, 1), head_cpu, a.data(), RowKind::kGenerated,
                     out_a.data());
    gpu->mtp_forward(input, std::span(&token, 1), head_gpu, b.data(), RowKind::kGenerated,
                     out_b.data());
    EXPECT_LT(testing::relative_error(b, a), 2e-4) << "draft " << draft;
    EXPECT_LT(testing::relative_error(out_b, out_a), 2e-4) << "draft " << draft;
    input = out_b;
    token = argmax(b);
  }
  EXPECT_EQ(head_gpu.position, head_cpu.position);

  // On the device: generated rows at once or one by one, and a rolled-back draft, bit for bit.
  ModelState at_once = gpu->new_mtp_state(KvType::kBF16), one_by_one = at_once;
  one_by_one = gpu->new_mtp_state(KvType::kBF16);
  std::vector<float> c(V), d(V);
  gpu->mtp_forward(std::span(hidden_gpu).first(rows * H), next, at_once, c.data());
  for (size_t p = 0; p < rows; ++p)
    gpu->mtp_forward(std::span(hidden_gpu).subspan(p * H, H), std::span(next).subspan(p, 1),
                     one_by_one, d.data());
  EXPECT_TRUE(same_bits(c, d));
  const int32_t other = int32_t((next.back() + 1) % int32_t(V));
  const std::span last_row = std::span(hidden_gpu).subspan((rows - 1) * H, H);
  one_by_one.position -= 1;
  gpu->mtp_forward(last_row, std::span(&other, 1), one_by_one, d.data());
  EXPECT_FALSE(same_bits(c, d));
  one_by_one.position -= 1;
  gpu->mtp_forward(last_row, std::span(next).last(1), one_by_one, d.data());
  EXPECT_TRUE(same_bits(c, d));

  // The engine speculates there as on the CPU (VulkanSpeculativeTest below).
  EXPECT_EQ(speculation_unavailable(*gpu), "");
  EXPECT_EQ(speculation_unavailable(*cpu), "");

  // A host MTP state is refused by the device model.
  ModelState host_head = cpu->new_mtp_state(KvType::kBF16);
  EXPECT_THROW(
      gpu->mtp_forward(std::span(hidden_gpu).last(H), std::span(next).last(1), host_head, d.data()),
      Error);
  std::filesystem::remove_all(dir);
  expect_no_validation_findings();
}

INSTANTIATE_TEST_SUITE_P(
    Heads, VulkanMtpTest,
    ::testing::Values(MtpVariant{"qwen3_5_hf", Arch::kQwen35, modelgen::Layout::kHF, 0},
                      MtpVariant{"qwen3_5_moe_mlx4", Arch::kQwen35Moe, modelgen::Layout::kMLX, 4}),
    [](const auto& info) { return info.param.name; });

// Speculative decoding with the states on the device (Qwen3.5 dense and MoE, both rollback
// methods): greedy output equals plain device decoding token for token and logits bit for bit,
// k = 1..3, drafts driven to a seeded random mix of acceptances and rejections; keep_verified
// leaves the device state (read back as the cache reads it) bit-identical to plain decoding of
// the rows it keeps; and the view of an earlier row (state_after, a checkpoint there) reads the
// recurrent states plain decoding has at that position.
struct SpeculativeVariant {
  std::string name;
  Arch arch;
  modelgen::Layout layout;
  int bits;
  DType kv;
};

class VulkanSpeculativeTest : public ::testing::TestWithParam<SpeculativeVariant> {
 protected:
  static void TearDownTestSuite() {
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }
  void TearDown() override {
    if (skip_.empty()) expect_no_validation_findings();
  }
  void SetUp() override {
    skip_ = vulkan_skip_reason();
    if (!skip_.empty()) GTEST_SKIP() << skip_;
    const SpeculativeVariant& v = GetParam();
    if (dir_.empty()) dir_ = testing::make_temp_dir("vulkan_speculative");
    const std::string path = dir_ + "/" + v.name;
    if (!std::filesystem::exists(path)) write_mtp_model(path, v.arch, v.layout, v.bits, 11);
    gpu_ = load_on_device(path);
    ASSERT_TRUE(gpu_->has_mtp()) << gpu_->mtp_unavailable_reason();
  }
  std::vector<int32_t> random_tokens(size_t n) {
    std::vector<int32_t> t(n);
    for (auto& x : t) x = int32_t(rng_() % uint64_t(gpu_->config().vocab_size));
    return t;
  }

  static inline std::string dir_;
  std::string skip_;
  std::shared_ptr<const Model> gpu_;
  std::mt19937_64 rng_{23};
};

TEST_P(VulkanSpeculativeTest, GreedyEqualsPlainDeviceDecoding) {
  const DType kv = GetParam().kv;
  const int32_t V = gpu_->config().vocab_size;
  int64_t accepted = 0, drafted = 0;
  for (int prompt_index = 0; prompt_index < 2; ++prompt_index) {
    const std::vector<int32_t> prompt = random_tokens(5 + rng_() % 20);
    const size_t n = 12;
    const testing::Generation plain = testing::plain_greedy(gpu_, kv, prompt, n);
    // Drafts for position p: the plain run's token there, or (a third of the time) another one.
    std::vector<int32_t> context = prompt;
    context.insert(context.end(), plain.tokens.begin(), plain.tokens.end());
    for (int k = 1; k <= 3; ++k)
      for (auto rollback : {RollbackMethod::kKeepStates, RollbackMethod::kRecompute}) {
        std::mt19937_64 draft_rng(uint64_t(prompt_index * 10 + k));
        Session session(gpu_, testing::options_of(kv));  // prefill split unlike the plain run
        SpeculativeOptions o;
        o.draft_tokens = k;
        o.rollback = rollback;
        o.draft_override = [&](int64_t position, int32_t) {
          const int32_t right = position < int64_t(context.size()) ? context[size_t(position)] : 0;
          return draft_rng() % 3 == 0 ? (right + 1) % V : right;
        };
        SpeculativeDecoder decoder(session, o);
        decoder.prefill(prompt);
        Sampler sampler({}, -1);
        const std::string what = "prompt " + std::to_string(prompt_index) +
                                 " k=" + std::to_string(k) +
                                 (rollback == RollbackMethod::kKeepStates ? " keep" : " recompute");
        testing::expect_same(plain, testing::speculative(decoder, sampler, n), what);
        testing::expect_same_state(
            testing::plain_session(gpu_, kv, prompt, std::span(plain.tokens).first(n - 1))
                ->export_state(),
            session.export_state(), what);
        accepted += decoder.counts().accepted;
        drafted += decoder.counts().drafted;
      }
  }
  // The driven drafts exercised both acceptance and rollback.
  EXPECT_GT(accepted, drafted / 3);
  EXPECT_LT(accepted, drafted);
}

TEST_P(VulkanSpeculativeTest, KeepVerifiedLeavesThePlainDecodedState) {
  const DType kv = GetParam().kv;
  const size_t H = size_t(gpu_->config().hidden_size), V = size_t(gpu_->config().vocab_size);
  const std::vector<int32_t> prompt = random_tokens(11), rows = random_tokens(4);
  std::vector<float> all_logits(rows.size() * V), hidden(rows.size() * H);
  for (auto rollback : {RollbackMethod::kKeepStates, RollbackMethod::kRecompute})
    for (int kept = 1; kept <= int(rows.size()); ++kept) {
      Session session(gpu_, testing::options_of(kv));
      session.prefill(prompt);
      session.verify(rows, all_logits.data(), hidden.data(), rollback);
      session.keep_verified(kept, rollback);
      const std::string what = "kept " + std::to_string(kept) +
                               (rollback == RollbackMethod::kKeepStates ? " keep" : " recompute");
      testing::expect_same_state(
          testing::plain_session(gpu_, kv, prompt, std::span(rows).first(size_t(kept)))
              ->export_state(),
          session.export_state(), what);
    }
}

TEST_P(VulkanSpeculativeTest, StateAfterEachRowIsThePlainSessionThere) {
  const DType kv = GetParam().kv;
  const std::vector<int32_t> prompt = random_tokens(9);
  const testing::Generation plain = testing::plain_greedy(gpu_, kv, prompt, 6);
  std::vector<int32_t> context = prompt;
  context.insert(context.end(), plain.tokens.begin(), plain.tokens.end());
  Session session(gpu_, testing::options_of(kv, 7));
  SpeculativeOptions o;
  o.draft_tokens = 3;
  o.draft_override = [&](int64_t position, int32_t) { return context.at(size_t(position)); };
  SpeculativeDecoder decoder(session, o);
  decoder.prefill(prompt);
  Sampler sampler({}, -1);
  const SpeculativeStep& s = decoder.step(plain.tokens[0], sampler, {});
  ASSERT_EQ(s.tokens.size(), 4u);
  const StateLayout& l = session.layout();
  // Every row's view, then (as a caller that stopped keeps fewer rows and checkpoints there) the
  // views of the rows still held after keep(2).
  auto expect_views = [&](int rows, const std::string& when) {
    for (int fed = 1; fed <= rows; ++fed) {
      const StateSource& view = decoder.state_after(fed);
      const auto reference =
          testing::plain_session(gpu_, kv, prompt, std::span(plain.tokens).first(size_t(fed)));
      ASSERT_EQ(view.position(), reference->position());
      for (size_t r = 0; r < l.recurrent_layers.size(); ++r) {
        std::vector<float> c1(l.conv_state_bytes() / 4), s1(l.ssm_state_bytes() / 4), c2 = c1,
                                                                                      s2 = s1;
        view.read_recurrent(int(r), c1.data(), s1.data());
        reference->read_recurrent(int(r), c2.data(), s2.data());
        EXPECT_TRUE(same_bits(c1, c2)) << when << " fed " << fed << " layer " << r;
        EXPECT_TRUE(same_bits(s1, s2)) << when << " fed " << fed << " layer " << r;
      }
      EXPECT_TRUE(
          same_bits(std::vector<float>(view.logits().begin(), view.logits().end()),
                    std::vector<float>(reference->logits().begin(), reference->logits().end())))
          << when << " fed " << fed;
    }
  };
  expect_views(4, "after the step");
  decoder.keep(2);
  expect_views(2, "after keep(2)");
}

INSTANTIATE_TEST_SUITE_P(
    Heads, VulkanSpeculativeTest,
    ::testing::Values(SpeculativeVariant{"qwen3_5_hf_kv_f32", Arch::kQwen35, modelgen::Layout::kHF,
                                         0, DType::kF32},
                      SpeculativeVariant{"qwen3_5_moe_mlx4_kv_bf16", Arch::kQwen35Moe,
                                         modelgen::Layout::kMLX, 4, DType::kBF16}),
    [](const auto& info) { return info.param.name; });

// --cpu-moe and --n-cpu-moe N against the all-device model: the experts' bytes are not
// uploaded (the weights on the device are less by exactly what the start-up line says) but read
// in at load, the device says which layers' experts it left (part of the cache fingerprint),
// and the logits stay within rounding of the all-device run. N beyond the layers means all; the
// MTP head's experts stay on the device.
TEST(VulkanCpuMoeTest, HostExpertsLeaveTheDeviceAndKeepTheLogits) {
  const std::string skip = vulkan_skip_reason();
  if (!skip.empty()) GTEST_SKIP() << skip;
  const std::string dir = testing::make_temp_dir("vulkan_cpu_moe");
  write_mtp_model(dir + "/m", Arch::kQwen35Moe, modelgen::Layout::kMLX, 4, 23);
  auto all_on_device = load_on_device(dir + "/m");
  auto first_on_cpu = load_on_device(dir + "/m", 1);
  // The experts left on the host are read in after the upload, in the same progress count:
  // from 0, never back, ending at its total.
  std::vector<std::pair<uint64_t, uint64_t>> progress;
  ModelLoadOptions experts_on_host;
  experts_on_host.device = "vulkan";
  experts_on_host.cpu_moe_layers = ModelLoadOptions::kAllLayers;
  auto all_on_cpu = Model::load(
      dir + "/m", [&](uint64_t done, uint64_t total) { progress.emplace_back(done, total); },
      experts_on_host);
  ASSERT_FALSE(progress.empty());
  EXPECT_EQ(progress.front().first, 0u);
  for (size_t i = 1; i < progress.size(); ++i) EXPECT_GE(progress[i].first, progress[i - 1].first);
  EXPECT_EQ(progress.back().first, progress.back().second);
  auto beyond = load_on_device(dir + "/m", 99);
  const DeviceForward& device = *all_on_device->device();
  const int layers = all_on_device->config().num_layers;
  ASSERT_GE(layers, 2);

  EXPECT_EQ(device.host_experts().layers, 0);
  EXPECT_EQ(describe_host_experts(device.host_experts()), "");
  const HostExperts one = first_on_cpu->device()->host_experts();
  const HostExperts all = all_on_cpu->device()->host_experts();
  EXPECT_EQ(one.layers, 1);
  EXPECT_EQ(one.moe_layers, layers);
  EXPECT_EQ(all.layers, layers);
  EXPECT_GT(one.bytes, 0u);
  EXPECT_EQ(all.bytes, one.bytes * uint64_t(layers));  // the layers' experts are of one size
  EXPECT_EQ(device.weight_bytes() - first_on_cpu->device()->weight_bytes(), one.bytes);
  EXPECT_EQ(device.weight_bytes() - all_on_cpu->device()->weight_bytes(), all.bytes);
  EXPECT_EQ(beyond->device()->host_experts().layers, layers);
  EXPECT_EQ(describe_host_experts(all),
            "the routed experts of " + std::to_string(layers) + " of " + std::to_string(layers) +
                " MoE layers stay in host memory and run on the CPU, keeping " +
                human_bytes(all.bytes) + " off the device");
  EXPECT_NE(all_on_cpu->backend_description(), all_on_device->backend_description());
  EXPECT_TRUE(all_on_cpu->has_mtp());

  std::mt19937_64 rng(3);
  std::vector<int32_t> prompt(29);
  const int V = all_on_device->config().vocab_size;
  for (int32_t& t : prompt) t = int32_t(rng() % uint64_t(V));
  std::vector<float> expected(static_cast<size_t>(V)), got(static_cast<size_t>(V));
  ModelState reference = all_on_device->new_state(KvType::kF32);
  all_on_device->forward(prompt, reference, expected.data());
  for (const auto& model : {first_on_cpu, all_on_cpu}) {
    ModelState state = model->new_state(KvType::kF32);
    model->forward(prompt, state, got.data());
    EXPECT_LT(testing::relative_error(got, expected), 2e-4);
  }
  std::filesystem::remove_all(dir);
  expect_no_validation_findings();
}

// A state of the CPU model is refused by the device model, and the other way round.
TEST(VulkanForwardMixTest, StatesDoNotCrossBackends) {
  const std::string skip = vulkan_skip_reason();
  if (!skip.empty()) GTEST_SKIP() << skip;
  const std::string dir = testing::make_temp_dir("vulkan_mix");
  modelgen::ModelOptions o;
  o.arch = Arch::kQwen3;
  o.shape = modelgen::default_shape(o.arch);
  modelgen::write_random_model(o, dir + "/m");
  auto cpu = Model::load(dir + "/m");
  auto gpu = load_on_device(dir + "/m");
  std::vector<float> logits(size_t(cpu->config().vocab_size));
  const int32_t token = 3;
  ModelState host_state = cpu->new_state(KvType::kF32);
  ModelState device_state = gpu->new_state(KvType::kF32);
  EXPECT_THROW(gpu->forward(std::span(&token, 1), host_state, logits.data()), Error);
  EXPECT_THROW(cpu->forward(std::span(&token, 1), device_state, logits.data()), Error);
  std::filesystem::remove_all(dir);
  expect_no_validation_findings();
}

// Images on the device (Qwen3.5 with a tower and an MTP head): a prompt of [5 text | a 2 x 3
// image | 4 text], the image's rows fed its embeddings at M-RoPE positions and the text after it
// moved by the state's rope_delta, as model/image_rows.h says. Against the CPU within rounding;
// bit for bit across splits through the image and whatever shares the batch; the MTP head
// takes image rows one row on; wrong embeddings are refused before the state changes.
class VulkanImageTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string skip = vulkan_skip_reason();
    if (!skip.empty()) GTEST_SKIP() << skip;
    dir_ = testing::make_temp_dir("vulkan_images");
    modelgen::ModelOptions o;
    o.arch = Arch::kQwen35;
    o.shape = modelgen::default_shape(o.arch);
    o.shape.vision = true;
    o.shape.mtp = true;
    o.seed = 11;
    modelgen::write_random_model(o, dir_ + "/m");
    cpu_ = Model::load(dir_ + "/m");
    gpu_ = load_on_device(dir_ + "/m");
    H_ = gpu_->config().hidden_size;
    V_ = gpu_->config().vocab_size;
    testing::ImagePrompt prompt = testing::two_by_three_image_prompt(gpu_->image_pad_id(), H_);
    tokens_ = std::move(prompt.tokens);
    images_ = std::move(prompt.images);
  }
  void TearDown() override {
    if (dir_.empty()) return;
    std::filesystem::remove_all(dir_);
    expect_no_validation_findings();
  }

  // Feeds tokens_[begin, end) as prompt rows with the image; the logits after the last.
  std::vector<float> feed(const Model& model, ModelState& state, size_t begin, size_t end,
                          float* hidden = nullptr) const {
    std::vector<float> logits(static_cast<size_t>(V_));
    ForwardOptions o;
    o.images = images_;
    o.final_hidden = hidden;
    model.forward(std::span(tokens_).subspan(begin, end - begin), state, logits.data(), o);
    return logits;
  }

  std::string dir_;
  std::shared_ptr<const Model> cpu_, gpu_;
  int H_ = 0, V_ = 0;
  std::vector<int32_t> tokens_;
  std::vector<SequenceImage> images_;
};

TEST_F(VulkanImageTest, AnImagePromptMatchesTheCpuWithinRounding) {
  ModelState on_cpu = cpu_->new_state(KvType::kF32), on_gpu = gpu_->new_state(KvType::kF32);
  std::vector<float> a = feed(*cpu_, on_cpu, 0, tokens_.size());
  std::vector<float> b = feed(*gpu_, on_gpu, 0, tokens_.size());
  EXPECT_EQ(on_gpu.rope_delta, on_cpu.rope_delta);
  EXPECT_EQ(on_gpu.rope_delta, -3);  // six rows at three positions
  for (int step = 0; step < 6; ++step) {
    EXPECT_LT(testing::relative_error(b, a), 2e-4) << "step " << step;
    int32_t next = argmax(a);
    const ForwardOptions generated{DeltaRuleForm::kAuto, RowKind::kGenerated};
    cpu_->forward(std::span(&next, 1), on_cpu, a.data(), generated);
    gpu_->forward(std::span(&next, 1), on_gpu, b.data(), generated);
  }
  // Without the image's rows and positions the logits are not these: the test can fail.
  ModelState text_only = gpu_->new_state(KvType::kF32), imaged = gpu_->new_state(KvType::kF32);
  std::vector<float> plain(static_cast<size_t>(V_));
  gpu_->forward(tokens_, text_only, plain.data());
  EXPECT_FALSE(same_bits(plain, feed(*gpu_, imaged, 0, tokens_.size())));
}

TEST_F(VulkanImageTest, SplitsThroughTheImageAndBatchesGiveIdenticalBits) {
  ModelState whole = gpu_->new_state(KvType::kF32);
  const std::vector<float> expected = feed(*gpu_, whole, 0, tokens_.size());
  const std::vector<uint8_t> expected_state = device_state_bytes(*gpu_, whole);
  for (const std::vector<size_t>& cuts : std::vector<std::vector<size_t>>{
           {3, 7}, {5, 11}, {6, 8, 10}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14}}) {
    ModelState pieces = gpu_->new_state(KvType::kF32);
    std::vector<float> got;
    size_t begin = 0;
    for (size_t cut : cuts) {
      got = feed(*gpu_, pieces, begin, cut);
      begin = cut;
    }
    got = feed(*gpu_, pieces, begin, tokens_.size());
    EXPECT_TRUE(same_bits(got, expected)) << cuts.size() << " cuts";
    EXPECT_EQ(pieces.rope_delta, whole.rope_delta);
    EXPECT_EQ(device_state_bytes(*gpu_, pieces), expected_state);
  }
  // Batched with a text sequence and a generated row of a third: the same bits.
  ModelState imaged = gpu_->new_state(KvType::kF32), text = gpu_->new_state(KvType::kF32);
  ModelState decoding = gpu_->new_state(KvType::kF32);
  std::vector<float> scratch(static_cast<size_t>(V_)), image_logits(static_cast<size_t>(V_)),
      text_logits(static_cast<size_t>(V_));
  gpu_->forward(std::span(tokens_).first(4), decoding, scratch.data());
  const std::vector<int32_t> text_tokens = {7, 8, 9};
  const int32_t next = 11;
  std::vector<BatchSegment> segments(3);
  segments[0].tokens = text_tokens;
  segments[0].state = &text;
  segments[0].logits = text_logits.data();
  segments[1].tokens = tokens_;
  segments[1].state = &imaged;
  segments[1].images = images_;
  segments[1].logits = image_logits.data();
  segments[2].tokens = std::span(&next, 1);
  segments[2].state = &decoding;
  segments[2].kind = RowKind::kGenerated;
  segments[2].logits = scratch.data();
  gpu_->forward_batch(segments);
  EXPECT_TRUE(same_bits(image_logits, expected));
  EXPECT_EQ(imaged.rope_delta, whole.rope_delta);
  EXPECT_EQ(device_state_bytes(*gpu_, imaged), expected_state);
  EXPECT_EQ(text.rope_delta, 0);
}

TEST_F(VulkanImageTest, TheMtpHeadTakesImageRowsAndMatchesTheCpu) {
  ASSERT_TRUE(gpu_->has_mtp());
  const size_t T = tokens_.size() - 1;  // MTP rows pair hidden p with token p + 1
  std::vector<float> hidden(tokens_.size() * size_t(H_));
  ModelState main = gpu_->new_state(KvType::kF32);
  feed(*gpu_, main, 0, tokens_.size(), hidden.data());
  const std::span<const int32_t> next = std::span(tokens_).subspan(1);
  const std::span<const float> rows = std::span(hidden).first(T * size_t(H_));

  ModelState on_cpu = cpu_->new_mtp_state(KvType::kF32), once = gpu_->new_mtp_state(KvType::kF32);
  std::vector<float> expected(static_cast<size_t>(V_)), cpu_logits(static_cast<size_t>(V_));
  cpu_->mtp_forward(rows, next, on_cpu, cpu_logits.data(), RowKind::kPrompt, nullptr, images_);
  gpu_->mtp_forward(rows, next, once, expected.data(), RowKind::kPrompt, nullptr, images_);
  EXPECT_LT(testing::relative_error(expected, cpu_logits), 2e-4);
  EXPECT_EQ(once.rope_delta, main.rope_delta);

  ModelState pieces = gpu_->new_mtp_state(KvType::kF32);
  std::vector<float> got(static_cast<size_t>(V_));
  for (auto [begin, end] : {std::pair<size_t, size_t>{0, 4}, {4, 8}, {8, 10}, {10, T}})
    gpu_->mtp_forward(std::span(hidden).subspan(begin * H_, (end - begin) * H_),
                      next.subspan(begin, end - begin), pieces, got.data(), RowKind::kPrompt,
                      nullptr, images_);
  EXPECT_TRUE(same_bits(got, expected));
}

TEST_F(VulkanImageTest, WrongEmbeddingsAreRefusedBeforeTheStateChanges) {
  std::vector<SequenceImage> wrong = images_;
  wrong[0].embeddings = std::make_shared<std::vector<float>>(size_t(5 * H_), 0.5f);
  ModelState state = gpu_->new_state(KvType::kF32);
  std::vector<float> logits(static_cast<size_t>(V_));
  ForwardOptions o;
  o.images = wrong;
  EXPECT_THROW(gpu_->forward(tokens_, state, logits.data(), o), Error);
  EXPECT_EQ(state.position, 0);
  EXPECT_EQ(state.rope_delta, 0);
  // And the state still works: the right image now gives the expected logits.
  ModelState fresh = gpu_->new_state(KvType::kF32);
  EXPECT_TRUE(
      same_bits(feed(*gpu_, state, 0, tokens_.size()), feed(*gpu_, fresh, 0, tokens_.size())));
}

// Adds `feature` to $QMLX_VULKAN_MASK_FEATURES (backend/vulkan/context.h) while it lives.
class ScopedFeatureMask {
 public:
  explicit ScopedFeatureMask(const std::string& feature) {
    const char* previous = std::getenv("QMLX_VULKAN_MASK_FEATURES");
    if (previous) previous_ = previous;
    const std::string masked = previous_ ? *previous_ + "," + feature : feature;
    setenv("QMLX_VULKAN_MASK_FEATURES", masked.c_str(), 1);
  }
  ~ScopedFeatureMask() {
    if (previous_)
      setenv("QMLX_VULKAN_MASK_FEATURES", previous_->c_str(), 1);
    else
      unsetenv("QMLX_VULKAN_MASK_FEATURES");
  }
  ScopedFeatureMask(const ScopedFeatureMask&) = delete;
  ScopedFeatureMask& operator=(const ScopedFeatureMask&) = delete;

 private:
  std::optional<std::string> previous_;
};

// The same bound where the device's memory is not the host's (a discrete GPU): inputs and
// read-backs go through staging buffers, recorded into the step's one submission, and reused.
TEST(VulkanForwardMixTest, ADecodeStepThroughStagingIsOneSubmission) {
  const std::string skip = vulkan_skip_reason();
  if (!skip.empty()) GTEST_SKIP() << skip;
  const std::string dir = testing::make_temp_dir("vulkan_staging");
  modelgen::ModelOptions o;
  o.arch = Arch::kQwen35Moe;
  o.shape = modelgen::default_shape(o.arch);
  modelgen::write_random_model(o, dir + "/m");
  std::shared_ptr<const Model> staged;
  {
    const ScopedFeatureMask mask("unified-memory");
    staged = load_on_device(dir + "/m");
  }
  expect_one_submission_per_step(*staged, KvType::kBF16);
  // And the staged path computes what the in-place one does.
  auto in_place = load_on_device(dir + "/m");
  const std::vector<int32_t> prompt = {3, 1, 4, 1, 5, 9, 2, 6};
  std::vector<float> a(size_t(staged->config().vocab_size)), b(a.size());
  ModelState sa = staged->new_state(KvType::kBF16), sb = in_place->new_state(KvType::kBF16);
  staged->forward(prompt, sa, a.data());
  in_place->forward(prompt, sb, b.data());
  EXPECT_TRUE(same_bits(a, b));
  std::filesystem::remove_all(dir);
  expect_no_validation_findings();
}

}  // namespace
}  // namespace qmlx
