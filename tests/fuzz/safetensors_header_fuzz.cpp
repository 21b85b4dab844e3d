// Fuzz target: the safetensors reader (8-byte header length, JSON header, dtypes, shapes and
// data offsets) on an arbitrary file. A bad file is a qmlx::Error naming it; every tensor it
// accepts must lie inside the file.
#include "base/error.h"
#include "model/safetensors.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = qmlx::fuzz::scratch_file(data, size, ".safetensors");
  try {
    auto store = qmlx::TensorStore::open_file(path);
    for (const auto& [name, tensor] : store->tensors()) {
      tensor.describe_shape();
      tensor.numel();
      // Touch the first and last byte: ASan reports a tensor that points outside the mapping.
      if (tensor.nbytes > 0) {
        volatile uint8_t first = tensor.data[0], last = tensor.data[tensor.nbytes - 1];
        (void)first;
        (void)last;
      }
    }
  } catch (const qmlx::Error&) {
  }
  return 0;
}
