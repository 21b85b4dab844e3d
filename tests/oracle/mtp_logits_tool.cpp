// Test tool for the numpy oracle (tests/oracle/mtp_vs_reference.py): runs a model's MTP head
// the way speculative decoding feeds it and writes its logits.
//   qmlx_mtp_logits MODEL TOKENS STEPS OUT
// MODEL is a folder or a .gguf file, TOKENS a comma-separated prompt. The prompt is prefilled;
// g0 is the greedy token after it. The MTP head is then prefilled with one row per prompt
// position p (hidden p, token p + 1; the last row takes g0), and for each of STEPS - 1 greedy
// steps the main model takes g_i and the head one row (hidden of g_i, g_{i+1}). OUT gets the
// STEPS rows of MTP logits (little-endian float32, [STEPS][vocab]); stdout the greedy tokens as
// JSON {"tokens": [g0, g1, ...]}.
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "base/error.h"
#include "model/model.h"

namespace {

std::vector<int32_t> parse_tokens(const std::string& text) {
  std::vector<int32_t> tokens;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) tokens.push_back(std::stoi(item));
  return tokens;
}

int32_t argmax(const std::vector<float>& v) {
  return int32_t(std::max_element(v.begin(), v.end()) - v.begin());
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: %s MODEL TOKENS STEPS OUT\n", argv[0]);
    return 2;
  }
  try {
    auto model = qmlx::Model::load(argv[1]);
    const std::vector<int32_t> prompt = parse_tokens(argv[2]);
    const int steps = std::stoi(argv[3]);
    if (prompt.empty() || steps < 1) throw qmlx::Error("need a prompt and STEPS >= 1");
    const size_t H = size_t(model->config().hidden_size), V = size_t(model->config().vocab_size);
    qmlx::ModelState state = model->new_state(qmlx::KvType::kF32);
    qmlx::ModelState mtp = model->new_mtp_state(qmlx::KvType::kF32);

    std::vector<float> hidden(prompt.size() * H), logits(V), mtp_logits(V), out;
    qmlx::ForwardOptions options;
    options.final_hidden = hidden.data();
    model->forward(prompt, state, logits.data(), options);
    std::vector<int32_t> greedy{argmax(logits)};
    std::vector<int32_t> next(prompt.begin() + 1, prompt.end());
    next.push_back(greedy.back());
    model->mtp_forward(hidden, next, mtp, mtp_logits.data());
    out.insert(out.end(), mtp_logits.begin(), mtp_logits.end());

    hidden.resize(H);
    options.final_hidden = hidden.data();
    for (int step = 1; step < steps; ++step) {
      const int32_t fed = greedy.back();
      model->forward(std::span(&fed, 1), state, logits.data(), options);
      greedy.push_back(argmax(logits));
      model->mtp_forward(hidden, std::span(&greedy.back(), 1), mtp, mtp_logits.data());
      out.insert(out.end(), mtp_logits.begin(), mtp_logits.end());
    }
    std::ofstream file(argv[4], std::ios::binary);
    file.write(reinterpret_cast<const char*>(out.data()), std::streamsize(out.size() * 4));
    if (!file) throw qmlx::Error(std::string("cannot write ") + argv[4]);
    std::string json = "{\"tokens\": [";
    for (size_t i = 0; i < greedy.size(); ++i) json += (i ? ", " : "") + std::to_string(greedy[i]);
    std::printf("%s]}\n", json.c_str());
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
