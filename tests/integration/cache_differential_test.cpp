// The cache's proof of correctness (issue 5 "Proof", cache-design.md "Lookup and restore"): at
// temperature 0 a warm answer is token for token the cold answer. Random multi-turn branches
// (shared system prompts across conversations, new user turns, edits of the last message,
// regenerations, interrupted replies kept in the history, tool turns, idle pre-fills that
// finish or are pre-empted, server restarts between turns) run twice: on a server with the
// cache (RAM and disk tiers, small chunks so every code path is hit) and on one without.
// Each turn's generated tokens must be identical, and the warm server must actually hit.
#include <gtest/gtest.h>

#include <filesystem>
#include <random>

#include "base/logging.h"
#include "server/config/options.h"
#include "server/scheduling/canonical_history.h"
#include "server/scheduling/runtime_loader.h"
#include "tests/integration/turn_harness.h"

namespace qmlx::testing {
namespace {

namespace fs = std::filesystem;
using ordered_json = nlohmann::ordered_json;

const char* const kWords[] = {"read",   "the",    "file",  "main.cpp", "and",   "fix",   "bug",
                              "in",     "parser", "tests", "fail",     "when",  "input", "is",
                              "empty",  "please", "run",   "build",    "again", "check", "log",
                              "output", "line",   "42",    "error",    "😀",     "naïve", "{}"};

struct Counts {
  int turns = 0;
  int hits = 0;
  int64_t cached = 0;
};

class Branch {
 public:
  Branch(std::mt19937_64& rng) : rng_(rng) {}

  std::string words(int lo, int hi) {
    std::uniform_int_distribution<int> n(lo, hi), w(0, int(std::size(kWords)) - 1);
    std::string text;
    for (int i = n(rng_); i > 0; --i)
      text += std::string(text.empty() ? "" : " ") + kWords[w(rng_)];
    return text;
  }
  int pick(int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng_); }

 private:
  std::mt19937_64& rng_;
};

ordered_json tool_schemas() {
  return ordered_json::parse(R"([{"type":"function","function":{"name":"read_file",
    "description":"Read a file","parameters":{"type":"object","properties":{"path":{"type":
    "string"}},"required":["path"]}}}])");
}

void run_branches(const std::string& root, modelgen::Arch arch, int branches, uint64_t seed,
                  int bits, DType kv_dtype) {
  const std::string dir = write_tiny_model(arch, root + "/model", seed, bits);
  server::ServerOptions options;
  options.kv_cache_dtype = kv_dtype;
  auto runtime = server::load_model_runtime(dir, options);
  CacheConfig config = CacheConfig::defaults();
  config.disk_cache_dir = root + "/store";
  config.chunk_tokens = 16;
  config.prefill_checkpoint_tokens = 48;
  config.checkpoint_interval_tokens = 5;
  config.fsync = false;
  TurnHarness warm(runtime, config);
  TurnHarness cold(runtime, std::nullopt);

  std::mt19937_64 rng(seed);
  Branch pick(rng);
  const std::vector<std::string> systems = {"You are a careful coding agent. " + pick.words(20, 40),
                                            "You help with builds. " + pick.words(10, 30), ""};
  Counts counts;
  for (int b = 0; b < branches; ++b) {
    SCOPED_TRACE("branch " + std::to_string(b));
    ordered_json messages = ordered_json::array();
    const std::string& system = systems[size_t(pick.pick(int(systems.size())))];
    if (!system.empty()) messages.push_back({{"role", "system"}, {"content", system}});
    messages.push_back({{"role", "user"}, {"content", pick.words(3, 30)}});
    const bool with_tools = pick.pick(2) == 0;
    const ordered_json tools = with_tools ? tool_schemas() : ordered_json::array();
    const int turns = 2 + pick.pick(3);
    for (int t = 0; t < turns; ++t) {
      SCOPED_TRACE("turn " + std::to_string(t));
      const int max_tokens = 1 + pick.pick(10);
      const int interrupt = pick.pick(5) == 0 ? 1 + pick.pick(4) : 0;
      TurnResult w = warm.chat(messages, tools, max_tokens, interrupt);
      counts.turns++;
      counts.hits += w.stats.cached_tokens > 0 ? 1 : 0;
      counts.cached += w.stats.cached_tokens;
      if (interrupt == 0) {
        TurnResult c = cold.chat(messages, tools, max_tokens);
        ASSERT_EQ(w.prompt, c.prompt);
        ASSERT_EQ(w.generated, c.generated)
            << "warm restored " << w.stats.cached_tokens << " tokens (" << w.stats.cache.kind
            << ") of " << w.prompt.size();
      }
      // What the client does next.
      switch (pick.pick(6)) {
        case 0:  // regenerate: the same request again
          break;
        case 1:  // edit the last user message
          messages.back()["content"] = pick.words(2, 20);
          break;
        case 2:  // a tool turn (the agent calls a tool and sends its result)
          if (with_tools) {
            std::string id = "call_" + std::to_string(b) + "_" + std::to_string(t);
            messages.push_back(
                {{"role", "assistant"},
                 {"content", ""},
                 {"tool_calls",
                  {{{"id", id},
                    {"type", "function"},
                    {"function",
                     {{"name", "read_file"}, {"arguments", {{"path", pick.words(1, 2)}}}}}}}}});
            messages.push_back(
                {{"role", "tool"}, {"tool_call_id", id}, {"content", pick.words(5, 60)}});
            break;
          }
          [[fallthrough]];
        default:  // the reply (possibly cut short) goes into the history, then a new message
          messages.push_back(server::assistant_message(w.reply));
          messages.push_back({{"role", "user"}, {"content", pick.words(2, 25)}});
      }
      switch (pick.pick(8)) {
        case 0:
          warm.restart();
          break;
        case 1:
        case 2:
        case 3:
          warm.idle();
          break;
        case 4:
          warm.idle(pick.pick(3));  // a request arrives during the pre-fill
          break;
        default:
          break;  // the next request comes at once
      }
    }
  }
  std::printf("%s: %d branches, %d warm turns, %d hits, %lld tokens restored\n",
              modelgen::arch_name(arch), branches, counts.turns, counts.hits,
              static_cast<long long>(counts.cached));
  // Most turns after the first of a branch share a prefix with something stored.
  EXPECT_GT(counts.hits, counts.turns / 2);
}

void run_branches_in_scratch(modelgen::Arch arch, int branches, uint64_t seed, int bits = 0,
                             DType kv_dtype = DType::kBF16) {
  const std::string root =
      (fs::temp_directory_path() /
       ("qmlx-differential-" + std::to_string(::getpid()) + "-" + modelgen::arch_name(arch) + "-" +
        std::to_string(bits) + "-" + dtype_name(kv_dtype)))
          .string();
  fs::remove_all(root);
  run_branches(root, arch, branches, seed, bits,
               kv_dtype);  // the servers stop (writers drain) before cleanup
  fs::remove_all(root);
}

class CacheDifferential : public ::testing::Test {
 protected:
  void SetUp() override { set_log_level(LogLevel::kError); }
};

TEST_F(CacheDifferential, HybridMoeWarmEqualsCold) {
  run_branches_in_scratch(modelgen::Arch::kQwen35Moe, 70, 11);
}
TEST_F(CacheDifferential, HybridDenseWarmEqualsCold) {
  run_branches_in_scratch(modelgen::Arch::kQwen35, 70, 12);
}
TEST_F(CacheDifferential, QwenNextWarmEqualsCold) {
  run_branches_in_scratch(modelgen::Arch::kQwen3Next, 30, 13);
}
TEST_F(CacheDifferential, AttentionOnlyWarmEqualsCold) {
  run_branches_in_scratch(modelgen::Arch::kQwen3, 70, 14);
}
// MLX 4-bit and 8-bit: the quantized kernels (integer decode GEMV, packed prefill GEMM).
TEST_F(CacheDifferential, HybridMoeMlx4BitWarmEqualsCold) {
  run_branches_in_scratch(modelgen::Arch::kQwen35Moe, 40, 15, 4);
}
TEST_F(CacheDifferential, HybridDenseMlx8BitWarmEqualsCold) {
  run_branches_in_scratch(modelgen::Arch::kQwen35, 40, 16, 8);
}
// int8 K/V (--kv-cache-dtype int8): restored int8 rows and snapshots give the cold answer too.
TEST_F(CacheDifferential, HybridDenseInt8KvWarmEqualsCold) {
  run_branches_in_scratch(modelgen::Arch::kQwen35, 40, 17, 0, DType::kInt8);
}
TEST_F(CacheDifferential, AttentionOnlyInt8KvWarmEqualsCold) {
  run_branches_in_scratch(modelgen::Arch::kQwen3, 40, 18, 0, DType::kInt8);
}

}  // namespace
}  // namespace qmlx::testing
