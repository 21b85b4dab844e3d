// DeviceForward: the decoder stack run on a compute device other than the CPU cores. Where the
// backend ends and the model begins: the backend (src/backend/vulkan) knows operations and
// buffers, no model; an implementation of this interface (model/vulkan/) records the model's
// forward pass from those operations, as layers.h writes it from the CPU kernels.
//
// A Model loaded for a device owns one; its sequences' K/V rows and recurrent state then live
// in device memory (a DeviceSequence in ModelState::device), and whoever exports or imports a
// sequence (the engine's Session, for the cache) goes through Model::read_kv_rows & co.,
// which copy between the device and the host. The host arrays of such a state stay empty.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "backend/vulkan/transfer_counts.h"
#include "kernels/kv_row.h"
#include "model/row_kind.h"
#include "model/sequence_image.h"

namespace qmlx {

struct BatchSegment;
struct ModelConfig;
struct ModelState;
struct ModelWeights;
struct PatchGrid;
struct VisionWeights;

// The routed experts a device forward pass leaves in host memory and runs on the CPU
// (--cpu-moe, --n-cpu-moe): of how many of the model's MoE layers, and the device memory that
// keeps free.
struct HostExperts {
  int layers = 0;
  int moe_layers = 0;
  uint64_t bytes = 0;
};

// Whether model layer `layer`'s routed experts stay in host memory with --cpu-moe /
// --n-cpu-moe N (cpu_moe_layers: N, every layer for --cpu-moe, 0 for neither): the first N.
inline bool routed_experts_on_host(size_t layer, int cpu_moe_layers) {
  return int64_t(layer) < cpu_moe_layers;
}

// The start-up line saying so, e.g. "the routed experts of 40 of 40 MoE layers stay in host
// memory and run on the CPU, keeping 18.6 GiB off the device"; "" when there are none.
std::string describe_host_experts(const HostExperts& experts);

// One sequence's state on a device; what it holds is the implementation's.
class DeviceSequence {
 public:
  virtual ~DeviceSequence() = default;
};

class DeviceForward {
 public:
  virtual ~DeviceForward() = default;

  // The device, its driver and the kernel variants in use, e.g. "vulkan llvmpipe (LLVM 15.0.6,
  // 256 bits) driver 0.0.1 mesa 22.3.6 exact-fma": logged at start and part of the cache
  // fingerprint, so a checkpoint is installed only where the same arithmetic made it.
  virtual std::string description() const = 0;
  // Device memory the weights take, and all the device memory qmlx plans with
  // (backend/vulkan/device_memory.h): what is left holds the sequences' states and the forward
  // pass's scratch.
  virtual size_t weight_bytes() const = 0;
  virtual uint64_t memory_bytes() const = 0;
  virtual HostExperts host_experts() const = 0;

  // Submissions, dispatches and transfers since the device was opened (the tests' bound on a
  // forward step's work).
  virtual vulkan::TransferCounts counts() const = 0;

  virtual std::shared_ptr<DeviceSequence> new_sequence(KvType kv_type) const = 0;
  // A copy of `sequence` in new device memory (its rows [0, rows) and recurrent state).
  virtual std::shared_ptr<DeviceSequence> clone_sequence(const DeviceSequence& sequence,
                                                         int64_t rows) const = 0;

  // Model::forward_batch's work for segments already checked (tokens, states), in row order:
  // prompt segments first, images and M-RoPE included (image rows take the images' embeddings,
  // model/image_rows.h). Advances no positions (the Model does); sets each state's rope_delta
  // to the one after its rows. Throws before any state changes on an image without embeddings.
  virtual void forward(std::span<const BatchSegment* const> segments) const = 0;

  // Copies between a sequence's device state and the host, in ModelState's host layouts:
  // K/V rows [begin, end) of attention layer `a` (kv_row_bytes each), the conv and SSM state of
  // recurrent layer `r`. Writes make room for rows up to `end`.
  virtual void read_kv_rows(const ModelState& state, int a, int64_t begin, int64_t end, uint8_t* k,
                            uint8_t* v) const = 0;
  virtual void write_kv_rows(ModelState& state, int a, int64_t begin, int64_t end, const uint8_t* k,
                             const uint8_t* v) const = 0;
  virtual void read_recurrent(const ModelState& state, int r, float* conv, float* ssm) const = 0;
  virtual void write_recurrent(ModelState& state, int r, const float* conv,
                               const float* ssm) const = 0;

  // Speculative decoding's rollback (engine/speculative.h). A forward call whose segment's state
  // has its recurrent layers' history set (RecurrentState::history, as a host state's verify
  // call does) also keeps, in device memory the sequence owns, every recurrent layer's conv and
  // SSM state after each of the segment's rows; the host histories stay empty.
  // restore_recurrent_row makes the states after row `row` of the last such call the live ones
  // of every recurrent layer (device-to-device copies); read_recurrent_row copies layer `r`'s
  // out, in read_recurrent's layouts. Both throw qmlx::Error for a row that call did not keep.
  virtual void restore_recurrent_row(ModelState& state, int row) const = 0;
  virtual void read_recurrent_row(const ModelState& state, int r, int row, float* conv,
                                  float* ssm) const = 0;

  // The MTP head on the device (model/mtp_head.cpp): whether it is there, why not when the
  // model has one (empty otherwise), a new sequence of the head's one attention layer, and
  // Model::mtp_forward's work for arguments already checked. Advances no position; sets the
  // state's rope_delta as forward does.
  // The vision tower on the device (model/vulkan/vision_forward.h). attach_vision uploads
  // `tower` (which must outlive it or the next detach_vision), replacing any earlier one; when
  // the device cannot run it or it does not fit beside the weights it returns false, *why
  // saying so, and the tower stays on the CPU. weight_bytes() counts an attached tower.
  virtual bool attach_vision(const VisionWeights& tower, std::string* why) = 0;
  virtual void detach_vision() = 0;
  virtual bool has_vision() const = 0;
  // True when the device is the CPU's own cores (lavapipe): work that has a CPU kernel is faster
  // there than through the device's emulation.
  virtual bool runs_on_cpu_cores() const = 0;
  // encode_image (model/vision_encoder.h) on the device, for input check_image_input accepted.
  // std::nullopt, *why saying so, when this image is larger than the device's bindings allow:
  // its caller encodes it on the CPU. Safe to call from any thread beside the other calls.
  virtual std::optional<std::vector<float>> encode_image(std::span<const float> pixel_values,
                                                         const PatchGrid& grid,
                                                         std::string* why) const = 0;

  virtual bool has_mtp() const = 0;
  virtual std::string mtp_unavailable_reason() const = 0;
  virtual std::shared_ptr<DeviceSequence> new_mtp_sequence(KvType kv_type) const = 0;
  virtual void mtp_forward(std::span<const float> hidden, std::span<const int32_t> next_tokens,
                           ModelState& state, float* last_logits, RowKind rows, float* last_hidden,
                           std::span<const SequenceImage> images) const = 0;
};

// The forward pass on `device` ("vulkan" or "vulkan:N", backend/vulkan/device_selection.h),
// with every weight uploaded now; `progress` hears bytes uploaded of the total. Throws
// qmlx::Error naming what is missing: no such device (listing those found), a build without
// the Vulkan backend, a weight format or model shape the device kernels do not run yet.
// The routed experts of layers [0, cpu_moe_layers) are not uploaded: they stay in `weights`
// (which must outlive the result) and run on the CPU (HostExperts).
std::unique_ptr<DeviceForward> make_device_forward(
    const std::string& device, const ModelConfig& config, const ModelWeights& weights,
    int cpu_moe_layers, const std::function<void(uint64_t, uint64_t)>& progress);

}  // namespace qmlx
