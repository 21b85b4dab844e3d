// Test tool for the numpy oracle (tests/oracle/gguf_blocks.py): decodes a raw file of GGUF
// blocks with the engine's kernels and writes the values as little-endian float32.
//   qmlx_gguf_dequantize TYPE IN OUT
#include <cstdio>
#include <fstream>
#include <iterator>
#include <vector>

#include "kernels/gguf_blocks.h"

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s TYPE IN OUT\n", argv[0]);
    return 2;
  }
  auto type = qmlx::gguf_type_from_name(argv[1]);
  if (!type) {
    std::fprintf(stderr, "unknown type %s\n", argv[1]);
    return 2;
  }
  std::ifstream in(argv[2], std::ios::binary);
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), {});
  const size_t blocks = bytes.size() / qmlx::gguf_block_bytes(*type);
  std::vector<float> values(blocks * qmlx::gguf_block_elems(*type));
  qmlx::gguf_dequantize(*type, bytes.data(), values.size(), values.data());
  std::ofstream out(argv[3], std::ios::binary);
  out.write(reinterpret_cast<const char*>(values.data()), std::streamsize(values.size() * 4));
  return out ? 0 : 1;
}
