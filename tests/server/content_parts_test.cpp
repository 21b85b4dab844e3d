// ContentParts (how every route joins a message's parts) and parse_data_url (the one image URL
// form the server reads).
#include <gtest/gtest.h>

#include "server/common/content_parts.h"
#include "server/common/data_url.h"

namespace qmlx::server {
namespace {

using ojson = nlohmann::ordered_json;

TEST(ContentPartsTest, TextAloneIsOneStringJoinedAsBefore) {
  ContentParts chat;
  for (const char* text : {"", "a", "", "b"}) chat.add_text(text);
  EXPECT_EQ(chat.take(), "a\n\nb");  // "\n" after text that is not empty
  ContentParts responses(ContentParts::Join::kBetweenParts);
  for (const char* text : {"", "a", "b"}) responses.add_text(text);
  EXPECT_EQ(responses.take(), "\na\nb");  // "\n" between any two parts
  ContentParts empty;
  empty.add_text("");
  EXPECT_TRUE(empty.empty());
}

TEST(ContentPartsTest, ImagesStandBetweenTheTextRuns) {
  ContentParts parts;
  parts.add_image({{"type", "image"}});
  parts.add_text("a");
  parts.add_text("b");
  parts.add_image({{"type", "image"}});
  EXPECT_TRUE(parts.has_images());
  EXPECT_EQ(parts.take(), ojson::parse(R"([{"type": "image"}, {"type": "text", "text": "a\nb"},
                                           {"type": "image"}])"));
}

TEST(DataUrlTest, PartsAndRefusals) {
  auto url = parse_data_url("data:image/png;base64,iVBOR");
  ASSERT_TRUE(url);
  EXPECT_EQ(url->media_type, "image/png");
  EXPECT_TRUE(url->base64);
  EXPECT_EQ(url->data, "iVBOR");
  auto params = parse_data_url("DATA:image/jpeg;name=a.jpg;base64,/9j/");
  ASSERT_TRUE(params);
  EXPECT_EQ(params->media_type, "image/jpeg");
  EXPECT_TRUE(params->base64);
  auto plain = parse_data_url("data:,abc");
  ASSERT_TRUE(plain);
  EXPECT_FALSE(plain->base64);
  EXPECT_EQ(plain->media_type, "");
  EXPECT_FALSE(parse_data_url("https://example.com/a.png"));
  EXPECT_FALSE(parse_data_url("data:image/png;base64"));  // no comma
}

}  // namespace
}  // namespace qmlx::server
