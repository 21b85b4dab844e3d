#include "text/tokenizer/decoder.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "fixtures.h"

namespace qmlx {
namespace {

using testing::bl;

std::string run(const nlohmann::json& spec, std::vector<std::string> tokens) {
  make_decoder(spec, "test")->decode_chain(tokens);
  std::string joined;
  for (const auto& t : tokens) joined += t;
  return joined;
}

TEST(Decoder, ByteLevelRestoresBytesAndPassesForeignTokens) {
  nlohmann::json spec = {{"type", "ByteLevel"}};
  EXPECT_EQ(run(spec, {bl("Hi"), bl(" there"), bl("\n")}), "Hi there\n");
  // A token with characters outside the byte alphabet is kept as written.
  EXPECT_EQ(run(spec, {"<|im_end|>", bl(" \xC3\xA9"), "a b"}),
            "<|im_end|> \xC3\xA9"
            "a b");
  // Partial UTF-8 stays raw so that streaming can join it later.
  EXPECT_EQ(run(spec, {bl("\xF0\x9F")}), "\xF0\x9F");
}

TEST(Decoder, SentencePieceStyleChain) {
  const std::string m = "\xE2\x96\x81";
  nlohmann::json chain = {{"type", "Sequence"},
                          {"decoders",
                           {{{"type", "Replace"}, {"pattern", {{"String", m}}}, {"content", " "}},
                            {{"type", "ByteFallback"}},
                            {{"type", "Fuse"}},
                            {{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}}}}};
  EXPECT_EQ(run(chain, {m + "Hello", m + "w", "<0xC3>", "<0xA9>", "rld"}), "Hello w\xC3\xA9rld");
  EXPECT_TRUE(make_decoder(chain, "t")->is_per_token() == true);
}

TEST(Decoder, MetaspaceDropsThePrependedSpaceOfTheFirstToken) {
  const std::string m = "\xE2\x96\x81";
  nlohmann::json first = {{"type", "Metaspace"}, {"replacement", m}, {"prepend_scheme", "always"}};
  EXPECT_EQ(run(first, {m + "Hello", m + "world"}), "Hello world");
  EXPECT_FALSE(make_decoder(first, "t")->is_per_token());
  nlohmann::json never = first;
  never["prepend_scheme"] = "never";
  EXPECT_EQ(run(never, {m + "Hello"}), " Hello");
  EXPECT_TRUE(make_decoder(never, "t")->is_per_token());
}

TEST(Decoder, UnsupportedTypesAreNamed) {
  try {
    make_decoder({{"type", "WordPiece"}}, "y/tokenizer.json");
    FAIL() << "accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("WordPiece"), std::string::npos);
  }
  EXPECT_EQ(make_decoder(nullptr, "t"), nullptr);
}

}  // namespace
}  // namespace qmlx
