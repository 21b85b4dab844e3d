// A checkpoint whose preprocessor_config.json does not give its vision tower's patch geometry (a
// fine-tune or converter that changed one file and not the other) still loads, as the text
// model: one warning at load names both values, and an image request gets the 400 a model
// without a tower gives, with that reason. The files agreeing (or no preprocessor_config.json,
// whose defaults are Qwen3.5's, as the generated tower is) keep images on. The real loader on
// a tiny generated model (model_writer.h, as `qmlx make-model --vision` writes it).
#include <gtest/gtest.h>
#include <httplib.h>

#include <filesystem>
#include <fstream>

#include <unistd.h>

#include "base/logging.h"
#include "modelgen/model_writer.h"
#include "server/routes/api_server.h"
#include "server/scheduling/runtime_loader.h"
#include "tests/model/captured_log.h"
#include "tests/server/fake_runtime.h"
#include "tests/server/test_images.h"

namespace qmlx::server {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using qmlx::testing::lines_containing;
using qmlx::testing::stderr_lines;

class VisionGeometryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    set_log_level(LogLevel::kInfo);  // the warnings under test; another test may have raised it
    write_model(16);
  }
  // A tiny Qwen3.5 with a tower of `patch` x `patch` patches (temporal 2, merge 2, as Qwen3.5's)
  // and the preprocessor_config.json that fits it.
  void write_model(int patch) {
    fs::remove_all(dir_);
    modelgen::ModelOptions options;
    options.arch = modelgen::Arch::kQwen35;
    options.shape = modelgen::default_shape(options.arch);
    options.shape.vision = true;
    options.shape.vision_tower.patch = patch;
    options.seed = 29;
    modelgen::write_random_model(options, dir_);
  }
  void TearDown() override {
    if (server_) server_->stop(std::chrono::milliseconds(2000));
    fs::remove_all(dir_);
  }

  // Sets `key` of the model's preprocessor_config.json.
  void set_preprocessor(const std::string& key, int value) {
    const fs::path path = fs::path(dir_) / "preprocessor_config.json";
    json config = json::parse(std::ifstream(path));
    config[key] = value;
    std::ofstream(path) << config.dump(2);
  }

  // Loads the model; its warnings (the whole log lines) go to `warnings`.
  void load() {
    const auto lines = stderr_lines([&] { runtime_ = load_model_runtime(dir_, ServerOptions{}); });
    warnings_ = lines_containing(lines, " warn ");
  }

  // POSTs `body` to `path` of a server running the loaded model.
  httplib::Result post(const std::string& path, const json& body) {
    if (!server_) {
      ServerOptions options;
      options.port = 0;
      options.metrics_port = -1;
      server_ = std::make_unique<ApiServer>(options, registry_, ApiServerSettings{});
      server_->start();
      server_->set_ready(runtime_, hooks_);
      client_ = std::make_unique<httplib::Client>("127.0.0.1", server_->port());
    }
    return client_->Post(path.c_str(), {{"Authorization", "Bearer test"}}, body.dump(),
                         "application/json");
  }

  static json chat_with_image() {
    return {{"max_tokens", 2},
            {"temperature", 0},
            {"messages",
             {{{"role", "user"},
               {"content",
                {{{"type", "text"}, {"text", "look"}},
                 {{"type", "image_url"},
                  {"image_url", {{"url", testing::data_url(testing::kPngA)}}}}}}}}}};
  }

  // The model loaded with one warning, `warning`; an image is the text-only model's 400 with
  // it as the reason, and text is still answered.
  void expect_text_model_with(const std::string& warning) {
    ASSERT_TRUE(runtime_);
    ASSERT_EQ(warnings_.size(), 1u) << ::testing::PrintToString(warnings_);
    EXPECT_NE(warnings_[0].find(" warn images are turned off: " + warning), std::string::npos)
        << warnings_[0];
    EXPECT_EQ(runtime_->vision_unavailable, warning);
    EXPECT_FALSE(runtime_->encode_images);

    auto image = post("/v1/chat/completions", chat_with_image());
    ASSERT_TRUE(image);
    EXPECT_EQ(image->status, 400) << image->body;
    const json error = json::parse(image->body)["error"];
    EXPECT_EQ(error["param"], "messages[0].content[1]");
    EXPECT_EQ(error["message"],
              "'messages[0].content[1]' is an image, and this model reads no images: " + warning);

    auto text =
        post("/v1/chat/completions", {{"max_tokens", 2},
                                      {"temperature", 0},
                                      {"messages", {{{"role", "user"}, {"content", "hello"}}}}});
    ASSERT_TRUE(text);
    EXPECT_EQ(text->status, 200) << text->body;
  }

  const std::string dir_ =
      (fs::temp_directory_path() / ("qmlx-vision-geometry-" + std::to_string(::getpid()))).string();
  std::shared_ptr<ModelRuntime> runtime_;
  std::vector<std::string> warnings_;
  MetricsRegistry registry_;
  testing::RecordingHooks hooks_;
  std::unique_ptr<ApiServer> server_;
  std::unique_ptr<httplib::Client> client_;
};

TEST_F(VisionGeometryTest, AMergeSizeThatIsNotTheTowersTurnsImagesOff) {
  set_preprocessor("merge_size", 4);
  load();
  expect_text_model_with(
      "preprocessor_config.json merge_size 4 differs from the vision tower's spatial_merge_size 2");
}

TEST_F(VisionGeometryTest, APatchSizeThatIsNotTheTowersTurnsImagesOff) {
  set_preprocessor("patch_size", 14);
  load();
  expect_text_model_with(
      "preprocessor_config.json patch_size 14 differs from the vision tower's patch_size 16");
}

TEST_F(VisionGeometryTest, EveryDifferenceIsInTheOneWarning) {
  set_preprocessor("temporal_patch_size", 1);
  set_preprocessor("merge_size", 3);
  load();
  expect_text_model_with(
      "preprocessor_config.json temporal_patch_size 1 differs from the vision tower's "
      "temporal_patch_size 2, merge_size 3 differs from the vision tower's spatial_merge_size 2");
}

// Without preprocessor_config.json the preprocessing is Qwen3.5's (16 x 16 patches), which a tower
// of another patch size (an mmproj beside a GGUF file, say) cannot take.
TEST_F(VisionGeometryTest, TheDefaultPreprocessingIsCheckedToo) {
  write_model(8);
  fs::remove(fs::path(dir_) / "preprocessor_config.json");
  load();
  expect_text_model_with(
      "the default preprocessing (no preprocessor_config.json) patch_size 16 differs from the "
      "vision tower's patch_size 8");
}

// The control: the check passes the geometry that works (the image is read and its pads placed;
// image_cache_e2e.py serves such a model's images end to end).
TEST_F(VisionGeometryTest, AgreeingFilesOrNoPreprocessorConfigKeepImagesOn) {
  for (bool without_file : {false, true}) {
    if (without_file) fs::remove(fs::path(dir_) / "preprocessor_config.json");
    load();
    EXPECT_EQ(warnings_.size(), 0u) << ::testing::PrintToString(warnings_);
    EXPECT_EQ(runtime_->vision_unavailable, "");
    EXPECT_TRUE(runtime_->encode_images);
  }
  auto placed = post("/apply-template", chat_with_image());
  ASSERT_TRUE(placed);
  EXPECT_EQ(placed->status, 200) << placed->body;
  EXPECT_EQ(json::parse(placed->body)["images"].size(), 1u);
}

}  // namespace
}  // namespace qmlx::server
