// Batch and split invariance of the forward pass (issue 18): a sequence's logits, hidden rows
// and state are bit-identical whether its rows run alone or in a ragged batch beside other
// sequences at any stage, however its prompt is split into calls, and whether its generated
// rows are fed one by one or as one segment of k rows. Every architecture, MLX 4/8-bit and
// GGUF weights, f32 / bf16 / int8 K/V rows.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <random>

#include "base/error.h"
#include "model/model.h"
#include "modelgen/gguf_model_writer.h"
#include "modelgen/model_writer.h"
#include "tiny_model.h"

namespace qmlx {
namespace {

using modelgen::Arch;

struct Variant {
  std::string name;
  Arch arch;
  int mlx_bits;      // 0: GGUF
  std::string gguf;  // GGUF recipe when mlx_bits is 0
  KvType kv;
};

std::ostream& operator<<(std::ostream& out, const Variant& v) { return out << v.name; }

const Variant kVariants[] = {
    {"qwen3_5_mlx4_f32", Arch::kQwen35, 4, "", KvType::kF32},
    {"qwen3_5_moe_mlx8_bf16", Arch::kQwen35Moe, 8, "", KvType::kBF16},
    {"qwen3_next_mlx4_int8", Arch::kQwen3Next, 4, "", KvType::kInt8},
    {"qwen3_mlx8_int8", Arch::kQwen3, 8, "", KvType::kInt8},
    {"qwen3_5_moe_gguf_q8_0_f32", Arch::kQwen35Moe, 0, "q8_0", KvType::kF32},
    {"qwen3_5_gguf_q8_0_bf16", Arch::kQwen35, 0, "q8_0", KvType::kBF16},
};

// One sequence's outputs of one forward call.
struct Outputs {
  std::vector<float> logits, all_logits, final_hidden;
};

void expect_same_bits(const std::vector<float>& a, const std::vector<float>& b,
                      const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  if (std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0) return;
  size_t i = 0;
  while (std::memcmp(&a[i], &b[i], sizeof(float)) == 0) ++i;
  ADD_FAILURE() << what << ": value " << i << " of " << a.size() << " is " << a[i] << ", not "
                << b[i];
}

void expect_same_state(const ModelState& a, const ModelState& b, const std::string& what) {
  ASSERT_EQ(a.position, b.position) << what;
  const size_t bytes = size_t(a.position) * a.kv_row_bytes;
  for (size_t l = 0; l < a.kv.size(); ++l) {
    EXPECT_EQ(std::memcmp(a.kv[l].k.data(), b.kv[l].k.data(), bytes), 0) << what << " K " << l;
    EXPECT_EQ(std::memcmp(a.kv[l].v.data(), b.kv[l].v.data(), bytes), 0) << what << " V " << l;
  }
  for (size_t r = 0; r < a.recurrent.size(); ++r) {
    expect_same_bits(a.recurrent[r].conv, b.recurrent[r].conv, what + " conv");
    expect_same_bits(a.recurrent[r].ssm, b.recurrent[r].ssm, what + " ssm");
  }
}

class BatchInvarianceTest : public ::testing::TestWithParam<Variant> {
 protected:
  static void SetUpTestSuite() { dir_ = testing::make_temp_dir("batch"); }
  static void TearDownTestSuite() { std::filesystem::remove_all(dir_); }

  void SetUp() override {
    const Variant& v = GetParam();
    modelgen::ModelOptions o;
    o.arch = v.arch;
    o.shape = modelgen::default_shape(v.arch);
    o.shape.mtp = v.arch != Arch::kQwen3;  // for the MTP-state case below
    o.seed = 7;
    std::string path = dir_ + "/" + v.name;
    if (!v.mlx_bits) path += ".gguf";
    if (!std::filesystem::exists(path)) {  // written once per suite
      if (v.mlx_bits) {
        o.layout = modelgen::Layout::kMLX;
        o.quantization = modelgen::QuantParams{v.mlx_bits, 32};
        modelgen::write_random_model(o, path);
      } else {
        modelgen::write_random_gguf_model(o, modelgen::parse_gguf_recipe(v.gguf), path);
      }
    }
    model_ = Model::load(path);
    H_ = model_->config().hidden_size;
    V_ = model_->config().vocab_size;
  }

  std::vector<int32_t> random_tokens(size_t n) {
    std::vector<int32_t> t(n);
    for (auto& x : t) x = int32_t(rng_() % uint64_t(V_));
    return t;
  }
  int uniform(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  ModelState new_state() const { return model_->new_state(GetParam().kv); }

  // A segment of `tokens` into `state` whose outputs land in `out` (all of them requested).
  BatchSegment segment(std::span<const int32_t> tokens, ModelState& state, RowKind kind,
                       Outputs& out) const {
    out.logits.assign(V_, 0.f);
    out.all_logits.assign(tokens.size() * V_, 0.f);
    out.final_hidden.assign(tokens.size() * H_, 0.f);
    return {
        tokens, &state, kind, out.logits.data(), out.all_logits.data(), out.final_hidden.data()};
  }

  // Feeds `tokens` as prompt rows in random pieces (some of one token) through forward().
  void prefill_in_pieces(std::span<const int32_t> tokens, ModelState& state, float* logits) {
    for (size_t done = 0; done < tokens.size();) {
      size_t n = std::min(tokens.size() - done, size_t(rng_() % 3 == 0 ? 1 : uniform(1, 24)));
      model_->forward(tokens.subspan(done, n), state, logits);
      done += n;
    }
  }

  static std::string dir_;
  std::shared_ptr<const Model> model_;
  int H_ = 0, V_ = 0;
  std::mt19937_64 rng_{1234};
};
std::string BatchInvarianceTest::dir_;

// Random mixes of 1-8 sequences at random stages (fresh, part-prefilled, decoding), each feeding
// a prompt chunk of random size or 1-4 generated rows, in a random segment order: every output
// and the state after it are those of the same segment run alone.
TEST_P(BatchInvarianceTest, BatchOfSequencesAtRandomStagesMatchesEachAlone) {
  std::vector<float> scratch_logits(V_);
  for (int trial = 0; trial < 12; ++trial) {
    const int n = uniform(1, 8);
    std::vector<ModelState> batched, alone;
    std::vector<std::vector<int32_t>> fed(n);
    std::vector<RowKind> kinds(n);
    for (int i = 0; i < n; ++i) {
      ModelState s = new_state();
      prefill_in_pieces(random_tokens(uniform(0, 40)), s, scratch_logits.data());
      for (int d = uniform(0, 3); d > 0 && s.position > 0; --d) {
        int32_t token = random_tokens(1)[0];
        model_->forward(std::span(&token, 1), s, scratch_logits.data(),
                        {DeltaRuleForm::kAuto, RowKind::kGenerated});
      }
      kinds[i] = rng_() % 2 ? RowKind::kPrompt : RowKind::kGenerated;
      fed[i] = random_tokens(kinds[i] == RowKind::kPrompt ? uniform(1, 20) : uniform(1, 4));
      alone.push_back(s);
      batched.push_back(std::move(s));
    }
    std::vector<Outputs> batch_out(n), alone_out(n);
    std::vector<BatchSegment> segments;
    for (int i = 0; i < n; ++i)
      segments.push_back(segment(fed[i], batched[i], kinds[i], batch_out[i]));
    std::shuffle(segments.begin(), segments.end(), rng_);
    model_->forward_batch(segments);
    for (int i = 0; i < n; ++i) {
      BatchSegment one = segment(fed[i], alone[i], kinds[i], alone_out[i]);
      model_->forward_batch(std::span(&one, 1));
      const std::string what = "trial " + std::to_string(trial) + " sequence " + std::to_string(i) +
                               " of " + std::to_string(n) +
                               (kinds[i] == RowKind::kPrompt ? " prompt " : " generated ") +
                               std::to_string(fed[i].size()) + " rows";
      expect_same_bits(batch_out[i].logits, alone_out[i].logits, what + " logits");
      expect_same_bits(batch_out[i].all_logits, alone_out[i].all_logits, what + " all_logits");
      expect_same_bits(batch_out[i].final_hidden, alone_out[i].final_hidden, what + " hidden");
      expect_same_state(batched[i], alone[i], what);
    }
  }
}

// A scheduler's life: sequences arrive with prompts, are prefilled in random chunks beside each
// other's chunks and decode steps, then decode together; each one's logits after its prompt and
// after every decode step, and its final state, equal those of the same request run alone with
// one whole prefill and one decode call per token.
TEST_P(BatchInvarianceTest, InterleavedChunksAndDecodesMatchWholeRunsAlone) {
  struct Request {
    std::vector<int32_t> prompt, generated;  // generated: the tokens fed after the prompt
    ModelState state;
    size_t prompt_done = 0, generated_done = 0;
    std::vector<std::vector<float>> logits;  // after the prompt, then after each fed token
  };
  for (int trial = 0; trial < 4; ++trial) {
    std::vector<Request> requests(uniform(2, 6));
    for (Request& r : requests) {
      r.prompt = random_tokens(uniform(1, 60));
      r.generated = random_tokens(uniform(1, 6));
      r.state = new_state();
    }
    for (bool busy = true; busy;) {
      // One engine step: each unfinished request takes part with a random chance.
      std::vector<BatchSegment> step;
      std::vector<Request*> members;
      std::vector<std::vector<float>> logits;
      logits.reserve(requests.size());
      busy = false;
      for (Request& r : requests) {
        const bool prefilling = r.prompt_done < r.prompt.size();
        if (!prefilling && r.generated_done == r.generated.size()) continue;
        busy = true;
        if (rng_() % 4 == 0) continue;
        BatchSegment s;
        s.state = &r.state;
        if (prefilling) {
          size_t n = std::min(r.prompt.size() - r.prompt_done, size_t(uniform(1, 25)));
          s.tokens = std::span(r.prompt).subspan(r.prompt_done, n);
          r.prompt_done += n;
        } else {
          s.tokens = std::span(r.generated).subspan(r.generated_done++, 1);
          s.kind = RowKind::kGenerated;
        }
        const bool reports = !prefilling || r.prompt_done == r.prompt.size();
        logits.emplace_back(reports ? V_ : 0);
        s.logits = reports ? logits.back().data() : nullptr;
        step.push_back(s);
        members.push_back(&r);
      }
      model_->forward_batch(step);
      for (size_t i = 0; i < step.size(); ++i)
        if (step[i].logits) members[i]->logits.push_back(std::move(logits[i]));
    }
    for (size_t i = 0; i < requests.size(); ++i) {
      const Request& r = requests[i];
      const std::string what = "trial " + std::to_string(trial) + " request " + std::to_string(i);
      ModelState alone = new_state();
      std::vector<float> logits(V_);
      model_->forward(r.prompt, alone, logits.data());
      ASSERT_EQ(r.logits.size(), r.generated.size() + 1) << what;
      expect_same_bits(r.logits[0], logits, what + " after the prompt");
      for (size_t g = 0; g < r.generated.size(); ++g) {
        model_->forward(std::span(r.generated).subspan(g, 1), alone, logits.data(),
                        {DeltaRuleForm::kAuto, RowKind::kGenerated});
        expect_same_bits(r.logits[g + 1], logits, what + " after token " + std::to_string(g));
      }
      expect_same_state(r.state, alone, what);
    }
  }
}

// A prompt prefilled whole, in random pieces (1-token pieces included), and copied out at a
// random point then finished in another state (what a checkpoint and restore do): the same
// logits, hidden rows and state, bit for bit.
TEST_P(BatchInvarianceTest, PromptSplitAnywhereGivesTheWholePrefill) {
  for (int trial = 0; trial < 6; ++trial) {
    const std::vector<int32_t> prompt = random_tokens(uniform(2, 150));
    ModelState whole = new_state();
    std::vector<float> whole_logits(V_), whole_hidden(prompt.size() * H_);
    ForwardOptions o;
    o.final_hidden = whole_hidden.data();
    model_->forward(prompt, whole, whole_logits.data(), o);

    ModelState pieces = new_state();
    std::vector<float> logits(V_), hidden(prompt.size() * H_);
    for (size_t done = 0; done < prompt.size();) {
      size_t n = std::min(prompt.size() - done, size_t(rng_() % 3 == 0 ? 1 : uniform(1, 40)));
      o.final_hidden = hidden.data() + done * H_;
      model_->forward(std::span(prompt).subspan(done, n), pieces, logits.data(), o);
      done += n;
    }
    const std::string what = "trial " + std::to_string(trial);
    expect_same_bits(logits, whole_logits, what + " pieces: logits");
    expect_same_bits(hidden, whole_hidden, what + " pieces: hidden");
    expect_same_state(pieces, whole, what + " pieces");

    const size_t cut = size_t(uniform(1, int(prompt.size()) - 1));
    ModelState first = new_state();
    model_->forward(std::span(prompt).first(cut), first, logits.data());
    ModelState restored = first;  // a copy, as an export and import would make
    first = new_state();          // the original is gone
    model_->forward(std::span(prompt).subspan(cut), restored, logits.data());
    expect_same_bits(logits, whole_logits, what + " restored at " + std::to_string(cut));
    expect_same_state(restored, whole, what + " restored");
  }
}

// Decoding k tokens one by one and verifying them as one generated segment of k rows (what
// speculative decoding does) give the same logits after every row, hidden rows and state.
TEST_P(BatchInvarianceTest, GeneratedRowsAtOnceMatchOneByOne) {
  for (int trial = 0; trial < 6; ++trial) {
    ModelState one_by_one = new_state();
    std::vector<float> logits(V_);
    prefill_in_pieces(random_tokens(uniform(1, 50)), one_by_one, logits.data());
    ModelState at_once = one_by_one;
    const std::vector<int32_t> drafts = random_tokens(uniform(1, 8));

    Outputs batched;
    BatchSegment s = segment(drafts, at_once, RowKind::kGenerated, batched);
    model_->forward_batch(std::span(&s, 1));
    const std::string what = "trial " + std::to_string(trial);
    std::vector<float> hidden(H_);
    for (size_t t = 0; t < drafts.size(); ++t) {
      ForwardOptions o{DeltaRuleForm::kAuto, RowKind::kGenerated, hidden.data()};
      model_->forward(std::span(drafts).subspan(t, 1), one_by_one, logits.data(), o);
      const std::string row = what + " row " + std::to_string(t);
      expect_same_bits(std::vector<float>(batched.all_logits.begin() + t * V_,
                                          batched.all_logits.begin() + (t + 1) * V_),
                       logits, row + " logits");
      expect_same_bits(std::vector<float>(batched.final_hidden.begin() + t * H_,
                                          batched.final_hidden.begin() + (t + 1) * H_),
                       hidden, row + " hidden");
    }
    expect_same_bits(batched.logits, logits, what + " last logits");
    expect_same_state(at_once, one_by_one, what);
  }
}

// Bad batches are refused before any state changes.
TEST_P(BatchInvarianceTest, BadBatchesAreRefusedWithoutChangingAnyState) {
  ModelState a = new_state(), b = new_state();
  std::vector<float> logits(V_);
  const std::vector<int32_t> good = {1, 2, 3}, bad = {4, int32_t(V_)};
  auto refused = [&](std::vector<BatchSegment> segments, const std::string& what) {
    EXPECT_THROW(model_->forward_batch(segments), Error) << what;
    EXPECT_EQ(a.position, 0) << what;
    EXPECT_EQ(b.position, 0) << what;
  };
  refused({{good, &a, RowKind::kPrompt, logits.data()}, {bad, &b}}, "token outside vocabulary");
  refused({{good, &a}, {good, &a, RowKind::kGenerated}}, "shared state");
  refused({{good, &a}, {good, nullptr}}, "no state");
  if (model_->has_mtp()) {
    ModelState mtp = model_->new_mtp_state(GetParam().kv);
    refused({{good, &a}, {good, &mtp}}, "an MTP state");
  }
  ModelState not_this_models;
  refused({{good, &a}, {good, &not_this_models}}, "a state of no model");
  // Empty segments are skipped.
  model_->forward_batch(
      std::vector<BatchSegment>{{{}, &a}, {good, &b, RowKind::kPrompt, logits.data()}});
  EXPECT_EQ(a.position, 0);
  EXPECT_EQ(b.position, 3);
}

INSTANTIATE_TEST_SUITE_P(Models, BatchInvarianceTest, ::testing::ValuesIn(kVariants),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace qmlx
