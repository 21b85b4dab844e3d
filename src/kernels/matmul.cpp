#include "kernels/matmul.h"

#include <algorithm>
#include <memory>
#include <vector>

#include "base/thread_pool.h"
#include "kernels/affine_gemv.h"
#include "kernels/affine_tiles.h"
#include "kernels/gguf_gemv.h"
#include "kernels/packed_gemm.h"
#include "kernels/vec.h"

namespace qmlx {
namespace {

// Decode rows of an unquantized matrix, or of a GGUF type without a fused kernel: one row at
// a time, streaming it once (GGUF rows are decoded to floats first).
void row_by_row_gemv(const float* x, const WeightMatrix& w, float* y, int begin, int end) {
  thread_local std::vector<float> decoded;
  for (int r = begin; r < end; ++r) {
    const uint8_t* row = w.data + size_t(r) * w.row_bytes();
    switch (w.format) {
      case WeightFormat::kF32:
        y[r] = vec::dot(x, reinterpret_cast<const float*>(row), w.cols);
        break;
      case WeightFormat::kF16:
        y[r] = vec::dot_typed(x, row, ScalarType::kF16, w.cols);
        break;
      case WeightFormat::kBF16:
        y[r] = vec::dot_typed(x, row, ScalarType::kBF16, w.cols);
        break;
      case WeightFormat::kGguf:
        decoded.resize(w.cols);
        dequantize_rows(w, r, r + 1, decoded.data());
        y[r] = vec::dot(x, decoded.data(), w.cols);
        break;
      case WeightFormat::kAffine:
        break;  // affine rows go through affine_gemv_rows
    }
  }
}

// The decode kernel a matrix uses.
enum class GemvKind { kAffine, kGguf, kRowByRow };

GemvKind gemv_kind(const WeightMatrix& w) {
  if (w.format == WeightFormat::kAffine) return GemvKind::kAffine;
  if (w.format == WeightFormat::kGguf && gguf_gemv_supported(w.gguf_type)) return GemvKind::kGguf;
  return GemvKind::kRowByRow;
}

// Weight bytes a block of rows may take so that it stays in L2 while every generated row of a
// call is multiplied with it (the rows then read each weight byte from memory once in all).
constexpr size_t kGemvBlockBytes = 128 * 1024;

// A matrix is split into about 8 chunks per thread, claimed on demand: with a fixed half each,
// one core sits idle whenever the other is slowed (by another process on a shared machine).
constexpr size_t kChunksPerThread = 8;

// Everything one matmul shares between the ranges of rows it is split into.
struct MatmulJob {
  const float* x;
  int T;
  int prompt_rows;  // rows [0, prompt_rows) are prompt rows, the rest generated rows
  const WeightMatrix& w;
  GemvKind kind;
  std::vector<Int16Activations> own_inputs;  // one per generated row (fused kernels only)
  const std::vector<Int16Activations>* gemv_inputs = &own_inputs;
  float* y;

  // `same_input`: a job over the same x whose prepared rows this one can use, if they fit.
  MatmulJob(const float* x_, int T_, int generated_rows, const WeightMatrix& w_, float* y_,
            const MatmulJob* same_input = nullptr)
      : x(x_), T(T_), w(w_), kind(gemv_kind(w_)), y(y_) {
    prompt_rows = T - generated_rows;
    if (same_input != nullptr && same_input->prepares_input_like(*this)) {
      gemv_inputs = same_input->gemv_inputs;
      return;
    }
    for (int t = prompt_rows; t < T; ++t) {
      const float* row = x + size_t(t) * w.cols;
      if (kind == GemvKind::kAffine)
        own_inputs.push_back(prepare_affine_gemv_input(row, w));
      else if (kind == GemvKind::kGguf)
        own_inputs.push_back(prepare_gguf_gemv_input(row, w.cols));
    }
  }
  MatmulJob(const MatmulJob&) = delete;

  // Whether `other`'s generated rows are prepared exactly as this job's would be.
  bool prepares_input_like(const MatmulJob& other) const {
    if (kind != other.kind || kind == GemvKind::kRowByRow) return false;
    if (kind == GemvKind::kGguf) return w.cols == other.w.cols;
    return same_affine_gemv_input(w, other.w);
  }

  int generated_rows() const { return T - prompt_rows; }

  void run(int begin, int end) const {
    if (prompt_rows > 0) packed_gemm_rows(x, prompt_rows, w, y, begin, end);
    if (generated_rows() == 0) return;
    // One pass over the weights for every generated row (kernels/affine_gemv.h, gguf_gemv.h).
    if (kind == GemvKind::kAffine) {
      return affine_gemv_rows(gemv_inputs->data(), generated_rows(), w, begin, end,
                              y + size_t(prompt_rows) * w.rows, w.rows);
    }
    if (kind == GemvKind::kGguf) {
      return gguf_gemv_rows(gemv_inputs->data(), generated_rows(), w, begin, end,
                            y + size_t(prompt_rows) * w.rows, w.rows);
    }
    // The other formats: blocks of weight rows small enough to stay in L2 across the
    // generated rows, each row decoded to floats per generated row.
    const int block =
        int(std::max<size_t>(1, kGemvBlockBytes / std::max<size_t>(1, w.row_bytes())));
    for (int b0 = begin; b0 < end; b0 += block) {
      const int b1 = std::min(end, b0 + block);
      for (int g = 0; g < generated_rows(); ++g) {
        const size_t t = size_t(prompt_rows + g);
        row_by_row_gemv(x + t * w.cols, w, y + t * w.rows, b0, b1);
      }
    }
  }

  // Rows per task: decode tasks should read at least 64 KiB of weights so scheduling stays
  // cheap; prefill tasks a whole number of 16-row panels.
  // Tiled matrices are split between tiles (a tile split in two would be read twice).
  size_t grain() const {
    if (prompt_rows > 0) return 16;
    const size_t rows = std::max<size_t>(8, (64 * 1024) / std::max<size_t>(1, w.row_bytes()));
    return w.tiled ? (rows + kAffineTileRows - 1) / kAffineTileRows * kAffineTileRows : rows;
  }

  // Rows per chunk: about kChunksPerThread chunks per thread of `pool`, a whole number of grains
  // (prefill chunks then end on 16-row panel boundaries).
  size_t chunk_rows(const ThreadPool& pool) const {
    const size_t grains = size_t(w.rows) / (size_t(pool.size()) * kChunksPerThread * grain());
    return std::max<size_t>(1, grains) * grain();
  }
};

}  // namespace

void matmul(const float* x, int T, const WeightMatrix& w, float* y, int generated_rows) {
  if (T <= 0) return;
  MatmulJob job(x, T, generated_rows, w, y);
  auto run = [&](size_t b, size_t e) { job.run(int(b), int(e)); };
  ThreadPool& pool = default_pool();
  pool.parallel_chunks(w.rows, job.chunk_rows(pool), run);
}

void matmul_many(const float* x, int T, std::span<const MatmulOutput> outputs, int generated_rows) {
  if (T <= 0 || outputs.empty()) return;
  std::vector<std::unique_ptr<MatmulJob>> jobs;
  for (const MatmulOutput& o : outputs)
    jobs.push_back(std::make_unique<MatmulJob>(x, T, generated_rows, *o.w, o.y,
                                               jobs.empty() ? nullptr : jobs.front().get()));
  // Every matrix cut into chunks as matmul() cuts it, all claimed from one list.
  struct Task {
    const MatmulJob* job;
    int begin, end;
  };
  std::vector<Task> tasks;
  ThreadPool& pool = default_pool();
  for (const auto& job : jobs) {
    const size_t rows = size_t(job->w.rows), chunk = job->chunk_rows(pool);
    for (size_t b = 0; b < rows; b += chunk)
      tasks.push_back({job.get(), int(b), int(std::min(rows, b + chunk))});
  }
  pool.parallel_chunks(tasks.size(), 1, [&](size_t b, size_t e) {
    for (size_t i = b; i < e; ++i) tasks[i].job->run(tasks[i].begin, tasks[i].end);
  });
}

void matmul_serial(const float* x, int T, const WeightMatrix& w, float* y, int generated_rows) {
  if (T <= 0) return;
  MatmulJob(x, T, generated_rows, w, y).run(0, w.rows);
}

}  // namespace qmlx
