// Fuzz target: the GGUF reader (header, metadata key/values, tensor infos, data offsets) on an
// arbitrary file. A bad file is a qmlx::Error naming it; nothing may read outside the mapping.
#include "base/error.h"
#include "model/gguf_file.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = qmlx::fuzz::scratch_file(data, size, ".gguf");
  try {
    qmlx::GgufFile file(path);
    file.metadata().dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    for (const qmlx::GgufTensor& tensor : file.tensors()) {
      tensor.describe();
      file.find(tensor.name);
    }
  } catch (const qmlx::Error&) {
  }
  return 0;
}
