// The decoder stack on a Vulkan device (model/device_forward.h): the forward pass of layers.h
// and model.cpp recorded from the backend's operations, one command buffer and one submission
// per call, whatever the number of sequences and layers; plus one submission per layer whose
// routed experts stay in host memory (--cpu-moe, --n-cpu-moe), see MoE below:
//
//   h = embed(ids)
//   per layer: h += Mixer(RMSNorm_in(h)); h += FFN(RMSNorm_post(h))
//     attention:  q, gate, k, v = projections; q, k normed per head and rotated; K/V rows stored
//                 at each sequence's positions; causal attention over its cache; o * sigmoid(gate)
//                 when gated; o_proj
//     DeltaNet:   qkv, z, b, a = projections; causal conv + SiLU over each sequence's conv
//                 state; q, k L2-normed; beta, g; the gated delta rule over its SSM state;
//                 gated RMSNorm with z; out_proj
//     MLP:        down(silu(gate x) * up x)
//     MoE:        router logits; softmax top k (renormalised when configured) on the device;
//                 each token's k experts' MLPs by expert id from those choices (no read-back:
//                 the whole step stays one submission); their weighted sum; plus the shared
//                 expert's MLP gated by sigmoid(shared_expert_gate x). A layer whose routed
//                 experts are in host memory submits what was recorded up to its route
//                 choices, reads back the normed rows and the expert ids, runs each route's
//                 expert MLP on the CPU (layers.h's routed_experts, the CPU model's own code
//                 and row-kind split, so a route's result does not depend on its batch), uploads
//                 the routes' outputs and records on from the weighted sum.
//   logits = head(RMSNorm_final(h)) for the rows someone reads
//
// The projections and norms run over all rows of the batch at once; what reads or advances a
// sequence's state (K/V store, attention, conv, delta rule) runs per sequence, on copies of its
// rows when the batch holds several. Every operation computes a row the same way whatever else
// shares the call, so a sequence's results do not depend on its batch or on how its prompt was
// split (tests/model/vulkan_forward_test.cpp).
#include <algorithm>
#include <cmath>
#include <mutex>

#include "backend/vulkan/attention.h"
#include "backend/vulkan/causal_conv.h"
#include "backend/vulkan/delta_gates.h"
#include "backend/vulkan/device_memory.h"
#include "backend/vulkan/elementwise.h"
#include "backend/vulkan/embedding.h"
#include "backend/vulkan/gated_delta.h"
#include "backend/vulkan/gather_heads.h"
#include "backend/vulkan/kv_store.h"
#include "backend/vulkan/l2_norm.h"
#include "backend/vulkan/matmul_by_expert.h"
#include "backend/vulkan/moe_combine.h"
#include "backend/vulkan/moe_router.h"
#include "backend/vulkan/rms_norm.h"
#include "backend/vulkan/rms_norm_gated.h"
#include "backend/vulkan/rope.h"
#include "base/error.h"
#include "base/human_bytes.h"
#include "model/layers.h"
#include "model/model.h"
#include "model/vulkan/device_weights.h"
#include "model/vulkan/row_inputs.h"
#include "model/vulkan/vision_forward.h"
#include "model/vulkan/vulkan_sequence.h"

namespace qmlx {
namespace vulkan {
namespace {

// Row positions the RoPE table covers at least, and grows by (doubling past it).
constexpr int64_t kMinRopePositions = 4096;

// One sequence's rows in the call.
struct Span {
  const BatchSegment* segment;
  VulkanSequence* sequence;
  int first = 0, count = 0;
  int64_t position = 0;
  bool keep_history = false;  // the recurrent states after each row too (a verify call)
};

// Whether a forward call keeps `state`'s recurrent states after each row: its layers' histories
// are set, as Session::verify sets them (DeviceForward::restore_recurrent_row).
bool keeps_history(const ModelState& state) {
  return !state.recurrent.empty() && state.recurrent.front().history != nullptr;
}

// The commands of one call, submitted in pieces where the host must act between two of them
// (a layer whose routed experts run on the CPU): a CommandRecorder submits once, so recording
// goes on in a new one after each piece.
class Recording {
 public:
  explicit Recording(Context& context)
      : context_(context), recorder_(std::make_unique<CommandRecorder>(context)) {}
  CommandRecorder& commands() { return *recorder_; }
  // Runs what was recorded so far and waits for it; recording continues after it.
  void submit_and_continue() {
    finish();
    recorder_ = std::make_unique<CommandRecorder>(context_);
  }
  void finish() { recorder_->submit_and_wait(); }

 private:
  Context& context_;
  std::unique_ptr<CommandRecorder> recorder_;
};

class VulkanForward final : public DeviceForward {
 public:
  VulkanForward(std::shared_ptr<Context> context, const ModelConfig& config, DeviceWeights weights)
      : context_(std::move(context)), c_(config), w_(std::move(weights)) {
    const DeviceInfo& info = context_->device_info();
    description_ = "vulkan:" + std::to_string(info.index) + " " + info.name + " (" +
                   info.driver_name + " " + info.driver_info + ", driver " +
                   std::to_string(info.driver_version) + ", fma " +
                   fma_mode_name(context_->fma_mode()) + ")";
    // Part of the cache fingerprint: the CPU's expert arithmetic is not the device's.
    if (w_.host_experts.layers > 0)
      description_ += ", routed experts of " + std::to_string(w_.host_experts.layers) + " of " +
                      std::to_string(w_.host_experts.moe_layers) + " MoE layers on the CPU";
    for (const DeviceLayer& l : w_.layers) (l.full_attention ? attention_layers_ : delta_layers_)++;
  }

  // The vision tower's arithmetic is part of it: its embeddings feed the image rows' K/V.
  std::string description() const override {
    return vision_ ? description_ + ", vision tower on the device" : description_;
  }
  size_t weight_bytes() const override { return w_.bytes + (vision_ ? vision_->bytes() : 0); }
  uint64_t memory_bytes() const override { return usable_device_memory(context_->device_info()); }
  HostExperts host_experts() const override { return w_.host_experts; }

  TransferCounts counts() const override {
    std::lock_guard lock(mutex_);
    return context_->counts();
  }

  std::shared_ptr<DeviceSequence> new_sequence(KvType kv_type) const override {
    std::lock_guard lock(mutex_);
    std::shared_ptr<VulkanSequence> s = allocate_sequence(kv_type);
    if (s->recurrent.empty()) return s;
    CommandRecorder recorder(*context_);
    for (VulkanSequence::Recurrent& state : s->recurrent) {
      recorder.fill_zero(state.conv, 0, conv_bytes());
      recorder.fill_zero(state.ssm, 0, ssm_bytes());
    }
    recorder.submit_and_wait();
    return s;
  }

  std::shared_ptr<DeviceSequence> clone_sequence(const DeviceSequence& from,
                                                 int64_t rows) const override {
    std::lock_guard lock(mutex_);
    const auto& source = static_cast<const VulkanSequence&>(from);
    // Every byte it keeps is copied from `from` below: no zeroing first.
    std::shared_ptr<VulkanSequence> copy = allocate_sequence(source.kv_type);
    std::vector<Buffer> retired;
    CommandRecorder recorder(*context_);
    copy->reserve(rows, 0, recorder, retired);
    const size_t bytes = size_t(rows) * source.row_bytes;
    for (size_t a = 0; a < source.kv.size() && bytes > 0; ++a) {
      recorder.copy(source.kv[a].k, 0, copy->kv[a].k, 0, bytes);
      recorder.copy(source.kv[a].v, 0, copy->kv[a].v, 0, bytes);
    }
    for (size_t r = 0; r < source.recurrent.size(); ++r) {
      recorder.copy(source.recurrent[r].conv, 0, copy->recurrent[r].conv, 0, conv_bytes());
      recorder.copy(source.recurrent[r].ssm, 0, copy->recurrent[r].ssm, 0, ssm_bytes());
    }
    recorder.submit_and_wait();
    return copy;
  }

  void forward(std::span<const BatchSegment* const> segments) const override;

  void read_kv_rows(const ModelState& state, int a, int64_t begin, int64_t end, uint8_t* k,
                    uint8_t* v) const override {
    std::lock_guard lock(mutex_);
    const VulkanSequence& s = sequence(state);
    const size_t offset = size_t(begin) * s.row_bytes, bytes = size_t(end - begin) * s.row_bytes;
    context_->download(s.kv.at(size_t(a)).k, offset, k, bytes);
    context_->download(s.kv.at(size_t(a)).v, offset, v, bytes);
  }

  void write_kv_rows(ModelState& state, int a, int64_t begin, int64_t end, const uint8_t* k,
                     const uint8_t* v) const override {
    std::lock_guard lock(mutex_);
    VulkanSequence& s = sequence(state);
    if (end > s.capacity) {
      std::vector<Buffer> retired;
      CommandRecorder recorder(*context_);
      s.reserve(end, state.position, recorder, retired);
      recorder.submit_and_wait();
    }
    const size_t offset = size_t(begin) * s.row_bytes, bytes = size_t(end - begin) * s.row_bytes;
    context_->upload(s.kv.at(size_t(a)).k, offset, k, bytes);
    context_->upload(s.kv.at(size_t(a)).v, offset, v, bytes);
  }

  void read_recurrent(const ModelState& state, int r, float* conv, float* ssm) const override {
    std::lock_guard lock(mutex_);
    const VulkanSequence::Recurrent& s = sequence(state).recurrent.at(size_t(r));
    context_->download(s.conv, 0, conv, conv_bytes());
    context_->download(s.ssm, 0, ssm, ssm_bytes());
  }

  void write_recurrent(ModelState& state, int r, const float* conv,
                       const float* ssm) const override {
    std::lock_guard lock(mutex_);
    VulkanSequence::Recurrent& s = sequence(state).recurrent.at(size_t(r));
    context_->upload(s.conv, 0, conv, conv_bytes());
    context_->upload(s.ssm, 0, ssm, ssm_bytes());
  }

  void restore_recurrent_row(ModelState& state, int row) const override {
    std::lock_guard lock(mutex_);
    VulkanSequence& s = sequence(state);
    check_history_row(s, row);
    CommandRecorder recorder(*context_);
    for (size_t r = 0; r < s.recurrent.size(); ++r) {
      recorder.copy(s.history[r].conv, size_t(row) * conv_bytes(), s.recurrent[r].conv, 0,
                    conv_bytes());
      recorder.copy(s.history[r].ssm, size_t(row) * ssm_bytes(), s.recurrent[r].ssm, 0,
                    ssm_bytes());
    }
    recorder.submit_and_wait();
  }

  void read_recurrent_row(const ModelState& state, int r, int row, float* conv,
                          float* ssm) const override {
    std::lock_guard lock(mutex_);
    const VulkanSequence& s = sequence(state);
    check_history_row(s, row);
    const VulkanSequence::Recurrent& kept = s.history.at(size_t(r));
    context_->download(kept.conv, size_t(row) * conv_bytes(), conv, conv_bytes());
    context_->download(kept.ssm, size_t(row) * ssm_bytes(), ssm, ssm_bytes());
  }

  bool attach_vision(const VisionWeights& tower, std::string* why) override {
    std::lock_guard lock(mutex_);
    vision_.reset();
    if (!VisionTower::supported(tower, why)) return false;
    const uint64_t need = w_.bytes + VisionTower::device_bytes(tower);
    const uint64_t have = usable_device_memory(context_->device_info());
    if (need > have) {
      if (why)
        *why = "the weights and the vision tower take " + human_bytes(need) + " of the " +
               human_bytes(have) + " of device memory on " + context_->device_info().name;
      return false;
    }
    vision_ = std::make_unique<VisionTower>(*context_, tower);
    return true;
  }
  void detach_vision() override {
    std::lock_guard lock(mutex_);
    vision_.reset();
  }
  bool has_vision() const override { return vision_ != nullptr; }
  bool runs_on_cpu_cores() const override {
    return context_->device_info().type == vulkan::DeviceType::kCpu;
  }
  std::optional<std::vector<float>> encode_image(std::span<const float> pixel_values,
                                                 const PatchGrid& grid,
                                                 std::string* why) const override {
    if (!vision_) throw Error("internal: the device has no vision tower");
    return vision_->encode(pixel_values, grid, mutex_, why);
  }

  bool has_mtp() const override { return w_.mtp.has_value(); }
  std::string mtp_unavailable_reason() const override { return w_.mtp_unavailable; }

  std::shared_ptr<DeviceSequence> new_mtp_sequence(KvType kv_type) const override {
    auto s = std::make_shared<VulkanSequence>();  // one attention layer, rows made on demand
    s->context = context_;
    s->kv_type = kv_type;
    s->row_bytes = size_t(c_.num_kv_heads) * kv_head_bytes(kv_type, c_.head_dim);
    s->kv.resize(1);
    return s;
  }

  void mtp_forward(std::span<const float> hidden, std::span<const int32_t> next_tokens,
                   ModelState& state, float* last_logits, RowKind rows, float* last_hidden,
                   std::span<const SequenceImage> images) const override;

 private:
  // Scratch buffers of one call, kept from call to call (grown when a call has more rows).
  struct Scratch {
    Buffer ids, positions, h, normed, delta;
    Buffer rope_rows, own_angles, image_rows;  // row_inputs.h, when a call has images or M-RoPE
    Buffer q, gate, k, v, o, scores;           // attention
    Buffer qkv, conv, z, b, a, delta_out;      // DeltaNet
    Buffer mlp_gate, mlp_up;                   // MLP (and a MoE block's shared expert)
    Buffer router, route_ids, route_weights;   // MoE: logits [T][E], choices [T][k]
    Buffer expert_gate, expert_up, routed;     // MoE: per route [T * k][I or H]
    Buffer shared, shared_gate;                // MoE: the shared expert's output and gate
    Buffer head_in, logits;                    // LM head
    Buffer mtp_hidden, mtp_fc;                 // MTP head: its hidden input, fc's second half
    Buffer seq_a, seq_b, seq_c, seq_pos;       // one sequence's rows, when the batch has more
    // A MoE layer's routed experts on the CPU: its normed rows, route ids and route outputs.
    std::vector<float> host_x, host_routed;
    std::vector<int32_t> host_ids;
  };

  // A sequence with its recurrent buffers allocated (contents undefined) and no K/V rows yet.
  std::shared_ptr<VulkanSequence> allocate_sequence(KvType kv_type) const {
    auto s = std::make_shared<VulkanSequence>();
    s->context = context_;
    s->kv_type = kv_type;
    s->row_bytes = size_t(c_.num_kv_heads) * kv_head_bytes(kv_type, c_.head_dim);
    s->kv.resize(size_t(attention_layers_));
    for (int r = 0; r < delta_layers_; ++r)
      s->recurrent.push_back(
          {context_->create_buffer(conv_bytes()), context_->create_buffer(ssm_bytes())});
    return s;
  }

  static VulkanSequence& sequence(const ModelState& state) {
    auto* s = dynamic_cast<VulkanSequence*>(state.device.get());
    if (s == nullptr) throw Error("internal: a state without a Vulkan sequence");
    return *s;
  }
  static void check_history_row(const VulkanSequence& s, int row) {
    if (row < 0 || row >= s.history_rows)
      throw Error("the recurrent state after row " + std::to_string(row) +
                  " was not kept (the last verify call kept " + std::to_string(s.history_rows) +
                  " rows)");
  }
  // Makes `s` keep its recurrent states after each of `rows` rows in this call.
  void prepare_history(VulkanSequence& s, int rows) const {
    s.history.resize(s.recurrent.size());
    for (VulkanSequence::Recurrent& kept : s.history) {
      context_->ensure_buffer(kept.conv, size_t(rows) * conv_bytes());
      context_->ensure_buffer(kept.ssm, size_t(rows) * ssm_bytes());
    }
    s.history_rows = rows;
  }
  size_t conv_bytes() const { return size_t(c_.conv_kernel - 1) * c_.conv_channels() * 4; }
  size_t ssm_bytes() const {
    return size_t(c_.linear_value_heads) * c_.linear_value_dim * c_.linear_key_dim * 4;
  }

  void prepare_scratch(int T, int head_rows, size_t scores_bytes, int max_count) const;
  void record_attention_layer(CommandRecorder& rec, const DeviceLayer& layer, size_t slot,
                              const std::vector<Span>& spans, int T) const;
  void record_delta_layer(CommandRecorder& rec, const DeviceLayer& layer, size_t slot,
                          const std::vector<Span>& spans, int T) const;
  void record_mlp(CommandRecorder& rec, const DeviceMlp& w, int T, const Buffer& out) const;
  // One decoder layer over s_.h: h += Mixer(RMSNorm_in(h)); h += FFN(RMSNorm_post(h)). `slot`
  // is the layer's index among the sequences' attention (or recurrent) layers; the last
  // `generated_rows` of the T rows are generated rows.
  void record_decoder_layer(Recording& rec, const DeviceLayer& layer, size_t slot,
                            const std::vector<Span>& spans, int T, int generated_rows) const;
  // The RoPE table grown to cover positions below `end`.
  void cover_positions(int64_t end) const;
  // A call's row inputs into the scratch buffers: upload before recording anything, then
  // record_image_rows after the embedding.
  void upload_row_inputs(CommandRecorder& rec, const RowInputs& in) const;
  void record_image_rows(CommandRecorder& rec) const;
  void record_moe(Recording& rec, const DeviceMoe& w, int T, int generated_rows) const;
  // s_.routed from the routes in s_.route_ids, by the CPU over the host experts `w`.
  void run_host_experts(Recording& rec, const MoeWeights& w, int T, int generated_rows) const;

  std::shared_ptr<Context> context_;
  ModelConfig c_;
  DeviceWeights w_;
  std::string description_;
  int attention_layers_ = 0, delta_layers_ = 0;
  mutable std::mutex mutex_;  // one call records and submits on the context at a time
  // The vision tower, when attached: set and reset only while the model loads (before any
  // other thread uses it); its images take mutex_ around each of their submissions.
  std::unique_ptr<VisionTower> vision_;
  mutable Scratch s_;
  mutable RopeTable rope_;
  // The current call's RoPE index and own angles (null: the positions, the table alone), and
  // where its image rows wait in s_.image_rows.
  mutable const Buffer* rope_rows_ = nullptr;
  mutable const Buffer* own_angles_ = nullptr;
  mutable std::vector<std::pair<RowInputs::ImageRows, size_t>> image_runs_;
};

void VulkanForward::prepare_scratch(int T, int head_rows, size_t scores_bytes,
                                    int max_count) const {
  Context& ctx = *context_;
  const size_t H = size_t(c_.hidden_size), rows = size_t(T);
  ctx.ensure_buffer(s_.ids, rows * 4);
  ctx.ensure_buffer(s_.positions, rows * 4);
  ctx.ensure_buffer(s_.h, rows * H * 4);
  ctx.ensure_buffer(s_.normed, rows * H * 4);
  ctx.ensure_buffer(s_.delta, rows * H * 4);
  const size_t q_width = size_t(c_.num_heads) * c_.head_dim;
  const size_t kv_width = size_t(c_.num_kv_heads) * c_.head_dim;
  size_t seq_width = 0;
  if (attention_layers_ > 0) {
    ctx.ensure_buffer(s_.q, rows * q_width * 4);
    ctx.ensure_buffer(s_.gate, rows * q_width * 4);
    ctx.ensure_buffer(s_.k, rows * kv_width * 4);
    ctx.ensure_buffer(s_.v, rows * kv_width * 4);
    ctx.ensure_buffer(s_.o, rows * q_width * 4);
    ctx.ensure_buffer(s_.scores, scores_bytes);
    seq_width = q_width;
  }
  if (delta_layers_ > 0) {
    const size_t CD = size_t(c_.conv_channels()), VD = size_t(c_.linear_value_size());
    const size_t Hv = size_t(c_.linear_value_heads);
    ctx.ensure_buffer(s_.qkv, rows * CD * 4);
    ctx.ensure_buffer(s_.conv, rows * CD * 4);
    ctx.ensure_buffer(s_.z, rows * VD * 4);
    ctx.ensure_buffer(s_.b, rows * Hv * 4);
    ctx.ensure_buffer(s_.a, rows * Hv * 4);
    ctx.ensure_buffer(s_.delta_out, rows * VD * 4);
    seq_width = std::max({seq_width, CD, VD});
  }
  ctx.ensure_buffer(s_.seq_a, size_t(max_count) * seq_width * 4);
  ctx.ensure_buffer(s_.seq_b, size_t(max_count) * seq_width * 4);
  ctx.ensure_buffer(s_.seq_c, size_t(max_count) * seq_width * 4);
  ctx.ensure_buffer(s_.seq_pos, size_t(max_count) * std::max(1, c_.linear_value_heads) * 4);
  size_t I = 0, E = 0, routed_I = 0;
  for (const DeviceLayer& l : w_.layers) {
    if (!l.moe) {
      I = std::max(I, size_t(l.mlp.gate.rows));
      continue;
    }
    E = std::max(E, size_t(l.moe_ffn.router.rows));
    routed_I = std::max(routed_I, size_t(l.moe_ffn.gate.rows));
    if (l.moe_ffn.has_shared_expert) I = std::max(I, size_t(l.moe_ffn.shared.gate.rows));
  }
  ctx.ensure_buffer(s_.mlp_gate, rows * I * 4);
  ctx.ensure_buffer(s_.mlp_up, rows * I * 4);
  if (E > 0) {
    const size_t routes = rows * size_t(c_.experts_per_token);
    ctx.ensure_buffer(s_.router, rows * E * 4);
    ctx.ensure_buffer(s_.route_ids, routes * 4);
    ctx.ensure_buffer(s_.route_weights, routes * 4);
    ctx.ensure_buffer(s_.expert_gate, routes * routed_I * 4);
    ctx.ensure_buffer(s_.expert_up, routes * routed_I * 4);
    ctx.ensure_buffer(s_.routed, routes * H * 4);
    ctx.ensure_buffer(s_.shared, rows * H * 4);
    ctx.ensure_buffer(s_.shared_gate, rows * 4);
  }
  ctx.ensure_buffer(s_.head_in, size_t(head_rows) * H * 4);
  ctx.ensure_buffer(s_.logits, size_t(head_rows) * c_.vocab_size * 4);
}

void VulkanForward::record_attention_layer(CommandRecorder& rec, const DeviceLayer& layer,
                                           size_t slot, const std::vector<Span>& spans,
                                           int T) const {
  const DeviceAttention& w = layer.attention;
  const int Nh = c_.num_heads, Nkv = c_.num_kv_heads, D = c_.head_dim;
  const bool gated = c_.hybrid();
  record_matmul(rec, w.q, s_.normed, T, s_.q);
  if (gated) record_matmul(rec, w.gate, s_.normed, T, s_.gate);
  record_matmul(rec, w.k, s_.normed, T, s_.k);
  record_matmul(rec, w.v, s_.normed, T, s_.v);
  record_rms_norm(rec, s_.q, w.q_norm, s_.q, T * Nh, D, c_.rms_norm_eps, false);
  record_rms_norm(rec, s_.k, w.k_norm, s_.k, T * Nkv, D, c_.rms_norm_eps, false);
  if (c_.rotary_dim > 0) {
    record_rope(rec, s_.q, *rope_rows_, rope_, T, Nh, D, own_angles_);
    record_rope(rec, s_.k, *rope_rows_, rope_, T, Nkv, D, own_angles_);
  }
  const size_t q_row = size_t(Nh) * D * 4;
  const bool alone = spans.size() == 1;
  for (const Span& sp : spans) {
    VulkanSequence& seq = *sp.sequence;
    VulkanSequence::Rows& cache = seq.kv[slot];
    record_kv_store(rec, s_.k, size_t(sp.first) * Nkv * D, sp.count, Nkv, D, seq.kv_type, cache.k,
                    sp.position);
    record_kv_store(rec, s_.v, size_t(sp.first) * Nkv * D, sp.count, Nkv, D, seq.kv_type, cache.v,
                    sp.position);
    // The kernel reads its rows from the start of its buffers: a sequence that does not
    // start the batch works on copies of its rows.
    const Buffer& q = alone ? s_.q : s_.seq_a;
    const Buffer& pos = alone ? s_.positions : s_.seq_pos;
    const Buffer& o = alone ? s_.o : s_.seq_b;
    if (!alone) {
      rec.copy(s_.q, size_t(sp.first) * q_row, s_.seq_a, 0, size_t(sp.count) * q_row);
      rec.copy(s_.positions, size_t(sp.first) * 4, s_.seq_pos, 0, size_t(sp.count) * 4);
    }
    DeviceAttentionShape shape;
    shape.R = sp.count;
    shape.Nh = Nh;
    shape.Nkv = Nkv;
    shape.D = D;
    shape.kv_rows = int(seq.capacity);
    shape.scale = 1.f / std::sqrt(float(D));
    shape.generated = sp.segment->kind == RowKind::kGenerated;
    record_attention(rec, shape, q, pos, cache.k, cache.v, seq.kv_type, o,
                     shape.generated ? &s_.scores : nullptr);
    if (!alone) rec.copy(s_.seq_b, 0, s_.o, size_t(sp.first) * q_row, size_t(sp.count) * q_row);
  }
  if (gated) record_sigmoid_mul(rec, s_.o, s_.gate, size_t(T) * Nh * D);
  record_matmul(rec, w.o, s_.o, T, s_.delta);
}

void VulkanForward::record_delta_layer(CommandRecorder& rec, const DeviceLayer& layer, size_t slot,
                                       const std::vector<Span>& spans, int T) const {
  const DeviceDeltaNet& w = layer.delta_net;
  const int Hk = c_.linear_key_heads, Hv = c_.linear_value_heads;
  const int Dk = c_.linear_key_dim, Dv = c_.linear_value_dim;
  const int CD = c_.conv_channels(), KD = c_.linear_key_size();
  record_matmul(rec, w.qkv, s_.normed, T, s_.qkv);
  record_matmul(rec, w.z, s_.normed, T, s_.z);
  record_matmul(rec, w.b, s_.normed, T, s_.b);
  record_matmul(rec, w.a, s_.normed, T, s_.a);
  const bool alone = spans.size() == 1;
  const size_t conv_row = size_t(CD) * 4;
  for (const Span& sp : spans) {
    VulkanSequence::Recurrent& state = sp.sequence->recurrent[slot];
    const Buffer* kept = sp.keep_history ? &sp.sequence->history[slot].conv : nullptr;
    if (alone) {
      record_causal_conv1d_silu(rec, s_.qkv, size_t(CD), T, CD, c_.conv_kernel, w.conv, state.conv,
                                s_.conv, kept);
      continue;
    }
    rec.copy(s_.qkv, size_t(sp.first) * conv_row, s_.seq_a, 0, size_t(sp.count) * conv_row);
    record_causal_conv1d_silu(rec, s_.seq_a, size_t(CD), sp.count, CD, c_.conv_kernel, w.conv,
                              state.conv, s_.seq_b, kept);
    rec.copy(s_.seq_b, 0, s_.conv, size_t(sp.first) * conv_row, size_t(sp.count) * conv_row);
  }
  record_l2_norm(rec, s_.conv, T, size_t(CD), 0, Hk, Dk, 1e-6f, 1.f / std::sqrt(float(Dk)));
  record_l2_norm(rec, s_.conv, T, size_t(CD), size_t(KD), Hk, Dk, 1e-6f, 1.f);
  record_delta_gates(rec, s_.b, s_.a, w.A, w.dt_bias, T, Hv);
  DeviceGatedDeltaInputs in;
  in.Hk = Hk;
  in.Hv = Hv;
  in.Dk = Dk;
  in.Dv = Dv;
  in.q_offset = 0;
  in.k_offset = size_t(KD);
  in.v_offset = size_t(2) * KD;
  in.row_stride = size_t(CD);
  const size_t out_row = size_t(Hv) * Dv * 4, gate_row = size_t(Hv) * 4;
  for (const Span& sp : spans) {
    VulkanSequence::Recurrent& state = sp.sequence->recurrent[slot];
    const Buffer* kept = sp.keep_history ? &sp.sequence->history[slot].ssm : nullptr;
    in.T = sp.count;
    if (alone) {
      record_gated_delta(rec, in, s_.conv, s_.a, s_.b, state.ssm, s_.delta_out, kept);
      continue;
    }
    rec.copy(s_.conv, size_t(sp.first) * conv_row, s_.seq_a, 0, size_t(sp.count) * conv_row);
    rec.copy(s_.a, size_t(sp.first) * gate_row, s_.seq_b, 0, size_t(sp.count) * gate_row);
    rec.copy(s_.b, size_t(sp.first) * gate_row, s_.seq_pos, 0, size_t(sp.count) * gate_row);
    record_gated_delta(rec, in, s_.seq_a, s_.seq_b, s_.seq_pos, state.ssm, s_.seq_c, kept);
    rec.copy(s_.seq_c, 0, s_.delta_out, size_t(sp.first) * out_row, size_t(sp.count) * out_row);
  }
  record_rms_norm_gated(rec, s_.delta_out, s_.z, w.norm, s_.delta_out, T * Hv, Dv, c_.rms_norm_eps);
  if (w.out_heads.size() == 0) {
    record_matmul(rec, w.out, s_.delta_out, T, s_.delta);
    return;
  }
  // out_proj's columns in llama.cpp's tiled head order: the heads moved to it (z, read by the
  // norm, is free again).
  record_gather_heads(rec, s_.delta_out, w.out_heads, T, Hv, Dv, s_.z);
  record_matmul(rec, w.out, s_.z, T, s_.delta);
}

void VulkanForward::record_mlp(CommandRecorder& rec, const DeviceMlp& w, int T,
                               const Buffer& out) const {
  record_matmul(rec, w.gate, s_.normed, T, s_.mlp_gate);
  record_matmul(rec, w.up, s_.normed, T, s_.mlp_up);
  record_silu_mul(rec, s_.mlp_gate, s_.mlp_up, size_t(T) * w.gate.rows);
  record_matmul(rec, w.down, s_.mlp_gate, T, out);
}

// ffn_layers.cpp's moe_layer on the device. The CPU groups tokens by expert and runs each
// active expert once over its rows; here every route (token, j-th choice) is a row of its own
// through its expert's matrices (matmul_by_expert.h), which gives each row the same result,
// needs no host to read the router's choice, and never lets one row's work depend on another's.
// Host experts (w.host) run on the CPU between two submissions instead.
void VulkanForward::record_moe(Recording& recording, const DeviceMoe& w, int T,
                               int generated_rows) const {
  const int H = c_.hidden_size, k = c_.experts_per_token;
  CommandRecorder* rec = &recording.commands();
  record_matmul(*rec, w.router, s_.normed, T, s_.router);
  record_moe_route(*rec, s_.router, T, w.router.rows, k, c_.norm_topk_prob, s_.route_ids,
                   s_.route_weights);
  if (w.host) {
    run_host_experts(recording, *w.host, T, generated_rows);
    rec = &recording.commands();
  } else {
    record_matmul_by_expert(*rec, w.gate, s_.normed, ExpertInput::kToken, s_.route_ids, T, k,
                            s_.expert_gate);
    record_matmul_by_expert(*rec, w.up, s_.normed, ExpertInput::kToken, s_.route_ids, T, k,
                            s_.expert_up);
    record_silu_mul(*rec, s_.expert_gate, s_.expert_up, size_t(T) * k * w.gate.rows);
    record_matmul_by_expert(*rec, w.down, s_.expert_gate, ExpertInput::kRoute, s_.route_ids, T, k,
                            s_.routed);
  }
  record_moe_combine(*rec, s_.routed, s_.route_ids, s_.route_weights, T, k, H, s_.delta);
  if (!w.has_shared_expert) return;
  record_mlp(*rec, w.shared, T, s_.shared);
  record_matmul(*rec, w.shared_gate, s_.normed, T, s_.shared_gate);
  record_shared_expert_add(*rec, s_.delta, s_.shared, s_.shared_gate, T, H);
}

void VulkanForward::run_host_experts(Recording& rec, const MoeWeights& w, int T,
                                     int generated_rows) const {
  const size_t rows = size_t(T) * c_.hidden_size, routes = size_t(T) * c_.experts_per_token;
  s_.host_x.resize(rows);
  s_.host_ids.resize(routes);
  s_.host_routed.resize(routes * c_.hidden_size);
  // The rows and routes come back in the submission that computed them, and the experts'
  // outputs go up at the start of the next.
  rec.commands().download(s_.normed, 0, s_.host_x.data(), rows * 4);
  rec.commands().download(s_.route_ids, 0, s_.host_ids.data(), routes * 4);
  rec.submit_and_continue();
  routed_experts(w.experts, c_, s_.host_x.data(), T, generated_rows, s_.host_ids.data(),
                 s_.host_routed.data());
  rec.commands().upload(s_.routed, 0, s_.host_routed.data(), s_.host_routed.size() * 4);
}

void VulkanForward::record_decoder_layer(Recording& recording, const DeviceLayer& layer,
                                         size_t slot, const std::vector<Span>& spans, int T,
                                         int generated_rows) const {
  CommandRecorder& rec = recording.commands();
  const int H = c_.hidden_size;
  const size_t n = size_t(T) * H;
  record_rms_norm(rec, s_.h, layer.input_norm, s_.normed, T, H, c_.rms_norm_eps, false);
  if (layer.full_attention)
    record_attention_layer(rec, layer, slot, spans, T);
  else
    record_delta_layer(rec, layer, slot, spans, T);
  record_add(rec, s_.h, s_.delta, n);
  record_rms_norm(rec, s_.h, layer.post_norm, s_.normed, T, H, c_.rms_norm_eps, false);
  if (layer.moe)
    record_moe(recording, layer.moe_ffn, T, generated_rows);
  else
    record_mlp(rec, layer.mlp, T, s_.delta);
  // The recorder to go on in: record_moe may have submitted `rec` and begun another.
  record_add(recording.commands(), s_.h, s_.delta, n);
}

void VulkanForward::cover_positions(int64_t end) const {
  if (c_.rotary_dim <= 0 || rope_.positions >= end) return;
  int64_t n = std::max(kMinRopePositions, rope_.positions);
  while (n < end) n *= 2;
  rope_ = upload_rope_table(*context_, n, c_.rotary_dim, c_.rope_theta);
}

void VulkanForward::upload_row_inputs(CommandRecorder& rec, const RowInputs& in) const {
  Context& ctx = *context_;
  const size_t n = in.ids.size(), row = size_t(c_.hidden_size) * 4;
  cover_positions(in.table_positions);
  rec.upload(s_.ids, 0, in.ids.data(), n * 4);
  rec.upload(s_.positions, 0, in.positions.data(), n * 4);
  rope_rows_ = &s_.positions;
  own_angles_ = nullptr;
  if (!in.plain_rope()) {
    ctx.ensure_buffer(s_.rope_rows, n * 4);
    rec.upload(s_.rope_rows, 0, in.rope_rows.data(), n * 4);
    rope_rows_ = &s_.rope_rows;
  }
  if (!in.own_angles.empty()) {
    ctx.ensure_buffer(s_.own_angles, in.own_angles.size() * 4);
    rec.upload(s_.own_angles, 0, in.own_angles.data(), in.own_angles.size() * 4);
    own_angles_ = &s_.own_angles;
  }
  image_runs_.clear();
  size_t image_bytes = 0;
  for (const RowInputs::ImageRows& run : in.images) image_bytes += size_t(run.count) * row;
  if (image_bytes == 0) return;
  ctx.ensure_buffer(s_.image_rows, image_bytes);
  size_t at = 0;
  for (const RowInputs::ImageRows& run : in.images) {
    rec.upload(s_.image_rows, at, run.values, size_t(run.count) * row);
    image_runs_.emplace_back(run, at);
    at += size_t(run.count) * row;
  }
}

// Image rows take the image's embeddings in place of their token's (image_rows.h).
void VulkanForward::record_image_rows(CommandRecorder& rec) const {
  const size_t row = size_t(c_.hidden_size) * 4;
  for (const auto& [run, at] : image_runs_)
    rec.copy(s_.image_rows, at, s_.h, size_t(run.first) * row, size_t(run.count) * row);
}

void VulkanForward::forward(std::span<const BatchSegment* const> segments) const {
  std::lock_guard lock(mutex_);
  Context& ctx = *context_;
  const int H = c_.hidden_size, V = c_.vocab_size;
  std::vector<Span> spans;
  RowInputs inputs;
  std::vector<int64_t> deltas;  // each state's rope_delta after its rows
  int T = 0, max_count = 0, head_rows = 0, generated_rows = 0;
  size_t scores_bytes = 0;
  // Everything that can be refused (add_sequence_rows: a position past int32, an image without
  // its embeddings) is, before anything is recorded: the states stay untouched.
  for (const BatchSegment* seg : segments) {
    Span sp{seg,
            &sequence(*seg->state),
            T,
            int(seg->tokens.size()),
            seg->state->position,
            keeps_history(*seg->state)};
    int64_t delta = seg->state->rope_delta;
    add_sequence_rows(inputs, seg->tokens, sp.position, sp.position, seg->images, delta, c_);
    deltas.push_back(delta);
    // Prompt segments come first (DeviceForward::forward), so these are the last rows.
    if (seg->kind == RowKind::kGenerated) generated_rows += sp.count;
    T += sp.count;
    max_count = std::max(max_count, sp.count);
    head_rows += seg->all_logits ? sp.count : (seg->logits ? 1 : 0);
    spans.push_back(sp);
  }

  std::vector<Buffer> retired;
  Recording recording(ctx);
  for (const Span& sp : spans) {
    sp.sequence->reserve(sp.position + sp.count, sp.position, recording.commands(), retired);
    if (sp.keep_history) prepare_history(*sp.sequence, sp.count);
    if (sp.segment->kind == RowKind::kGenerated && attention_layers_ > 0)
      scores_bytes = std::max(scores_bytes,
                              size_t(sp.count) * c_.num_heads * size_t(sp.sequence->capacity) * 4);
  }
  prepare_scratch(T, std::max(head_rows, 1), scores_bytes, max_count);
  upload_row_inputs(recording.commands(), inputs);

  record_embedding(recording.commands(), w_.embed, s_.ids, T, s_.h);
  record_image_rows(recording.commands());
  size_t attention_slot = 0, delta_slot = 0;
  for (const DeviceLayer& layer : w_.layers)
    record_decoder_layer(recording, layer, layer.full_attention ? attention_slot++ : delta_slot++,
                         spans, T, generated_rows);
  CommandRecorder& rec = recording.commands();
  record_rms_norm(rec, s_.h, w_.final_norm, s_.normed, T, H, c_.rms_norm_eps, false);
  // The rows the LM head reads, gathered, and where their logits go.
  std::vector<float*> head_out;
  const size_t row = size_t(H) * 4;
  for (const Span& sp : spans) {
    const BatchSegment& seg = *sp.segment;
    for (int t = 0; t < sp.count; ++t) {
      const bool to_head = seg.all_logits || (seg.logits && t == sp.count - 1);
      if (!to_head) continue;
      rec.copy(s_.normed, size_t(sp.first + t) * row, s_.head_in, head_out.size() * row, row);
      head_out.push_back(seg.all_logits ? seg.all_logits + size_t(t) * V : seg.logits);
    }
  }
  if (!head_out.empty())
    record_matmul(rec, w_.lm_head(), s_.head_in, int(head_out.size()), s_.logits);
  // The read-backs ride in the last submission: one wait for the whole step (with experts on
  // the CPU, one more per such layer).
  for (size_t r = 0; r < head_out.size(); ++r)
    rec.download(s_.logits, r * size_t(V) * 4, head_out[r], size_t(V) * 4);
  for (const Span& sp : spans)
    if (sp.segment->final_hidden)
      rec.download(s_.normed, size_t(sp.first) * row, sp.segment->final_hidden,
                   size_t(sp.count) * row);
  recording.finish();

  for (size_t i = 0; i < spans.size(); ++i) spans[i].segment->state->rope_delta = deltas[i];
  for (const Span& sp : spans) {
    const BatchSegment& seg = *sp.segment;
    if (seg.all_logits && seg.logits)
      std::copy_n(seg.all_logits + size_t(sp.count - 1) * V, V, seg.logits);
  }
}

// mtp_head.cpp's pass on the device: x = fc_embedding(RMSNorm_e(embed(next))) +
// fc_hidden(RMSNorm_h(hidden)) (fc's two halves of columns, summed after their products: the
// same value as the CPU's one product over the joined row, to rounding), then the head's decoder
// layer over its own K/V rows at the main model's positions, then the LM head on the last row.
void VulkanForward::mtp_forward(std::span<const float> hidden, std::span<const int32_t> next_tokens,
                                ModelState& state, float* last_logits, RowKind rows,
                                float* last_hidden, std::span<const SequenceImage> images) const {
  if (!w_.mtp) throw Error("internal: the device has no MTP head");
  const DeviceMtp& m = *w_.mtp;
  std::lock_guard lock(mutex_);
  Context& ctx = *context_;
  const int T = int(next_tokens.size()), H = c_.hidden_size, V = c_.vocab_size;
  if (T == 0) return;
  BatchSegment segment;  // what the attention layer reads of its one sequence
  segment.tokens = next_tokens;
  segment.kind = rows;
  segment.state = &state;
  const std::vector<Span> spans = {Span{&segment, &sequence(state), 0, T, state.position, false}};
  // Head row p embeds the token after position p: its image rows are one row on.
  RowInputs inputs;
  int64_t delta = state.rope_delta;
  add_sequence_rows(inputs, next_tokens, state.position, state.position + 1, images, delta, c_);

  std::vector<Buffer> retired;
  Recording recording(ctx);  // one submission: the MTP head's experts are on the device
  CommandRecorder& rec = recording.commands();
  VulkanSequence& seq = *spans[0].sequence;
  seq.reserve(state.position + T, state.position, rec, retired);
  const size_t scores_bytes =
      rows == RowKind::kGenerated ? size_t(T) * c_.num_heads * size_t(seq.capacity) * 4 : 0;
  prepare_scratch(T, 1, scores_bytes, T);
  const size_t row = size_t(H) * 4;
  ctx.ensure_buffer(s_.mtp_hidden, size_t(T) * row);
  ctx.ensure_buffer(s_.mtp_fc, size_t(T) * row);
  upload_row_inputs(rec, inputs);
  rec.upload(s_.mtp_hidden, 0, hidden.data(), size_t(T) * row);

  record_embedding(rec, w_.embed, s_.ids, T, s_.h);
  record_image_rows(rec);
  record_rms_norm(rec, s_.h, m.embedding_norm, s_.normed, T, H, c_.rms_norm_eps, false);
  record_rms_norm(rec, s_.mtp_hidden, m.hidden_norm, s_.delta, T, H, c_.rms_norm_eps, false);
  record_matmul(rec, m.fc_embedding, s_.normed, T, s_.h);
  record_matmul(rec, m.fc_hidden, s_.delta, T, s_.mtp_fc);
  record_add(rec, s_.h, s_.mtp_fc, size_t(T) * H);
  record_decoder_layer(recording, m.layer, 0, spans, T, rows == RowKind::kGenerated ? T : 0);
  record_rms_norm(rec, s_.h, m.final_norm, s_.normed, T, H, c_.rms_norm_eps, false);
  rec.copy(s_.normed, size_t(T - 1) * row, s_.head_in, 0, row);
  record_matmul(rec, w_.lm_head(), s_.head_in, 1, s_.logits);
  rec.download(s_.logits, 0, last_logits, size_t(V) * 4);
  if (last_hidden) rec.download(s_.head_in, 0, last_hidden, row);
  recording.finish();
  state.rope_delta = delta;
}

}  // namespace
}  // namespace vulkan

std::unique_ptr<DeviceForward> make_device_forward(
    const std::string& device, const ModelConfig& config, const ModelWeights& weights,
    int cpu_moe_layers, const std::function<void(uint64_t, uint64_t)>& progress) {
  vulkan::ContextOptions options;
  options.device = device;
  std::shared_ptr<vulkan::Context> context = vulkan::Context::create(options);
  vulkan::DeviceWeights uploaded =
      vulkan::upload_weights(*context, config, weights, cpu_moe_layers, progress);
  return std::make_unique<vulkan::VulkanForward>(std::move(context), config, std::move(uploaded));
}

}  // namespace qmlx
