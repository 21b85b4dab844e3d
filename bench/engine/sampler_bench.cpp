// Cost of picking one token from a Qwen3.5-sized logits row (248,320 ids) with the sampling
// settings clients send: greedy, temperature alone (Claude Code sends temperature 1 and nothing
// else), top-p, top-k, min-p, and penalties over a long conversation's history. Every server
// request pays this once per generated token on its own thread, between two engine steps, so it
// adds straight to the time per token. Prints one JSON line per setting: microseconds per sample
// (median of ROUNDS rounds of SAMPLES samples each).
//   qmlx_sampler_bench [history_tokens=32768] [rounds=5] [samples=50]
// Two logits shapes: "peaked" (a trained model's: a few ids carry most of the mass; normal with
// sd 2.5 plus boosts of 8 to 18 on 8 ids) and "flat" (a random model's: normal with sd 0.5, where
// the nucleus is most of the vocabulary).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/sampler.h"

namespace {

using Clock = std::chrono::steady_clock;
constexpr int kVocab = 248320;

std::vector<float> logits_of(const std::string& shape, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.f, shape == "peaked" ? 2.5f : 0.5f);
  std::vector<float> l(kVocab);
  for (float& v : l) v = normal(rng);
  if (shape == "peaked")
    for (float boost : {18.f, 17.f, 16.f, 15.f, 14.f, 12.f, 10.f, 8.f})
      l[size_t(rng() % kVocab)] += boost;
  return l;
}

struct Setting {
  const char* name;
  qmlx::SamplingParams params;
};

}  // namespace

int main(int argc, char** argv) {
  const int history_tokens = argc > 1 ? std::atoi(argv[1]) : 32768;
  const int rounds = argc > 2 ? std::atoi(argv[2]) : 5;
  const int samples = argc > 3 ? std::atoi(argv[3]) : 50;
  std::mt19937 rng(7);
  std::vector<int32_t> history(size_t(std::max(history_tokens, 0)));
  for (int32_t& id : history) id = int32_t(rng() % kVocab);

  auto with = [](auto edit) {
    qmlx::SamplingParams p;
    p.seed = 1;
    edit(p);
    return p;
  };
  const std::vector<Setting> settings = {
      {"greedy", with([](auto&) {})},
      {"greedy, repetition_penalty 1.1", with([](auto& p) { p.repetition_penalty = 1.1f; })},
      {"temperature 1", with([](auto& p) { p.temperature = 1.f; })},
      {"temperature 1, top_p 0.95", with([](auto& p) {
         p.temperature = 1.f;
         p.top_p = 0.95f;
       })},
      {"temperature 0.7, top_k 20, top_p 0.8", with([](auto& p) {
         p.temperature = 0.7f;
         p.top_k = 20;
         p.top_p = 0.8f;
       })},
      {"temperature 1, min_p 0.05", with([](auto& p) {
         p.temperature = 1.f;
         p.min_p = 0.05f;
       })},
  };
  for (const char* shape : {"peaked", "flat"}) {
    std::vector<std::vector<float>> rows;
    for (int i = 0; i < 8; ++i) rows.push_back(logits_of(shape, uint64_t(i + 1)));
    for (const Setting& s : settings) {
      qmlx::Sampler sampler(s.params, kVocab - 1);
      std::vector<double> per_round;
      int64_t checksum = 0;
      for (int r = 0; r < rounds; ++r) {
        const auto start = Clock::now();
        for (int i = 0; i < samples; ++i)
          checksum += sampler.sample(rows[size_t(i) % rows.size()], history);
        per_round.push_back(
            std::chrono::duration<double, std::micro>(Clock::now() - start).count() / samples);
      }
      std::sort(per_round.begin(), per_round.end());
      nlohmann::json out = {{"bench", "sampler"},
                            {"logits", shape},
                            {"setting", s.name},
                            {"vocab", kVocab},
                            {"history_tokens", history_tokens},
                            {"us_per_sample", per_round[per_round.size() / 2]},
                            {"checksum", checksum}};
      std::printf("%s\n", out.dump().c_str());
      std::fflush(stdout);
    }
  }
  return 0;
}
