// WeightLoader: turns named checkpoint tensors into the canonical views of weights.h, hiding
// the two layouts (model-spec §1.1, §2, §5): the name prefix (HF `model.language_model.`,
// MLX `language_model.model.`, plain `model.`), MLX quantization (a module is quantized iff
// `<path>.scales` exists, with per-path overrides), conv1d `[CD,1,K]` vs `[CD,K,1]`, raw vs folded
// norms, and the three ways experts are stored. Every shape, dtype and quantization parameter
// is checked; failures name the file and the tensor.
#pragma once

#include <string>
#include <vector>

#include "model/config.h"
#include "model/optional_parts.h"
#include "model/safetensors.h"
#include "model/weights.h"

namespace qmlx {

class WeightLoader {
 public:
  WeightLoader(const TensorStore& store, const ModelConfig& config, ModelWeights& weights);

  // Names are relative to the layer stack root, e.g. "layers.3.self_attn.q_proj".
  WeightMatrix matrix(const std::string& module, int rows, int cols);
  // A [E, rows, cols] stack (switch_mlp or fused experts) split per expert.
  std::vector<WeightMatrix> stacked(const std::string& tensor, bool weight_suffix, int experts,
                                    int rows, int cols);
  // A float tensor of `shape` read as a [rows, cols] matrix (rows * cols elements, row-major):
  // a convolution whose kernel covers its whole input patch is such a matrix.
  WeightMatrix reshaped(const std::string& tensor, const std::vector<int64_t>& shape, int rows,
                        int cols);
  // A float tensor stored with shape `stored` whose axes, permuted by `axes` (numpy's
  // transpose: axis i is stored axis axes[i]), are a row-major [rows, cols] matrix: copied
  // once, at load, in its stored dtype, into storage the weights own. MLX's channels-last
  // convolutions are such tensors.
  WeightMatrix transposed(const std::string& tensor, const std::vector<int64_t>& stored,
                          const std::vector<int>& axes, int rows, int cols);
  std::vector<float> vector(const std::string& tensor, int n);
  // A norm weight; zero-centred norms of raw checkpoints get their +1 here.
  std::vector<float> norm(const std::string& tensor, int n, bool zero_centred);
  // conv1d weight in either layout, returned tap-major [K][channels].
  std::vector<float> conv(const std::string& tensor, int channels, int K);
  // A copy of `m` with rows reordered: row i of the result is row order[i] of m.
  WeightMatrix permute_rows(const WeightMatrix& m, const std::vector<int>& order);

  // The same checkpoint with names relative to `root` (a full tensor-name prefix such as
  // "mtp.") instead of the layer stack's root. With `missing` (an optional part's loader,
  // optional_parts.h), a missing tensor is recorded there and read as empty (a default
  // WeightMatrix, zeros) instead of throwing.
  WeightLoader at_root(const std::string& root, MissingTensors* missing = nullptr) const;

  bool has(const std::string& tensor) const { return store_.contains(prefix_ + tensor); }
  bool has_module(const std::string& module) const { return has(module + ".weight"); }
  // True when some tensor's full name starts with `root` (e.g. "mtp.").
  bool has_root(const std::string& root) const;

  // Embedding, head and final norm, and the check that no tensor was left unexplained.
  void load_globals(bool zero_centred_norms);
  void reject_unused() const;

  // True when norms are stored zero-centred (HF); false when the +1 is folded in (MLX).
  bool raw_norms() const { return raw_norms_; }
  const ModelConfig& config() const { return config_; }
  ModelWeights& weights() { return weights_; }

 private:
  std::string detect_prefix() const;
  bool detect_raw_norms() const;
  WeightMatrix quantized(const std::string& path, const std::vector<int64_t>& lead, int rows,
                         int cols, int index);
  WeightMatrix plain(const TensorInfo& t, const std::vector<int64_t>& lead, int rows, int cols,
                     int index);
  // Matrix `index` of [rows, cols] in a float tensor that must have `shape`.
  WeightMatrix plain_shaped(const TensorInfo& t, const std::vector<int64_t>& shape, int rows,
                            int cols, int index);
  [[noreturn]] void fail(const TensorInfo& t, const std::string& what) const;
  // Tensor `name` (a full name), marked used; null when it is missing and missing_ records it.
  const TensorInfo* take(const std::string& name) const;

  const TensorStore& store_;
  const ModelConfig& config_;
  ModelWeights& weights_;
  std::string prefix_;
  bool raw_norms_ = false;
  MissingTensors* missing_ = nullptr;
};

// A copy of `m` with rows reordered (row i of the result is row order[i] of m), its bytes
// owned by `owner` (the stored format is kept: rows are independent in every format).
WeightMatrix permuted_rows(const WeightMatrix& m, const std::vector<int>& order,
                           ModelWeights& owner);

// Loaders shared by the architectures (same names in Qwen3.5 and Qwen3-Next).
AttentionWeights load_attention(WeightLoader& w, int layer, bool gated, bool zero_centred);
MlpWeights load_mlp(WeightLoader& w, const std::string& module, int hidden, int intermediate);
MoeWeights load_moe(WeightLoader& w, int layer);

}  // namespace qmlx

namespace qmlx {
// The Gated DeltaNet tensors Qwen3.5 and Qwen3-Next name alike: conv1d, dt_bias, A_log, the
// gated norm and out_proj (the input projections differ per architecture).
void load_delta_net_common(WeightLoader& w, int layer, DeltaNetWeights& d);
}  // namespace qmlx
