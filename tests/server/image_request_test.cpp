// Images in requests, every route: the forms the APIs and agents send (OpenAI image_url parts in
// user and tool messages, Anthropic image blocks in user turns and tool results, Responses
// input_image in messages and tool outputs) become GenerationRequest::images in the order the
// messages hold them, each part left as {"type": "image"}; every refusal is a 400 that names
// the part and the reason.
#include <gtest/gtest.h>

#include "image/smart_resize.h"
#include "server/anthropic/anthropic_request.h"
#include "server/common/image_reading.h"
#include "server/chat/chat_request.h"
#include "server/responses/responses_request.h"
#include "tests/server/api_error_of.h"
#include "tests/server/test_images.h"

namespace qmlx::server {
namespace {

using ojson = nlohmann::ordered_json;
using testing::data_url;
using testing::error_of;
using testing::kPngA;
using testing::kPngB;
using testing::test_image_reading;

const ojson kImage = {{"type", "image"}};

ojson chat_body(const std::string& messages) {
  return ojson::parse(R"({"model": "m", "messages": )" + messages + "}");
}

GenerationRequest chat(const ojson& body, const ImageReading& reading = test_image_reading()) {
  return parse_chat_request(body, SamplingDefaults{}, reading);
}

ApiError chat_error(const ojson& body, const ImageReading& reading = test_image_reading()) {
  return error_of([&] { chat(body, reading); });
}

std::string message_of(const ApiError& e) { return e.what(); }

TEST(ImageRequestTest, ChatImagesInUserAndToolMessages) {
  ojson body = chat_body(R"([
      {"role": "user", "content": [{"type": "text", "text": "look"}, {"type": "text", "text": "here"},
          {"type": "image_url", "image_url": {"url": ")" +
                         data_url(kPngA) + R"(", "detail": "high"}},
          {"type": "text", "text": "and"},
          {"type": "image_url", "image_url": ")" +
                         data_url(kPngB) + R"("}]},
      {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function",
          "function": {"name": "shot", "arguments": "{}"}}]},
      {"role": "tool", "tool_call_id": "c1", "content": [
          {"type": "image_url", "image_url": {"url": ")" +
                         data_url(kPngA) + R"("}}]}])");
  GenerationRequest r = chat(body);
  EXPECT_EQ(r.messages[0]["content"],
            ojson::parse(R"([{"type": "text", "text": "look\nhere"}, {"type": "image"},
                             {"type": "text", "text": "and"}, {"type": "image"}])"));
  EXPECT_EQ(r.messages[2]["content"], ojson::array({kImage}));
  ASSERT_EQ(r.images.size(), 3u);
  EXPECT_EQ(r.images[0]->identity, r.images[2]->identity);  // the same picture twice
  EXPECT_NE(r.images[0]->identity, r.images[1]->identity);
  EXPECT_EQ(r.images[0]->num_patches, 4 * testing::kPadsPerTestImage);
  EXPECT_EQ(r.images[0]->grid, (image::GridThw{1, 4, 4}));
}

TEST(ImageRequestTest, TextOnlyContentStaysAString) {
  GenerationRequest r = chat(chat_body(R"([{"role": "user", "content": [
      {"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}])"));
  EXPECT_EQ(r.messages[0]["content"], "a\nb");
  EXPECT_TRUE(r.images.empty());
}

// Claude Code's Read tool on a PNG answers with an image block inside tool_result; a tool
// result becomes its own message before the rest of the user turn, so the images are in the
// order the messages hold them, not the order they came in.
TEST(ImageRequestTest, AnthropicImagesInUserTurnsAndToolResults) {
  ojson body = ojson::parse(R"({"model": "m", "max_tokens": 10, "messages": [
      {"role": "user", "content": "read the screenshot"},
      {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "Read",
                                         "input": {"file_path": "/tmp/a.png"}}]},
      {"role": "user", "content": [
          {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                       "data": ")" +
                            kPngA + R"("}},
          {"type": "text", "text": "compare"},
          {"type": "tool_result", "tool_use_id": "t1", "content": [
              {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                           "data": ")" +
                            kPngB + R"("}}]}]}]})");
  GenerationRequest r = parse_messages_request(body, SamplingDefaults{}, test_image_reading());
  ASSERT_EQ(r.messages.size(), 4u);
  EXPECT_EQ(r.messages[2]["role"], "tool");
  EXPECT_EQ(r.messages[2]["content"], ojson::array({kImage}));
  EXPECT_EQ(r.messages[3]["role"], "user");
  EXPECT_EQ(r.messages[3]["content"],
            ojson::parse(R"([{"type": "image"}, {"type": "text", "text": "compare"}])"));
  ASSERT_EQ(r.images.size(), 2u);
  GenerationRequest a = chat(chat_body(R"([{"role": "user", "content": [
      {"type": "image_url", "image_url": ")" +
                                       data_url(kPngA) + R"("}]}])"));
  EXPECT_EQ(r.images[0]->identity, chat(chat_body(R"([{"role": "user", "content": [
      {"type": "image_url", "image_url": ")" + data_url(kPngB) +
                                                  R"("}]}])"))
                                       .images[0]
                                       ->identity);
  EXPECT_EQ(r.images[1]->identity, a.images[0]->identity);
}

// Codex's view_image answers a function call with an input_image in the output.
TEST(ImageRequestTest, ResponsesImagesInMessagesAndToolOutputs) {
  ojson body = ojson::parse(R"({"model": "m", "input": [
      {"role": "user", "content": [{"type": "input_text", "text": "see"},
          {"type": "input_image", "image_url": ")" +
                            data_url(kPngA) + R"(", "detail": "auto"}]},
      {"type": "function_call", "call_id": "c1", "name": "view_image", "arguments": "{}"},
      {"type": "function_call_output", "call_id": "c1", "output": [
          {"type": "input_image", "image_url": ")" +
                            data_url(kPngB) + R"("}]}]})");
  GenerationRequest r =
      parse_responses_request(body, SamplingDefaults{}, ResponseStore(), test_image_reading());
  ASSERT_EQ(r.messages.size(), 3u);
  EXPECT_EQ(r.messages[0]["content"],
            ojson::parse(R"([{"type": "text", "text": "see"}, {"type": "image"}])"));
  EXPECT_EQ(r.messages[2]["role"], "tool");
  EXPECT_EQ(r.messages[2]["content"], ojson::array({kImage}));
  ASSERT_EQ(r.images.size(), 2u);
  EXPECT_NE(r.images[0]->identity, r.images[1]->identity);
}

TEST(ImageRequestTest, AModelWithoutVisionRefusesNamingThePart) {
  const ojson body = chat_body(R"([{"role": "user", "content": [{"type": "text", "text": "x"},
      {"type": "image_url", "image_url": {"url": ")" +
                               data_url(kPngA) + R"("}}]}])");
  ApiError e = chat_error(body, ImageReading());
  EXPECT_EQ(e.status(), 400);
  EXPECT_EQ(e.param(), "messages[0].content[1]");
  EXPECT_EQ(message_of(e),
            "'messages[0].content[1]' is an image, and this model reads no images: the model "
            "has no vision tower");
  ojson anthropic = ojson::parse(R"({"max_tokens": 5, "messages": [{"role": "user", "content": [
      {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AA=="}}]}]})");
  e = error_of([&] { parse_messages_request(anthropic, SamplingDefaults{}); });
  EXPECT_EQ(e.param(), "messages[0].content[0]");
  EXPECT_NE(message_of(e).find("this model reads no images"), std::string::npos);
}

TEST(ImageRequestTest, RemoteUrlsAndFilesAreRefused) {
  ApiError e = chat_error(chat_body(R"([{"role": "user", "content": [
      {"type": "image_url", "image_url": {"url": "https://example.com/cat.png"}}]}])"));
  EXPECT_EQ(e.status(), 400);
  EXPECT_EQ(e.param(), "messages[0].content[0].image_url.url");
  EXPECT_NE(message_of(e).find("this server fetches nothing"), std::string::npos) << e.what();

  ojson anthropic = ojson::parse(R"({"max_tokens": 5, "messages": [{"role": "user", "content": [
      {"type": "image", "source": {"type": "url", "url": "https://example.com/cat.png"}}]}]})");
  e = error_of([&] { parse_messages_request(anthropic, {}, test_image_reading()); });
  EXPECT_EQ(e.param(), "messages[0].content[0].source");
  EXPECT_NE(message_of(e).find("this server fetches nothing"), std::string::npos) << e.what();

  auto responses = [](const std::string& part) {
    return error_of([&] {
      parse_responses_request(
          ojson::parse(R"({"input": [{"role": "user", "content": [)" + part + "]}]}"), {},
          ResponseStore(), test_image_reading());
    });
  };
  e = responses(R"({"type": "input_image", "image_url": "http://example.com/cat.png"})");
  EXPECT_EQ(e.param(), "input[0].content[0].image_url");
  EXPECT_NE(message_of(e).find("fetches nothing"), std::string::npos) << e.what();
  e = responses(R"({"type": "input_image", "file_id": "file-123"})");
  EXPECT_EQ(e.status(), 400);
  EXPECT_EQ(e.param(), "input[0].content[0].file_id");
  EXPECT_NE(message_of(e).find("stores no files"), std::string::npos) << e.what();
}

TEST(ImageRequestTest, UnreadableImagesAreRefusedNamingThePart) {
  auto with_url = [](const std::string& url) {
    return chat_body(R"([{"role": "user", "content": [{"type": "text", "text": "x"},
        {"type": "image_url", "image_url": {"url": ")" +
                     url + R"("}}]}])");
  };
  ApiError corrupt = chat_error(with_url("data:image/png;base64,AAAAAAAA"));
  EXPECT_EQ(corrupt.status(), 400);
  EXPECT_EQ(corrupt.param(), "messages[0].content[1]");
  EXPECT_NE(message_of(corrupt).find("'messages[0].content[1]' is not an image this server can "
                                     "read: not a PNG, JPEG, WebP or GIF image"),
            std::string::npos)
      << corrupt.what();
  // A PNG cut short inside its header.
  ApiError truncated = chat_error(with_url(data_url(kPngA.substr(0, 40))));
  EXPECT_EQ(truncated.param(), "messages[0].content[1]");
  EXPECT_NE(message_of(truncated).find("is not an image this server can read"), std::string::npos)
      << truncated.what();
  ApiError base64 = chat_error(with_url("data:image/png;base64,@@@@"));
  EXPECT_EQ(base64.param(), "messages[0].content[1].image_url.url");
  EXPECT_NE(message_of(base64).find("is not valid base64"), std::string::npos);
  ApiError plain = chat_error(with_url("data:image/png,abc"));
  EXPECT_NE(message_of(plain).find("without ;base64"), std::string::npos);
}

TEST(ImageRequestTest, TheBoundsAreRefusedNamingTheLimit) {
  const ojson two = chat_body(R"([{"role": "user", "content": [
      {"type": "image_url", "image_url": ")" +
                              data_url(kPngA) + R"("},
      {"type": "image_url", "image_url": ")" +
                              data_url(kPngB) + R"("}]}])");
  ImageReading small = test_image_reading();
  small.limits.max_pixels = 4000;  // under 64 x 64 = 4,096
  ApiError pixels = chat_error(two, small);
  EXPECT_EQ(pixels.status(), 400);
  EXPECT_EQ(pixels.param(), "messages[0].content[0]");
  EXPECT_NE(message_of(pixels).find("is an image over a limit: PNG image is 64x64 = 4096 pixels, "
                                    "over the limit of 4000 pixels (--max-image-pixels)"),
            std::string::npos)
      << pixels.what();
  ImageReading one = test_image_reading();
  one.max_images = 1;
  ApiError count = chat_error(two, one);
  EXPECT_EQ(count.param(), "messages[0].content[1]");
  EXPECT_EQ(message_of(count),
            "'messages[0].content[1]' is image 2 of this request, over the limit of 1 "
            "(--max-images-per-request)");
  EXPECT_EQ(chat(two).images.size(), 2u);
}

TEST(ImageRequestTest, ImagesWhereTheTemplateTakesNoneAreRefused) {
  const std::string part = R"({"type": "image_url", "image_url": ")" + data_url(kPngA) + R"("})";
  ApiError system = chat_error(chat_body(R"([{"role": "system", "content": [)" + part +
                                         R"(]}, {"role": "user", "content": "x"}])"));
  EXPECT_EQ(system.param(), "messages[0].content[0]");
  EXPECT_NE(message_of(system).find("a system message cannot hold images"), std::string::npos);
  ApiError assistant = chat_error(chat_body(R"([{"role": "user", "content": "x"},
      {"role": "assistant", "content": [)" + part +
                                            "]}]"));
  EXPECT_EQ(assistant.param(), "messages[1].content[0]");
  ojson anthropic = ojson::parse(R"({"max_tokens": 5, "system": [{"type": "image", "source":
      {"type": "base64", "media_type": "image/png", "data": ")" +
                                 kPngA + R"("}}],
      "messages": [{"role": "user", "content": "x"}]})");
  ApiError anthropic_system =
      error_of([&] { parse_messages_request(anthropic, {}, test_image_reading()); });
  EXPECT_EQ(anthropic_system.param(), "system[0]");
  ApiError responses = error_of([] {
    parse_responses_request(ojson::parse(R"({"input": [{"role": "developer", "content": [
        {"type": "input_image", "image_url": "data:image/png;base64,AA=="}]}]})"),
                            {}, ResponseStore(), test_image_reading());
  });
  EXPECT_EQ(responses.param(), "input[0].content[0]");
}

// --image-max-tokens lowers what the encoder is given (smart_resize's max_pixels: one token per
// 32 x 32 pixels), never the bound a request is refused at, and never below min_pixels.
TEST(ImageReadingTest, TheTokenBudgetScalesImagesDownWithoutRefusingThem) {
  image::VisionPreprocessConfig qwen;  // min 65,536, max 16,777,216 pixels, 32 x 32 per token
  ImageReading r = image_reading("", qwen, 8294400, 16, 2048);
  EXPECT_EQ(r.preprocess.max_pixels, 2048 * 1024);
  EXPECT_EQ(r.limits.max_pixels, 8294400u);
  EXPECT_EQ(image_reading("", qwen, 8294400, 16, 0).preprocess.max_pixels, 8294400);
  EXPECT_EQ(image_reading("", qwen, 1000000, 16, 4096).preprocess.max_pixels, 1000000);
  EXPECT_EQ(image_reading("", qwen, 8294400, 16, 10).preprocess.max_pixels, qwen.min_pixels);
  // A 3840 x 2160 screenshot under the default budget: scaled to at most 2,048 tokens.
  const image::ResizedSize size = image::smart_resize(
      2160, 3840, r.preprocess.patch_size * r.preprocess.merge_size, r.preprocess.min_pixels,
      r.preprocess.max_pixels);
  EXPECT_LE(int64_t(size.height) * size.width / 1024, 2048);
  EXPECT_GE(int64_t(size.height) * size.width / 1024, 1800);
}

}  // namespace
}  // namespace qmlx::server
