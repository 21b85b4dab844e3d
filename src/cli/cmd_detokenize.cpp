// `qmlx detokenize`: turns token ids back into text with a model's tokenizer, for users
// debugging prompts and outputs (and for tests). --json also lists each token's vocabulary
// string so byte-level pieces are visible.
#include <cstdio>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "cli/command.h"
#include "text/tokenizer/tokenizer.h"

namespace qmlx::cli {
namespace {

// Accepts "1,2,3", "1 2 3" and "[1, 2, 3]".
std::vector<int32_t> parse_ids(const std::string& text) {
  std::vector<int32_t> ids;
  std::string number;
  auto flush = [&] {
    if (number.empty()) return;
    try {
      size_t used = 0;
      long long value = std::stoll(number, &used);
      if (used != number.size() || value < 0 || value > INT32_MAX) throw std::out_of_range("");
      ids.push_back(static_cast<int32_t>(value));
    } catch (const std::logic_error&) {
      throw Error("--ids: '" + number + "' is not a token id");
    }
    number.clear();
  };
  for (char c : text) {
    if (c == ',' || c == ' ' || c == '[' || c == ']' || c == '\n' || c == '\t') {
      flush();
    } else {
      number.push_back(c);
    }
  }
  flush();
  return ids;
}

int run_detokenize(int argc, char** argv) {
  CLI::App app("Decode token ids to text with a model's tokenizer", "qmlx detokenize");
  std::string model, ids_text;
  bool skip_special = false, json = false;
  app.add_option("--model", model, "model folder (or tokenizer.json file)")->required();
  app.add_option("--ids", ids_text, "token ids, e.g. 1,2,3")->required();
  app.add_flag("--skip-special", skip_special, "leave special tokens out of the text");
  app.add_flag("--json", json, "print {\"text\", \"ids\", \"tokens\"} as JSON");
  CLI11_PARSE(app, argc, argv);

  auto tokenizer = Tokenizer::from_file(model);
  std::vector<int32_t> ids = parse_ids(ids_text);
  for (int32_t id : ids) {
    if (id >= tokenizer->vocab_size() || tokenizer->token_text(id).empty()) {
      throw Error("--ids: " + std::to_string(id) + " is not in the vocabulary of " + model);
    }
  }
  std::string text = tokenizer->decode(ids, skip_special);
  if (!json) {
    // fwrite, not printf: decoded text may contain NUL bytes.
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fputc('\n', stdout);
    return 0;
  }
  nlohmann::json tokens = nlohmann::json::array();
  for (int32_t id : ids) tokens.push_back(tokenizer->token_text(id));
  nlohmann::json out = {{"text", text}, {"ids", ids}, {"tokens", tokens}};
  std::printf("%s\n", out.dump().c_str());
  return 0;
}

}  // namespace

QMLX_COMMAND(detokenize, "detokenize", "decode token ids to text (--model DIR --ids 1,2,3)",
             run_detokenize);

}  // namespace qmlx::cli
