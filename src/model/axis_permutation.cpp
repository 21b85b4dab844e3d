#include "model/axis_permutation.h"

#include <cstring>

#include "base/error.h"

namespace qmlx {

std::vector<uint8_t> transposed_elements(const uint8_t* data, size_t elem_bytes,
                                         const std::vector<int64_t>& shape,
                                         const std::vector<int>& axes) {
  const size_t rank = shape.size();
  if (axes.size() != rank) throw Error("transposed_elements: axes do not match the shape");
  std::vector<int64_t> source_stride(rank, 1);
  for (size_t i = rank; i-- > 1;) source_stride[i - 1] = source_stride[i] * shape[i];
  // The result's dims, and for each the step it takes through the source.
  std::vector<int64_t> dims(rank), step(rank);
  size_t count = 1;
  for (size_t i = 0; i < rank; ++i) {
    dims[i] = shape[axes[i]];
    step[i] = source_stride[axes[i]];
    count *= size_t(dims[i]);
  }
  std::vector<uint8_t> out(count * elem_bytes);
  std::vector<int64_t> index(rank, 0);
  int64_t source = 0;
  for (size_t n = 0; n < count; ++n) {
    std::memcpy(out.data() + n * elem_bytes, data + size_t(source) * elem_bytes, elem_bytes);
    // Odometer over the result's dims, last fastest.
    for (size_t i = rank; i-- > 0;) {
      source += step[i];
      if (++index[i] < dims[i]) break;
      source -= step[i] * dims[i];
      index[i] = 0;
    }
  }
  return out;
}

}  // namespace qmlx
