// Images through the HTTP routes over the fake model: refusals in each API's error shape, the
// image flags, and the placed pads as /apply-template and count_tokens show them. Generation
// itself refuses images until the engine side encodes them (encode_images is null here).
#include <gtest/gtest.h>
#include <httplib.h>

#include "server/routes/api_server.h"
#include "tests/server/fake_runtime.h"
#include "tests/server/test_images.h"

namespace qmlx::server {
namespace {

using json = nlohmann::json;
using testing::data_url;
using testing::kPadsPerTestImage;
using testing::kPngA;
using testing::kPngB;

class ImageRoutesTest : public ::testing::Test {
 protected:
  void start(bool vision, ServerOptions options = {}) {
    options.port = 0;
    options.metrics_port = -1;
    server_ = std::make_unique<ApiServer>(options, registry_, ApiServerSettings{});
    server_->start();
    runtime_ = testing::make_fake_runtime({.vision = vision});
    runtime_->vision_preprocess.min_pixels = 1024;  // a 64 x 64 image keeps its size: 4 pads
    server_->set_ready(runtime_, hooks_);
    client_ = std::make_unique<httplib::Client>("127.0.0.1", server_->port());
  }
  void TearDown() override {
    if (server_) server_->stop(std::chrono::milliseconds(2000));
  }
  httplib::Result post(const std::string& path, const json& body) {
    return client_->Post(path.c_str(), {{"Authorization", "Bearer test"}}, body.dump(),
                         "application/json");
  }
  static json chat_with(std::vector<std::string> images) {
    json content = json::array({{{"type", "text"}, {"text", "look"}}});
    for (const auto& image : images) {
      content.push_back({{"type", "image_url"}, {"image_url", {{"url", data_url(image)}}}});
    }
    return {{"messages", {{{"role", "user"}, {"content", content}}}}};
  }
  static json anthropic_with(const std::string& image) {
    return {
        {"max_tokens", 5},
        {"messages",
         {{{"role", "user"},
           {"content",
            {{{"type", "text"}, {"text", "look"}},
             {{"type", "image"},
              {"source", {{"type", "base64"}, {"media_type", "image/png"}, {"data", image}}}}}}}}}};
  }

  MetricsRegistry registry_;
  testing::RecordingHooks hooks_;
  std::shared_ptr<ModelRuntime> runtime_;
  std::unique_ptr<ApiServer> server_;
  std::unique_ptr<httplib::Client> client_;
};

TEST_F(ImageRoutesTest, AModelWithoutVisionAnswers400InEachApisShape) {
  start(/*vision=*/false);
  auto chat = post("/v1/chat/completions", chat_with({kPngA}));
  ASSERT_TRUE(chat);
  EXPECT_EQ(chat->status, 400);
  json error = json::parse(chat->body)["error"];
  EXPECT_EQ(error["param"], "messages[0].content[1]");
  EXPECT_EQ(error["message"],
            "'messages[0].content[1]' is an image, and this model reads no images: the model has "
            "no vision tower");
  auto messages = post("/v1/messages", anthropic_with(kPngA));
  ASSERT_TRUE(messages);
  EXPECT_EQ(messages->status, 400);
  json body = json::parse(messages->body);
  EXPECT_EQ(body["type"], "error");
  EXPECT_NE(body["error"]["message"].get<std::string>().find("this model reads no images"),
            std::string::npos);
}

TEST_F(ImageRoutesTest, ApplyTemplateShowsThePlacedPads) {
  start(/*vision=*/true);
  auto res = post("/apply-template", chat_with({kPngA, kPngB}));
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  json out = json::parse(res->body);
  EXPECT_NE(out["prompt"].get<std::string>().find(
                "look<|vision_start|><|image_pad|><|vision_end|><|vision_start|>"),
            std::string::npos);
  ASSERT_EQ(out["images"].size(), 2u);
  for (const json& image : out["images"]) {
    EXPECT_EQ(image["pads"], kPadsPerTestImage);
    for (int k = 0; k < kPadsPerTestImage; ++k) {
      EXPECT_LT(out["tokens"][image["first_row"].get<size_t>() + size_t(k)].get<int>(), 0);
    }
  }
  auto text = post("/apply-template", {{"messages", {{{"role", "user"}, {"content", "look"}}}}});
  ASSERT_TRUE(text);
  EXPECT_FALSE(json::parse(text->body).contains("images"));
}

TEST_F(ImageRoutesTest, CountTokensCountsThePads) {
  start(/*vision=*/true);
  auto with_image = post("/v1/messages/count_tokens", anthropic_with(kPngA));
  ASSERT_TRUE(with_image);
  ASSERT_EQ(with_image->status, 200) << with_image->body;
  json text = anthropic_with(kPngA);
  text["messages"][0]["content"].erase(1);
  auto without = post("/v1/messages/count_tokens", text);
  const int vision_block = 3;  // <|vision_start|>, the pads, <|vision_end|>
  EXPECT_EQ(
      json::parse(with_image->body)["input_tokens"].get<int>(),
      json::parse(without->body)["input_tokens"].get<int>() + vision_block - 1 + kPadsPerTestImage);
}

TEST_F(ImageRoutesTest, TheImageFlagsBoundRequests) {
  ServerOptions options;
  options.max_images_per_request = 1;
  options.max_image_pixels = 4000;
  start(/*vision=*/true, options);
  auto two = post("/v1/chat/completions", chat_with({kPngA, kPngB}));
  ASSERT_TRUE(two);
  EXPECT_EQ(two->status, 400);
  // The first image is already over the pixel bound (64 x 64 = 4,096).
  EXPECT_NE(json::parse(two->body)["error"]["message"].get<std::string>().find(
                "over the limit of 4000 pixels (--max-image-pixels)"),
            std::string::npos)
      << two->body;
}

TEST_F(ImageRoutesTest, ARuntimeWithoutAnEncoderRefusesImages) {
  start(/*vision=*/true);
  auto res = post("/v1/chat/completions", chat_with({kPngA}));
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 400);
  EXPECT_NE(
      json::parse(res->body)["error"]["message"].get<std::string>().find("has no vision encoder"),
      std::string::npos)
      << res->body;
}

}  // namespace
}  // namespace qmlx::server
