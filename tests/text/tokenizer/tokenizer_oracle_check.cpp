// Oracle check: compares qmlx's tokenizer with the ids, decoded text and NFC text that
// tests/node/tokenizer_oracle.mjs computed with @huggingface/tokenizers.
// Usage: tokenizer_oracle_check TOKENIZER_DIR ORACLE.json. Exit status 0 only when every
// case matches: ids, decode (plain and streamed), and decode(encode(x)) == NFC(x).
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "text/tokenizer/tokenizer.h"

namespace {

std::string ids_to_string(const std::vector<int32_t>& ids) {
  std::string s;
  for (int32_t id : ids) s += std::to_string(id) + " ";
  return s;
}

std::string streamed(const qmlx::Tokenizer& tokenizer, const std::vector<int32_t>& ids) {
  qmlx::StreamingDetokenizer stream(tokenizer);
  std::string text;
  for (int32_t id : ids) text += stream.push(id);
  return text + stream.finish();
}

// Returns the failure description, empty when the case passes.
std::string check_case(const qmlx::Tokenizer& tokenizer, const nlohmann::json& c) {
  const auto text = c["text"].get<std::string>();
  const auto expected = c["ids"].get<std::vector<int32_t>>();
  std::vector<int32_t> ids = tokenizer.encode(text);
  if (ids != expected) {
    return "ids differ\n  expected " + ids_to_string(expected) + "\n  actual   " +
           ids_to_string(ids);
  }
  std::string decoded = tokenizer.decode(ids);
  if (decoded != c["decoded"].get<std::string>()) return "decode differs from the oracle's";
  if (decoded != c["nfc"].get<std::string>()) return "decode(encode(x)) != NFC(x)";
  if (streamed(tokenizer, ids) != decoded) return "streamed text differs from decode";
  return {};
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s TOKENIZER_DIR ORACLE.json\n", argv[0]);
    return 2;
  }
  auto tokenizer = qmlx::Tokenizer::from_file(argv[1]);
  std::ifstream in(argv[2]);
  std::stringstream buffer;
  buffer << in.rdbuf();
  auto cases = nlohmann::json::parse(buffer.str());
  size_t failures = 0;
  for (const auto& c : cases) {
    std::string failure = check_case(*tokenizer, c);
    if (failure.empty()) continue;
    if (++failures <= 20) {
      std::printf("FAIL %s: %s\n", c["text"].dump().substr(0, 200).c_str(), failure.c_str());
    }
  }
  std::printf("tokenizer oracle: %zu/%zu cases identical\n", cases.size() - failures, cases.size());
  return failures == 0 && !cases.empty() ? 0 : 1;
}
