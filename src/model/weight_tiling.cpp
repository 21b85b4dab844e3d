#include "model/weight_tiling.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <map>

#include "kernels/affine_tiles.h"

namespace qmlx {
namespace {

// Every matrix of one layer (the MTP head's layer too); routed experts only with_experts.
template <typename F>
void for_each_layer_matrix(LayerWeights& l, bool with_experts, F&& f) {
  for (WeightMatrix* m : {&l.attention.q, &l.attention.k, &l.attention.v, &l.attention.o,
                          &l.delta_net.qkv, &l.delta_net.z, &l.delta_net.b, &l.delta_net.a,
                          &l.delta_net.out, &l.mlp.gate, &l.mlp.up, &l.mlp.down,
                          &l.moe_ffn.router, &l.moe_ffn.shared.gate, &l.moe_ffn.shared.up,
                          &l.moe_ffn.shared.down, &l.moe_ffn.shared_gate})
    f(*m);
  if (!with_experts) return;
  for (MlpWeights& e : l.moe_ffn.experts)
    for (WeightMatrix* m : {&e.gate, &e.up, &e.down}) f(*m);
}

template <typename F>
void for_each_matrix(ModelWeights& w, bool with_experts, F&& f) {
  f(w.embed);
  f(w.head);
  for (LayerWeights& l : w.layers) for_each_layer_matrix(l, with_experts, f);
  if (w.mtp) {
    f(w.mtp->fc);
    for_each_layer_matrix(w.mtp->layer, with_experts, f);
  }
}

// The vision tower's matrices. They are not tiled (the tower reads them for an image's rows,
// never for one decode row), but an owned copy one reads (a patch embedding put in the
// encoder's axis order at load) must stay.
template <typename F>
void for_each_vision_matrix(ModelWeights& w, F&& f) {
  if (!w.vision) return;
  VisionWeights& v = *w.vision;
  f(v.patch_embed.weight);
  f(v.pos_embed);
  for (VisionBlockWeights& b : v.blocks)
    for (BiasedLinear* l : {&b.qkv, &b.proj, &b.fc1, &b.fc2}) f(l->weight);
  f(v.merger_fc1.weight);
  f(v.merger_fc2.weight);
}

// The bytes a stored matrix takes: codes (with their scales, for GGUF), affine scales, biases.
std::vector<ByteRange> stored_ranges(const WeightMatrix& m) {
  const ByteRange codes{m.data, size_t(m.rows) * m.row_bytes()};
  if (!m.quantized()) return {codes};
  const size_t meta = size_t(m.rows) * m.groups_per_row() * scalar_size(m.scale_type);
  return {codes, {m.scales, meta}, {m.biases, meta}};
}

// Gives the whole pages inside r back to the kernel. Only for ranges of a read-only file
// mapping: a later read (there is none) would fault the same bytes back in from the file.
void release_pages(const ByteRange& r) {
  static const uintptr_t page = uintptr_t(sysconf(_SC_PAGESIZE));
  const uintptr_t begin = (reinterpret_cast<uintptr_t>(r.data) + page - 1) & ~(page - 1);
  const uintptr_t end = (reinterpret_cast<uintptr_t>(r.data) + r.bytes) & ~(page - 1);
  if (end > begin) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
}

bool inside(const uint8_t* p, const ByteRange& r) {
  return p != nullptr && p >= r.data && p < r.data + r.bytes;
}

}  // namespace

std::vector<ByteRange> merged(std::vector<ByteRange> ranges) {
  std::sort(ranges.begin(), ranges.end(),
            [](const ByteRange& a, const ByteRange& b) { return a.data < b.data; });
  std::vector<ByteRange> out;
  for (const ByteRange& r : ranges) {
    if (r.bytes == 0) continue;
    if (!out.empty() && r.data <= out.back().data + out.back().bytes) {
      const uint8_t* end = std::max(out.back().data + out.back().bytes, r.data + r.bytes);
      out.back().bytes = size_t(end - out.back().data);
    } else {
      out.push_back(r);
    }
  }
  return out;
}

bool covered_by(const ByteRange& r, const std::vector<ByteRange>& ranges) {
  if (r.bytes == 0) return true;
  // The last range starting at or before r: the only one that can hold r's first byte.
  auto after = std::upper_bound(ranges.begin(), ranges.end(), r.data,
                                [](const uint8_t* p, const ByteRange& s) { return p < s.data; });
  if (after == ranges.begin()) return false;
  const ByteRange& s = *(after - 1);
  return r.data + r.bytes <= s.data + s.bytes;
}

std::vector<ByteRange> tile_affine_weights(ModelWeights& weights,
                                           const std::vector<ByteRange>& mapped,
                                           const std::function<void(uint64_t)>& progress) {
  const std::vector<ByteRange> files = merged(mapped);
  std::vector<ByteRange> copied;
  std::map<const uint8_t*, WeightMatrix> tiled;  // by source codes: a tied head is the embedding
  uint64_t done = 0;
  for_each_matrix(weights, false, [&](WeightMatrix& m) {
    const bool q8_0 = q8_0_tiles_supported(m);
    if (!affine_tiles_supported(m) && !q8_0) return;
    auto it = tiled.find(m.data);
    if (it != tiled.end()) {
      m = it->second;
      return;
    }
    const WeightMatrix source = m;
    AffineTileStorage storage;
    m = q8_0 ? tile_q8_0_matrix(source, storage) : tile_affine_matrix(source, storage);
    if (!m.tiled) return;  // a Q8_0 scale too large for the exact conversion
    weights.tiles.push_back(std::move(storage));
    tiled.emplace(source.data, m);
    for (const ByteRange& r : stored_ranges(source)) {
      copied.push_back(r);
      done += r.bytes;
      if (covered_by(r, files)) release_pages(r);
    }
    if (progress) progress(done);
  });
  // Owned copies (rows re-ordered at load) that were tiled are no longer read; the tower's
  // are.
  std::vector<ByteRange> owned;
  for (const std::vector<uint8_t>& buffer : weights.owned) owned.push_back({buffer.data(), buffer.size()});
  std::vector<bool> in_use(owned.size(), false);
  const auto mark_in_use = [&](WeightMatrix& m) {
    for (const uint8_t* p : {m.data, m.scales, m.biases})
      for (size_t i = 0; i < owned.size(); ++i) in_use[i] = in_use[i] || inside(p, owned[i]);
  };
  for_each_matrix(weights, true, mark_in_use);
  for_each_vision_matrix(weights, mark_in_use);
  for (size_t i = 0; i < owned.size(); ++i)
    if (!in_use[i]) std::vector<uint8_t>().swap(weights.owned[i]);
  return merged(std::move(copied));
}

}  // namespace qmlx
