#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "base/error.h"
#include "cache/config.h"
#include "server/config/options.h"

namespace qmlx::server {
namespace {

namespace fs = std::filesystem;

class OptionsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("qmlx_options_test_" + std::to_string(::getpid()));
    fs::create_directories(dir_ / "model");
    std::ofstream(dir_ / "model" / "config.json") << "{}";
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string write_config(const std::string& text) {
    auto path = dir_ / "cache_config.json";
    std::ofstream(path) << text;
    return path.string();
  }

  ParsedCommandLine parse(std::vector<std::string> args) {
    args.insert(args.begin(), "serve");
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    return parse_serve_command_line(static_cast<int>(argv.size()), argv.data());
  }

  fs::path dir_;
};

TEST_F(OptionsTest, DefaultsMatchTheIssue) {
  auto parsed = parse({});
  ASSERT_TRUE(parsed.options);
  EXPECT_EQ(parsed.options->host, "127.0.0.1");
  EXPECT_EQ(parsed.options->port, 8080);
  EXPECT_EQ(parsed.options->max_body_mb, 64);
  EXPECT_TRUE(parsed.options->model_path.empty());
}

TEST_F(OptionsTest, ToolCallGrammarFromTheFileAndTheFlag) {
  EXPECT_EQ(parse({}).options->tool_call_grammar, kDefaultToolCallGrammar);
  auto config = write_config(R"({"tool_call_grammar": false})");
  EXPECT_FALSE(parse({"--cache-config", config}).options->tool_call_grammar);
  // The flag wins over the file.
  EXPECT_TRUE(
      parse({"--cache-config", config, "--tool-call-grammar", "true"}).options->tool_call_grammar);
  EXPECT_FALSE(parse({"--tool-call-grammar", "false"}).options->tool_call_grammar);
  EXPECT_THROW(parse({"--cache-config", write_config(R"({"tool_call_grammar": "yes"})")}), Error);
}

TEST_F(OptionsTest, EveryFlagIsParsed) {
  std::string model = (dir_ / "model").string();
  auto parsed = parse({"--model",
                       model,
                       "--host",
                       "0.0.0.0",
                       "--port",
                       "9000",
                       "--max-context",
                       "200000",
                       "--hybrid-attention",
                       "--disk-kv-restore",
                       "--metrics-port",
                       "9001",
                       "--model-id",
                       "m",
                       "--api-key",
                       "k",
                       "--threads",
                       "2",
                       "--default-temperature",
                       "0.5",
                       "--default-top-p",
                       "0.9",
                       "--default-top-k",
                       "20",
                       "--default-min-p",
                       "0.05",
                       "--default-repetition-penalty",
                       "1.1",
                       "--default-presence-penalty",
                       "0.3",
                       "--default-frequency-penalty",
                       "0.2",
                       "--log-format",
                       "json",
                       "--max-body-mb",
                       "8"});
  ASSERT_TRUE(parsed.options);
  const ServerOptions& o = *parsed.options;
  EXPECT_EQ(o.model_path, model);
  EXPECT_EQ(o.host, "0.0.0.0");
  EXPECT_EQ(o.port, 9000);
  EXPECT_EQ(o.max_context, 200000);
  EXPECT_TRUE(o.hybrid_attention);
  EXPECT_TRUE(o.disk_kv_restore);
  EXPECT_TRUE(o.deltanet_state_aware);
  EXPECT_EQ(o.metrics_port, 9001);
  EXPECT_EQ(o.model_id, "m");
  EXPECT_EQ(o.api_key, "k");
  EXPECT_EQ(o.threads, 2);
  EXPECT_DOUBLE_EQ(o.sampling.temperature, 0.5);
  EXPECT_DOUBLE_EQ(o.sampling.top_p, 0.9);
  EXPECT_EQ(o.sampling.top_k, 20);
  EXPECT_DOUBLE_EQ(o.sampling.min_p, 0.05);
  EXPECT_DOUBLE_EQ(o.sampling.repetition_penalty, 1.1);
  EXPECT_DOUBLE_EQ(o.sampling.presence_penalty, 0.3);
  EXPECT_DOUBLE_EQ(o.sampling.frequency_penalty, 0.2);
  EXPECT_EQ(o.log_format, LogFormat::kJson);
  EXPECT_EQ(o.max_body_mb, 8);
}

TEST_F(OptionsTest, ConfigFileIsReadAndFlagsOverrideIt) {
  std::string model = (dir_ / "model").string();
  std::string config = write_config(R"({"cache": {"disk_cache_max_gb": 10},
      "model": {"path": ")" + model +
                                    R"(", "hybrid_attention": true,
                "deltanet_state_aware": true}})");
  auto parsed = parse({"--cache-config", config});
  ASSERT_TRUE(parsed.options);
  EXPECT_EQ(parsed.options->model_path, model);
  EXPECT_TRUE(parsed.options->hybrid_attention);
  EXPECT_TRUE(parsed.options->deltanet_state_aware);
  EXPECT_EQ(parsed.options->cache_config["disk_cache_max_gb"], 10);

  fs::create_directories(dir_ / "other");
  std::ofstream(dir_ / "other" / "config.json") << "{}";
  auto overridden = parse({"--cache-config", config, "--model", (dir_ / "other").string()});
  ASSERT_TRUE(overridden.options);
  EXPECT_EQ(overridden.options->model_path, (dir_ / "other").string());
}

TEST_F(OptionsTest, TildeIsExpandedInTheConfigFile) {
  const char* home = std::getenv("HOME");
  ASSERT_NE(home, nullptr);
  ServerOptions options;
  apply_config_file(nlohmann::json::parse(R"({"model": {"path": "~/some/model"}})"), "c.json", {},
                    options);
  EXPECT_EQ(options.model_path, std::string(home) + "/some/model");
}

TEST_F(OptionsTest, UnknownKeysWarnAndBadValuesFail) {
  ServerOptions options;
  apply_config_file(nlohmann::json::parse(R"({"cache": {}, "extra": 1, "model": {"colour": 2}})"),
                    "c.json", {}, options);
  ASSERT_EQ(options.warnings.size(), 2u);
  EXPECT_NE(options.warnings[0].find("extra"), std::string::npos);
  EXPECT_NE(options.warnings[1].find("model.colour"), std::string::npos);

  try {
    apply_config_file(nlohmann::json::parse(R"({"model": {"hybrid_attention": "yes"}})"), "c.json",
                      {}, options);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("model.hybrid_attention"), std::string::npos);
  }
  EXPECT_THROW(apply_config_file(nlohmann::json::parse(R"({"cache": 3})"), "c.json", {}, options),
               Error);
}

TEST_F(OptionsTest, MissingModelIsAnErrorNamingIt) {
  try {
    parse({"--model", (dir_ / "nope").string()});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("nope"), std::string::npos);
  }
}

// --cpu-moe: every layer's routed experts on the CPU; --n-cpu-moe N: the first N layers'. Both
// parse whatever the device (they do nothing on the CPU, as the help says), exclude each other,
// and N is not negative.
TEST_F(OptionsTest, CpuMoeFlagsSetTheLayersWhoseExpertsStayOnTheCpu) {
  EXPECT_EQ(parse({}).options->cpu_moe_layers, 0);
  EXPECT_EQ(parse({"--device", "vulkan", "--cpu-moe"}).options->cpu_moe_layers, INT32_MAX);
  EXPECT_EQ(parse({"--device", "vulkan", "--n-cpu-moe", "3"}).options->cpu_moe_layers, 3);
  EXPECT_EQ(parse({"--cpu-moe"}).options->cpu_moe_layers, INT32_MAX);
  EXPECT_EQ(parse({"--n-cpu-moe", "0"}).options->cpu_moe_layers, 0);
  EXPECT_FALSE(parse({"--n-cpu-moe", "-1"}).options);
  EXPECT_FALSE(parse({"--cpu-moe", "--n-cpu-moe", "2"}).options);
  testing::internal::CaptureStdout();
  parse({"--help"});
  const std::string help = testing::internal::GetCapturedStdout();
  EXPECT_NE(help.find("--cpu-moe"), std::string::npos);
  EXPECT_NE(help.find("--n-cpu-moe"), std::string::npos);
  EXPECT_NE(help.find("No effect with --device cpu"), std::string::npos);
}

// --mmproj-offload auto|on|off: where a device model's vision tower runs (auto by default).
TEST_F(OptionsTest, MmprojOffloadSaysWhereTheTowerRuns) {
  using Offload = ModelLoadOptions::TowerOffload;
  EXPECT_EQ(parse({}).options->vision_offload, Offload::kAuto);
  EXPECT_EQ(parse({"--device", "vulkan", "--mmproj-offload", "on"}).options->vision_offload,
            Offload::kOn);
  EXPECT_EQ(parse({"--mmproj-offload", "OFF"}).options->vision_offload, Offload::kOff);
  EXPECT_EQ(parse({"--mmproj-offload", "auto"}).options->vision_offload, Offload::kAuto);
  EXPECT_FALSE(parse({"--mmproj-offload", "gpu"}).options);
}

TEST_F(OptionsTest, InvalidFlagValuesExitNonZero) {
  EXPECT_NE(parse({"--log-format", "xml"}).exit_code, 0);
  EXPECT_NE(parse({"--port", "abc"}).exit_code, 0);
  EXPECT_FALSE(parse({"--port", "abc"}).options);
}

TEST_F(OptionsTest, ParallelIsOneToSixtyFourAndTheBatchMemoryNotNegative) {
  EXPECT_EQ(parse({}).options->parallel, 4);
  // Speculation is not batched: alone it keeps one slot; with --parallel 2 it is refused below.
  EXPECT_EQ(parse({"--speculative", "mtp"}).options->parallel, 1);
  EXPECT_EQ(parse({}).options->max_batch_memory_mb, 0);
  auto parsed = parse({"--parallel", "8", "--max-batch-memory", "4096"});
  EXPECT_EQ(parsed.options->parallel, 8);
  EXPECT_EQ(parsed.options->max_batch_memory_mb, 4096);
  EXPECT_EQ(parse({"--parallel", "64"}).options->parallel, 64);
  for (const char* bad : {"0", "65"}) {
    try {
      parse({"--parallel", bad});
      ADD_FAILURE() << "--parallel " << bad << " was accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("--parallel must be in 1..64"), std::string::npos)
          << e.what();
    }
  }
  EXPECT_THROW(parse({"--max-batch-memory", "-1"}), Error);
}

TEST_F(OptionsTest, SpeculativeDecodingNeedsOneSlot) {
  EXPECT_EQ(parse({"--speculative", "mtp:2"}).options->speculative_tokens, 2);
  try {
    parse({"--speculative", "mtp:2", "--parallel", "2"});
    ADD_FAILURE() << "--speculative with --parallel 2 was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--speculative needs --parallel 1"), std::string::npos)
        << e.what();
  }
}

TEST_F(OptionsTest, KvCacheDtypeIsBf16UnlessInt8OrAFloatTypeIsAsked) {
  EXPECT_EQ(parse({}).options->kv_cache_dtype, DType::kBF16);
  EXPECT_EQ(parse({"--kv-cache-dtype", "int8"}).options->kv_cache_dtype, DType::kInt8);
  EXPECT_EQ(parse({"--kv-cache-dtype", "f32"}).options->kv_cache_dtype, DType::kF32);
  EXPECT_EQ(parse({"--kv-cache-dtype", "f16"}).options->kv_cache_dtype, DType::kF16);
  testing::internal::CaptureStderr();
  auto parsed = parse({"--kv-cache-dtype", "int4"});
  const std::string error = testing::internal::GetCapturedStderr();
  EXPECT_NE(parsed.exit_code, 0);
  EXPECT_FALSE(parsed.options);
  EXPECT_NE(error.find("bf16|int8|f32|f16"), std::string::npos) << error;
  EXPECT_NE(error.find("int4"), std::string::npos) << error;
}

TEST_F(OptionsTest, HelpDocumentsEveryFlagAndKey) {
  testing::internal::CaptureStdout();
  auto parsed = parse({"--help"});
  std::string help = testing::internal::GetCapturedStdout();
  EXPECT_EQ(parsed.exit_code, 0);
  EXPECT_FALSE(parsed.options);
  for (const char* flag : {"--model",
                           "--cache-config",
                           "--host",
                           "--port",
                           "--max-context",
                           "--hybrid-attention",
                           "--disk-kv-restore",
                           "--metrics-port",
                           "--model-id",
                           "--api-key",
                           "--threads",
                           "--default-temperature",
                           "--default-top-p",
                           "--default-top-k",
                           "--default-min-p",
                           "--default-repetition-penalty",
                           "--default-presence-penalty",
                           "--default-frequency-penalty",
                           "--log-format",
                           "--max-body-mb",
                           "--kv-cache-dtype",
                           "--parallel",
                           "--max-batch-memory",
                           "\"cache\"",
                           "\"path\"",
                           "\"hybrid_attention\"",
                           "\"deltanet_state_aware\""}) {
    EXPECT_NE(help.find(flag), std::string::npos) << flag;
  }
}

TEST_F(OptionsTest, PromptNormalizationRulesAreSwitchedByName) {
  ServerOptions options;
  EXPECT_TRUE(options.prompt_normalization.enabled("strip_claude_code_billing_header"));
  EXPECT_FALSE(options.prompt_normalization.enabled("canonical_tool_order"));
  apply_config_file(nlohmann::json::parse(R"({"prompt_normalization":
      {"canonical_tool_order": true, "strip_claude_code_billing_header": false,
       "strip_timestamps": true}})"),
                    "c.json", {}, options);
  EXPECT_TRUE(options.prompt_normalization.enabled("canonical_tool_order"));
  EXPECT_FALSE(options.prompt_normalization.enabled("strip_claude_code_billing_header"));
  ASSERT_EQ(options.warnings.size(), 1u);
  EXPECT_NE(options.warnings[0].find("prompt_normalization.strip_timestamps"), std::string::npos);

  for (const char* bad : {R"({"prompt_normalization": {"canonical_tool_order": "no"}})",
                          R"({"prompt_normalization": {"canonical_tool_order": 0}})",
                          R"({"prompt_normalization": true})"}) {
    try {
      apply_config_file(nlohmann::json::parse(bad), "c.json", {}, options);
      ADD_FAILURE() << "expected an error for " << bad;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("c.json: \"prompt_normalization"), std::string::npos)
          << e.what();
    }
  }
}

// `qmlx cache --help` lists every key the parsers accept, each with its default, and each key
// it lists is accepted (set to its default where that is a JSON value) without a warning.
TEST_F(OptionsTest, ConfigKeysHelpListsEveryAcceptedKey) {
  const std::string help = config_keys_help();
  std::vector<ConfigKeyDoc> keys = cache_config_keys();
  for (const ConfigKeyDoc& key : server_config_keys()) keys.push_back(key);
  for (const ConfigKeyDoc& key : keys) {
    EXPECT_NE(help.find("  " + key.name + " "), std::string::npos) << key.name;
    EXPECT_NE(help.find("(default " + key.default_value + ")"), std::string::npos) << key.name;
    EXPECT_FALSE(key.help.empty()) << key.name;
    nlohmann::json value = nlohmann::json::parse(key.default_value, nullptr, false);
    if (value.is_discarded()) value = "x";
    // "cache.shared.tls" -> {"cache": {"shared": {"tls": value}}}; a shared block needs nodes
    // (and username_env needs password_env).
    nlohmann::json document;
    std::string path = "/" + key.name;
    std::replace(path.begin(), path.end(), '.', '/');
    if (key.name.starts_with("cache.shared.")) {
      document["cache"]["shared"]["nodes"] = {"127.0.0.1:7000"};
      document["cache"]["shared"]["password_env"] = "QMLX_REDIS_PASSWORD";
      if (key.name == "cache.shared.nodes") value = {"127.0.0.1:7001"};
      // The TLS keys need tls on, a certificate its key, and files that can be read.
      if (key.name.starts_with("cache.shared.tls_")) {
        document["cache"]["shared"]["tls"] = true;
        if (key.name.ends_with("_file")) {
          const std::string pem = ::testing::TempDir() + "/qmlx_options_test.pem";
          std::ofstream(pem) << "PEM\n";
          value = pem;
          document["cache"]["shared"]["tls_cert_file"] = pem;
          document["cache"]["shared"]["tls_key_file"] = pem;
        }
      }
    }
    document[nlohmann::json::json_pointer(path)] = value;
    ServerOptions options;
    apply_config_file(document, "c.json", {}, options);
    EXPECT_TRUE(options.warnings.empty()) << key.name;
    EXPECT_TRUE(parse_cache_config(document, "c.json").warnings.empty() ||
                !key.name.starts_with("cache."))
        << key.name;
  }
  // The other direction: a key missing from the tables is not accepted.
  ServerOptions options;
  apply_config_file(nlohmann::json::parse(R"({"model": {"colour": 1}})"), "c.json", {}, options);
  EXPECT_EQ(options.warnings.size(), 1u);
  EXPECT_EQ(parse_cache_config(nlohmann::json::parse(R"({"cache": {"colour": 1}})"), "c.json")
                .warnings.size(),
            1u);
}

// --model-alias repeats (each occurrence one name, never swallowing the next argument) and
// --strict-model-id is off unless given.
TEST_F(OptionsTest, ModelAliasesRepeatAndStrictModelIdIsOptIn) {
  auto plain = parse({"--model", (dir_ / "model").string()});
  ASSERT_TRUE(plain.options);
  EXPECT_FALSE(plain.options->strict_model_id);
  EXPECT_TRUE(plain.options->model_aliases.empty());
  auto strict = parse({"--model", (dir_ / "model").string(), "--model-alias", "a",
                       "--strict-model-id", "--model-alias", "b"});
  ASSERT_TRUE(strict.options);
  EXPECT_TRUE(strict.options->strict_model_id);
  EXPECT_EQ(strict.options->model_aliases, (std::vector<std::string>{"a", "b"}));
}

}  // namespace
}  // namespace qmlx::server
