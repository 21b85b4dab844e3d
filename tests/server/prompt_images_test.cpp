// place_prompt_images over the fake model's template and tokenizer: each image's one rendered
// <|image_pad|> becomes its pads as image pad keys, the offsets the cache keeps move with them,
// and a text prompt is left exactly as rendered.
#include <gtest/gtest.h>

#include "base/error.h"
#include "engine/image_pad_keys.h"
#include "server/chat/chat_request.h"
#include "server/scheduling/prompt_images.h"
#include "tests/server/fake_runtime.h"
#include "tests/server/test_images.h"

namespace qmlx::server {
namespace {

using ojson = nlohmann::ordered_json;
using testing::data_url;
using testing::kPadsPerTestImage;

class PromptImagesTest : public ::testing::Test {
 protected:
  // The request's messages rendered with the images placed.
  RenderedPrompt render(const std::string& messages, GenerationRequest* out = nullptr) {
    GenerationRequest r = parse_chat_request(ojson::parse(R"({"messages": )" + messages + "}"),
                                             SamplingDefaults{}, testing::test_image_reading());
    RenderedPrompt prompt = runtime_->render_chat(r.messages, ojson::array(), true, {});
    place_prompt_images(prompt, r.images, runtime_->image_pad_id);
    if (out) *out = std::move(r);
    return prompt;
  }

  static std::string image_part(const std::string& base64) {
    return R"({"type": "image_url", "image_url": ")" + data_url(base64) + R"("})";
  }

  std::vector<int32_t> keys_of(const image::VisionInput& input) {
    std::vector<int32_t> keys(size_t(input.num_patches / 4));
    write_image_pad_keys(input.identity.low, input.identity.high, keys);
    return keys;
  }

  std::shared_ptr<ModelRuntime> runtime_ = testing::make_fake_runtime({.vision = true});
};

TEST_F(PromptImagesTest, EachImageBecomesItsPadsAsKeys) {
  GenerationRequest r;
  RenderedPrompt prompt = render(R"([{"role": "user", "content": [{"type": "text", "text": "a"},)" +
                                     image_part(testing::kPngA) + "," + image_part(testing::kPngB) +
                                     "," + image_part(testing::kPngA) + "]}]",
                                 &r);
  ASSERT_EQ(prompt.images.size(), 3u);
  const int32_t start = *runtime_->tokenizer->token_id("<|vision_start|>");
  const int32_t end = *runtime_->tokenizer->token_id("<|vision_end|>");
  for (size_t k = 0; k < 3; ++k) {
    const PromptImage& image = prompt.images[k];
    EXPECT_EQ(image.input, r.images[k]);
    ASSERT_EQ(image.pads(), kPadsPerTestImage);
    EXPECT_EQ(prompt.ids[size_t(image.first_row) - 1], start);
    EXPECT_EQ(prompt.ids[size_t(image.first_row + image.pads())], end);
    const std::vector<int32_t> pads(prompt.ids.begin() + image.first_row,
                                    prompt.ids.begin() + image.first_row + image.pads());
    EXPECT_EQ(pads, keys_of(*image.input));
    for (int32_t id : pads) EXPECT_TRUE(is_image_pad_key(id));
  }
  auto pads_of = [&](size_t k) {
    return std::vector<int32_t>(
        prompt.ids.begin() + prompt.images[k].first_row,
        prompt.ids.begin() + prompt.images[k].first_row + kPadsPerTestImage);
  };
  EXPECT_EQ(pads_of(0), pads_of(2));  // the same picture: the same keys
  EXPECT_NE(pads_of(0), pads_of(1));
  EXPECT_EQ(std::count(prompt.ids.begin(), prompt.ids.end(), runtime_->image_pad_id), 0);
  // One pad in the text per image; the ids hold all of them.
  const RenderedPrompt text_only = runtime_->render_chat(r.messages, ojson::array(), true, {});
  EXPECT_EQ(prompt.text, text_only.text);
  EXPECT_EQ(prompt.ids.size(), text_only.ids.size() + 3 * (kPadsPerTestImage - 1));
}

TEST_F(PromptImagesTest, TheCachesOffsetsMoveWithThePads) {
  const std::string first = R"({"role": "user", "content": [)" + image_part(testing::kPngA) + "]}";
  GenerationRequest r;
  RenderedPrompt prompt = render("[" + first + R"(, {"role": "assistant", "content": "ok"},
                               {"role": "user", "content": "more"}])",
                                 &r);
  const RenderedPrompt plain = runtime_->render_chat(r.messages, ojson::array(), true, {});
  const int64_t added = kPadsPerTestImage - 1;
  ASSERT_GT(plain.last_user_start, 0);
  EXPECT_EQ(prompt.last_user_start, plain.last_user_start + added);
  EXPECT_EQ(prompt.last_message_end, plain.last_message_end + added);
  EXPECT_EQ(prompt.ids.size(), plain.ids.size() + size_t(added));
}

TEST_F(PromptImagesTest, ATextPromptIsLeftAsRendered) {
  const std::string messages = R"([{"role": "user", "content": "no <|image_pad|> here"}])";
  GenerationRequest r;
  RenderedPrompt prompt = render(messages, &r);
  const RenderedPrompt plain = runtime_->render_chat(r.messages, ojson::array(), true, {});
  EXPECT_EQ(prompt.ids, plain.ids);
  EXPECT_EQ(prompt.last_user_start, plain.last_user_start);
  EXPECT_TRUE(prompt.images.empty());
}

TEST_F(PromptImagesTest, PadsThatDoNotMatchTheImagesAreAnError) {
  // A client that writes the pad token as text beside a real image.
  try {
    render(R"([{"role": "user", "content": [{"type": "text", "text": "<|image_pad|>"},)" +
           image_part(testing::kPngA) + "]}]");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("2 <|image_pad|> tokens for 1 images"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace qmlx::server
