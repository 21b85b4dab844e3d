// Model: one loaded checkpoint (config, memory-mapped tensors, canonical weight views) and its
// forward pass. Loaded once and shared: forward() only reads the model, so any number of
// sequences (each with its own ModelState) may use it, one call per state at a time.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>

#include "model/config.h"
#include "model/device_forward.h"
#include "model/layers.h"
#include "model/model_state.h"
#include "model/row_kind.h"
#include "model/safetensors.h"
#include "model/sequence_image.h"
#include "model/vision_encoder.h"
#include "model/weights.h"

namespace qmlx {

class GgufFile;

// Told how far Model::load has got reading the weights in: bytes read of the total. It is
// called with 0 first, never with less than before, and last with the total.
using LoadProgress = std::function<void(uint64_t bytes_done, uint64_t bytes_total)>;

// Where the forward pass runs: "cpu" (the kernels on the CPU cores) or a device
// ("vulkan", "vulkan:N"; model/device_forward.h).
struct ModelLoadOptions {
  std::string device = "cpu";
  // A llama.cpp mmproj GGUF file holding the vision tower (mmproj_weights.h); it replaces a
  // tower the checkpoint has. A file that is not GGUF fails the load; a tower in it that does
  // not fit the model is dropped with a warning, as an optional part is.
  std::string mmproj;
  // On a device: the routed experts of layers [0, cpu_moe_layers) stay in host memory and run
  // on the CPU (--cpu-moe sets kAllLayers, --n-cpu-moe N sets N). No effect on the CPU.
  static constexpr int kAllLayers = INT32_MAX;
  int cpu_moe_layers = 0;
  // Where a model on a device runs its vision tower (--mmproj-offload, llama.cpp's name): kAuto
  // on the device, unless the device is the CPU's own cores (lavapipe), where its kernels run
  // the tower about a hundred times slower than the CPU encoder does (docs/vision.md); kOn on
  // the device whatever it is; kOff on the CPU. No effect on the CPU.
  enum class TowerOffload { kAuto, kOn, kOff };
  TowerOffload vision_offload = TowerOffload::kAuto;
};

struct ForwardOptions {
  DeltaRuleForm delta_rule = DeltaRuleForm::kAuto;
  // The kind of every row of a Model::forward call.
  RowKind rows = RowKind::kPrompt;
  // When set, receives the final-normed hidden state of every fed token ([T][H]): the rows the
  // LM head reads, and the main-model input of the MTP head (mtp_forward).
  float* final_hidden = nullptr;
  // The sequence's images, with absolute rows (model/sequence_image.h): a row inside one is fed
  // its embedding row instead of the token's (the token must still be a vocabulary id, the
  // image pad) and takes the image's M-RoPE position. Images outside the call's rows may be
  // there (their embeddings are not read).
  std::span<const SequenceImage> images = {};
};

// One sequence's part of a batched forward.
struct BatchSegment {
  std::span<const int32_t> tokens;  // fed at positions [state->position, + size)
  ModelState* state = nullptr;      // distinct per segment
  RowKind kind = RowKind::kPrompt;
  float* logits = nullptr;        // vocab_size floats: logits after the last token, or null
  float* all_logits = nullptr;    // optional [T][vocab]: logits after every token (MTP verify)
  float* final_hidden = nullptr;  // optional [T][H]: final-normed hidden rows (MTP input)
  std::span<const SequenceImage> images = {};  // as ForwardOptions::images
};

class Model {
 public:
  // Reads <dir>/config.json and the safetensors files, or one llama.cpp-style .gguf file when
  // `dir` ends in ".gguf"; throws qmlx::Error naming the file and tensor on anything wrong.
  // The tensors are then read into memory (the page cache behind the mapping), so loading,
  // not the first request, pays for the disk; `progress` hears about that part, which is
  // nearly all of the time on a real model.
  // With a device in `options`, every weight is then uploaded to it (progress counts those
  // bytes) and the forward pass and sequence states live there.
  static std::shared_ptr<const Model> load(const std::string& dir,
                                           const LoadProgress& progress = {},
                                           const ModelLoadOptions& options = {});

  const ModelConfig& config() const { return config_; }
  const ModelWeights& weights() const { return weights_; }
  const std::string& directory() const { return directory_; }
  // The <|image_pad|> token id of the config (image_token_id), -1 when it has none.
  int32_t image_pad_id() const { return config_.image_token_id; }
  // The device the forward pass runs on, null on the CPU.
  const DeviceForward* device() const { return device_.get(); }
  // "cpu", or the device's description (DeviceForward::description): for logs and the cache
  // fingerprint.
  std::string backend_description() const;

  // An empty state (position 0) with K/V rows stored as kv_type.
  ModelState new_state(KvType kv_type) const;
  // An independent copy of `state` (a plain copy shares a device state; this one does not).
  ModelState clone_state(const ModelState& state) const;

  // Feeds tokens at positions [state.position, state.position + T): appends their K/V rows,
  // advances the recurrent state and the position, and writes the logits after the last token
  // (vocab_size floats). Token ids outside the vocabulary throw qmlx::Error.
  void forward(std::span<const int32_t> tokens, ModelState& state, float* last_logits,
               const ForwardOptions& options = {}) const;

  // Feeds every segment in one pass over the weights: each weight matrix is read once for all
  // rows. Each segment's logits, hidden rows and state are bit for bit those of forward() over
  // it alone (with its kind), whatever else shares the batch. Uses options.delta_rule (the row
  // kinds and hidden rows come from the segments). Throws qmlx::Error, before any state
  // changes, on a token outside the vocabulary, a missing or shared state, or a state that is
  // not one of this model's (an MTP state).
  void forward_batch(std::span<const BatchSegment> segments,
                     const ForwardOptions& options = {}) const;

  // A sequence's K/V rows [begin, end) of attention layer `a` (state.kv_row_bytes each) and the
  // conv and SSM state of recurrent layer `r`, copied out of or into the state wherever it
  // lives (host memory, or the device's). The caller checks the ranges; writes make room.
  void read_kv_rows(const ModelState& state, int a, int64_t begin, int64_t end, uint8_t* k,
                    uint8_t* v) const;
  void write_kv_rows(ModelState& state, int a, int64_t begin, int64_t end, const uint8_t* k,
                     const uint8_t* v) const;
  void read_recurrent(const ModelState& state, int r, float* conv, float* ssm) const;
  void write_recurrent(ModelState& state, int r, const float* conv, const float* ssm) const;
  // Speculative decoding's rollback on a device state (DeviceForward::restore_recurrent_row):
  // the recurrent states after row `row` of the last forward call that kept them (its state's
  // RecurrentState::history set) become the live ones, or recurrent layer `r`'s is copied out.
  // A host state keeps them in the histories its caller owns, so these throw qmlx::Error for
  // one, as for a row that call did not keep.
  void restore_recurrent_row(ModelState& state, int row) const;
  void read_recurrent_row(const ModelState& state, int r, int row, float* conv, float* ssm) const;

  // Multi-token prediction (the checkpoint's `mtp.*` head; model-spec and mtp_head.cpp), on the
  // CPU or the model's device (where a head the device cannot run is unavailable, and
  // mtp_unavailable_reason says why).
  bool has_mtp() const { return weights_.mtp.has_value() && (!device_ || device_->has_mtp()); }
  // True when the checkpoint has part of an MTP head that was dropped at load, incomplete or
  // malformed (optional_parts.h): asking for multi-token prediction then is an error, not a
  // quiet fallback.
  bool mtp_dropped() const { return !weights_.mtp_dropped.empty(); }
  // Why has_mtp() is false, for messages: "the model has no MTP head", or "the model's MTP head
  // is incomplete (missing mtp.norm.weight) and was not loaded". Empty when it has one.
  std::string mtp_unavailable_reason() const;
  // An empty MTP state: the K/V rows of the head's one attention layer (kv[0]) and its position.
  // Its positions are those of the main model: row p pairs hidden state p with token p + 1.
  ModelState new_mtp_state(KvType kv_type) const;
  // Feeds T rows at MTP positions [state.position, state.position + T): row t pairs the main
  // model's final hidden state at that position (`hidden`, [T][H], from
  // ForwardOptions::final_hidden) with the embedding of the token that follows it
  // (`next_tokens`[t]). Appends the rows' K/V, advances the position and writes the logits
  // after the last row (vocab_size floats): the distribution of the token after next_tokens[T-1].
  // The caller rolls back rejected rows by lowering state.position. The rows are generated rows
  // (drafting) unless `rows` says otherwise. `last_hidden`, when set, receives the head's
  // final-normed output of the last row ([H]): the hidden input of a further draft row. Throws
  // qmlx::Error when the model has no MTP head or a token is outside the vocabulary.
  // `images` are the sequence's (as ForwardOptions::images): row p takes the main model's
  // M-RoPE position of row p (the state's rope_delta follows the images as the main state's
  // does), and a next token inside an image is fed that image's embedding row.
  void mtp_forward(std::span<const float> hidden, std::span<const int32_t> next_tokens,
                   ModelState& state, float* last_logits, RowKind rows = RowKind::kGenerated,
                   float* last_hidden = nullptr, std::span<const SequenceImage> images = {}) const;

  // The vision tower (Qwen3.5 checkpoints that carry a whole one; vision_encoder.h). It runs
  // on the model's device when the model has one and the tower fits there beside the weights
  // (model/vulkan/vision_forward.h; otherwise, and for an image larger than the device's
  // bindings allow, on the CPU, with a log line saying why).
  bool has_vision() const { return weights_.vision.has_value(); }
  // Why has_vision() is false, for messages ("the model has no vision tower", or "the model's
  // vision tower is incomplete (missing ...) and was not loaded"). Empty when it has one.
  std::string vision_unavailable_reason() const;
  // One image's embeddings for the language model: [grid.patches() / 4][hidden_size] from its
  // pixel_values rows. Throws qmlx::Error when the model has no vision tower or the input does
  // not fit the grid.
  std::vector<float> encode_image(std::span<const float> pixel_values, const PatchGrid& grid) const;

 private:
  Model() = default;
  // Position 0, no layers yet; K/V rows of kv_type.
  ModelState state_without_layers(KvType kv_type) const;
  // Throws qmlx::Error for an id outside the vocabulary.
  void check_token(int32_t id) const;
  void embed(std::span<const int32_t> tokens, float* out) const;
  // embed(), then the rows [first_row, + tokens.size()) that lie in `images` replaced by their
  // embedding rows. Throws qmlx::Error (a token, or an image whose embeddings do not fit).
  void embed_rows(std::span<const int32_t> tokens, int64_t first_row,
                  std::span<const SequenceImage> images, float* out) const;
  // Throws qmlx::Error unless every segment has a state of this model, none shared.
  void check_batch(std::span<const BatchSegment> segments) const;
  // Loads the vision tower of ModelLoadOptions::mmproj in place of the checkpoint's.
  void attach_mmproj(const std::string& path);
  // The vision tower, when the model has one, onto the model's device, if it has one and
  // `offload` puts it there: a tower the device cannot take stays on the CPU with one warning
  // (the load never fails for it).
  void upload_vision_tower(ModelLoadOptions::TowerOffload offload);

  std::string directory_;
  ModelConfig config_;
  std::unique_ptr<TensorStore> store_;
  std::shared_ptr<const GgufFile> gguf_;    // the mapping GGUF weights point into
  std::shared_ptr<const GgufFile> mmproj_;  // the mapping an mmproj tower points into
  ModelWeights weights_;
  std::unique_ptr<DeviceForward> device_;
};

}  // namespace qmlx
