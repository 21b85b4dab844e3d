// Tokenizer throughput for bench/tokenizer/run.sh: encodes a JSON array of documents twice
// (cold cache, then warm; CPU time) and one long prompt of ~200k tokens with a fresh tokenizer, and
// prints one JSON line with MB/s (UTF-8 bytes) and token counts.
// Usage: tokenizer_bench TOKENIZER_DIR DOCS.json
#include <cstdio>
#include <ctime>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "text/tokenizer/tokenizer.h"

namespace {

// CPU time of this thread: the build machine is shared, and wall time there measures the
// neighbours as much as the tokenizer. The node peer measures CPU time too.
double cpu_seconds() {
  timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

struct Pass {
  double seconds;
  size_t tokens;
};

Pass encode_all(const qmlx::Tokenizer& tokenizer, const std::vector<std::string>& docs) {
  double start = cpu_seconds();
  size_t tokens = 0;
  for (const auto& doc : docs) tokens += tokenizer.encode(doc).size();
  return {cpu_seconds() - start, tokens};
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s TOKENIZER_DIR DOCS.json\n", argv[0]);
    return 2;
  }
  std::ifstream in(argv[2]);
  std::stringstream buffer;
  buffer << in.rdbuf();
  auto docs = nlohmann::json::parse(buffer.str()).get<std::vector<std::string>>();
  size_t bytes = 0;
  for (const auto& d : docs) bytes += d.size();

  double load_start = cpu_seconds();
  auto tokenizer = qmlx::Tokenizer::from_file(argv[1]);
  double load_seconds = cpu_seconds() - load_start;
  Pass cold = encode_all(*tokenizer, docs);
  Pass warm = encode_all(*tokenizer, docs);

  // One long prompt, fresh tokenizer (empty cache): the server's worst case.
  std::string prompt;
  for (const auto& d : docs) {
    if (prompt.size() > 900000) break;
    prompt += d;
  }
  auto fresh = qmlx::Tokenizer::from_file(argv[1]);
  double prompt_start = cpu_seconds();
  size_t prompt_tokens = fresh->encode(prompt).size();
  double prompt_seconds = cpu_seconds() - prompt_start;

  double mb = bytes / 1e6;
  std::printf(
      "{\"bytes\": %zu, \"tokens\": %zu, \"load_ms\": %.1f, \"cold_mbps\": %.2f, "
      "\"warm_mbps\": %.2f, \"prompt_tokens\": %zu, \"prompt_ms\": %.2f}\n",
      bytes, cold.tokens, load_seconds * 1e3, mb / cold.seconds, mb / warm.seconds, prompt_tokens,
      prompt_seconds * 1e3);
  return cold.tokens == warm.tokens ? 0 : 1;
}
