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

bool covered_by(const ByteRange& r, const std::vector<ByteRange>& ranges) {
  std::vector<ByteRange> sorted = ranges;
  std::sort(sorted.begin(), sorted.end(),
            [](const ByteRange& a, const ByteRange& b) { return a.data < b.data; });
  const uint8_t* reached = r.data;  // [r.data, reached) is covered
  for (const ByteRange& s : sorted) {
    if (s.data > reached) break;
    reached = std::max(reached, s.data + s.bytes);
    if (reached >= r.data + r.bytes) return true;
  }
  return r.bytes == 0;
}

std::vector<ByteRange> tile_affine_weights(ModelWeights& weights,
                                           const std::vector<ByteRange>& mapped,
                                           const std::function<void(uint64_t)>& progress) {
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
      for (const ByteRange& file : mapped)
        if (inside(r.data, file)) release_pages(r);
    }
    if (progress) progress(done);
  });
  // Owned copies (rows re-ordered at load) that were tiled are no longer read.
  std::vector<const uint8_t*> in_use;
  for_each_matrix(weights, true, [&](WeightMatrix& m) {
    in_use.insert(in_use.end(), {m.data, m.scales, m.biases});
  });
  for (std::vector<uint8_t>& buffer : weights.owned) {
    const ByteRange range{buffer.data(), buffer.size()};
    if (std::none_of(in_use.begin(), in_use.end(),
                     [&](const uint8_t* p) { return inside(p, range); }))
      std::vector<uint8_t>().swap(buffer);
  }
  return copied;
}

}  // namespace qmlx
