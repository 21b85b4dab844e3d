// Session: one sequence being run through a shared Model. At position n it holds the K/V rows
// of every full-attention layer, the conv and SSM state of every Gated DeltaNet layer, and the
// logits after token n-1. It is the engine side of the cache seam: it implements StateSource
// (the cache reads what it lacks) and StateSink (the cache installs a restored state), and can
// export/import a whole SessionState. Not thread-safe; one Session per request.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "engine/session_state.h"
#include "model/model.h"

namespace qmlx {

class BatchEngine;

// The default prefill chunks (see SessionOptions::prefill_chunk).
constexpr int kMoePrefillChunk = 1024;
constexpr int kDensePrefillChunk = 512;

struct SessionOptions {
  DType kv_dtype = DType::kBF16;
  // Tokens per forward call during prefill; 0: the model's default, 1,024 for MoE models and
  // 512 otherwise. With 1,024 an MoE expert sees ~32 of a chunk's tokens instead of ~16, so its
  // weights are dequantized half as often per token (35B-A3B shape, 2,048-token prompt:
  // 246-272 -> 299-301 tok/s); dense models gain 3-8% but their activations would outgrow the
  // 10% memory headroom of a small 4-bit model (0.8B shape: peak RSS 665 -> 710 MB).
  int prefill_chunk = 0;
  DeltaRuleForm delta_rule = DeltaRuleForm::kAuto;
  // When set, prefill and decode run through this shared step loop, batched with the other
  // sequences that use it (engine/batch_engine.h); its own step budget replaces prefill_chunk.
  std::shared_ptr<BatchEngine> engine;
};

// Tokens per prefill forward for `model`: `requested`, or the default above when it is 0.
int prefill_chunk_for(const Model& model, int requested);

// Called after each prefill chunk with (tokens done, total).
using PrefillProgress = std::function<void(int64_t done, int64_t total)>;
// Called after each prefill chunk with its tokens and their final hidden rows ([n][H]).
using PrefillHidden =
    std::function<void(std::span<const int32_t> tokens, std::span<const float> hidden)>;

// How Session::keep_verified returns the recurrent layers to an earlier row of a verify call.
enum class RollbackMethod {
  kKeepStates,  // the verify call keeps every layer's state after each row; copy one back
  kRecompute,   // the verify call snapshots the states; restore them and feed the kept rows again
};

class Session : public StateSource, public StateSink {
 public:
  explicit Session(std::shared_ptr<const Model> model, SessionOptions options = {});

  // Feeds tokens (prompt rows) in chunks. Returns false when *cancel became true between chunks;
  // the Session is then consistent at the last finished chunk.
  bool prefill(std::span<const int32_t> tokens, const PrefillProgress& progress = {},
               const std::atomic<bool>* cancel = nullptr, const PrefillHidden& hidden = {});
  // Feeds one generated row (a decode step).
  void decode(int32_t token);

  // Speculative decoding (engine/speculative.h). verify feeds `tokens` as generated rows in one
  // forward call and writes every row's logits ([T][vocab]) and final hidden rows ([T][H]);
  // logits() becomes the last row's. keep_verified(rows, method) then keeps only the first
  // `rows` (1..T) of them, exactly as if only those had been fed: the position drops, the K/V
  // rows past it are dropped with it, and every recurrent layer returns to its state after row
  // rows - 1. `method` must be the one verify was called with.
  void verify(std::span<const int32_t> tokens, float* all_logits, float* final_hidden,
              RollbackMethod method = RollbackMethod::kKeepStates);
  void keep_verified(int rows, RollbackMethod method = RollbackMethod::kKeepStates);
  // Copies out recurrent layer r's conv and SSM state after row `row` of the last verify call
  // (kKeepStates), in read_recurrent's layouts, for a view of the state at an earlier row. On a
  // device state it is a download.
  void read_verified_recurrent(int r, int row, float* conv_out, float* ssm_out) const;
  // Counts reset() calls (restores, imports): a caller that keeps something in step with the
  // state (the MTP head's rows) learns from a change that the state was replaced.
  uint64_t resets() const { return resets_; }

  // Drops positions [m, n). Only for models without recurrent layers (throws otherwise). The
  // logits of position m-1 are not known afterwards: logits() is empty until a token is fed.
  void truncate(int64_t m);

  SessionState export_state() const;
  void import_state(const SessionState& state);

  const Model& model() const { return *model_; }

  // The images of the sequence (model/sequence_image.h, rows from 0): prefill feeds their rows
  // at their pads, which may arrive as image pad keys (engine/image_pad_keys.h), and a restore
  // (reset) continues their M-RoPE positions. Set before the rows they cover are fed; rows
  // already in must have been fed with the same images before them.
  void set_images(std::vector<SequenceImage> images);
  std::span<const SequenceImage> images() const { return images_; }

  // StateSource
  const StateLayout& layout() const override { return layout_; }
  int64_t position() const override { return state_.position; }
  void read_kv_rows(int a, int64_t begin, int64_t end, uint8_t* k_out,
                    uint8_t* v_out) const override;
  void read_recurrent(int r, float* conv_out, float* ssm_out) const override;
  std::span<const float> logits() const override { return logits_; }

  // StateSink
  void reset(int64_t position) override;
  void write_kv_rows(int a, int64_t begin, int64_t end, const uint8_t* k,
                     const uint8_t* v) override;
  void write_recurrent(int r, const float* conv, const float* ssm) override;
  void set_logits(std::span<const float> logits) override;

 private:
  friend class BatchEngine;  // runs this session's rows inside its steps

  void check_kv_range(int a, int64_t begin, int64_t end) const;

  std::shared_ptr<const Model> model_;
  SessionOptions options_;
  StateLayout layout_;
  ModelState state_;
  std::vector<float> logits_;
  std::vector<SequenceImage> images_;
  uint64_t resets_ = 0;
  // The last verify call: its tokens, every row's logits, and the recurrent states it kept (one
  // history per layer, kKeepStates) or started from (kRecompute).
  std::vector<int32_t> verified_tokens_;
  std::vector<float> verified_logits_;
  std::vector<RecurrentHistory> verified_states_;
  std::vector<RecurrentState> verify_start_;
};

// The layout of every Session of `model` with K/V rows stored as kv_dtype.
StateLayout state_layout_of(const Model& model, DType kv_dtype);

}  // namespace qmlx
