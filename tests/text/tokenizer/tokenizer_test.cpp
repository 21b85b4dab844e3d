#include "text/tokenizer/tokenizer.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <thread>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "fixtures.h"

namespace qmlx {
namespace {

using Ids = std::vector<int32_t>;
using testing::added_token;
using testing::bl;
using testing::byte_level_tokenizer;

// Bytes are ids 0..255; merges add "he" = 256, "ll" = 257, "hell" = 258, "hello" = 259.
nlohmann::json hello_tokenizer() {
  return byte_level_tokenizer({{"h", "e"}, {"l", "l"}, {"he", "ll"}, {"hell", "o"}});
}

Ids bytes_of(std::string_view text) {
  Ids ids;
  for (char c : text) ids.push_back(static_cast<uint8_t>(c));
  return ids;
}

Ids concat(std::initializer_list<Ids> parts) {
  Ids out;
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

TEST(Tokenizer, EncodesWithMergesAndDecodesBack) {
  auto tok = Tokenizer::from_json(hello_tokenizer());
  EXPECT_EQ(tok->encode("hello"), (Ids{259}));
  EXPECT_EQ(tok->encode("hell!"), (Ids{258, '!'}));
  EXPECT_EQ(tok->encode("ohe"), (Ids{'o', 256}));
  EXPECT_EQ(tok->decode(Ids{259, ' ', 256}), "hello he");
  EXPECT_EQ(tok->vocab_size(), 260);
  EXPECT_EQ(tok->token_id(bl("hell")), 258);
  EXPECT_EQ(tok->token_text(' '), bl(" "));
  EXPECT_EQ(tok->token_bytes(' '), " ");
  EXPECT_EQ(tok->encode(""), Ids{});
}

TEST(Tokenizer, InvalidUtf8InputIsRepairedNotFatal) {
  auto tok = Tokenizer::from_json(hello_tokenizer());
  EXPECT_EQ(tok->encode("a\xFF"), concat({bytes_of("a"), bytes_of("\xEF\xBF\xBD")}));
}

TEST(Tokenizer, SpecialTokensAreMatchedBeforeBpeUnlessParsingIsOff) {
  nlohmann::json spec = hello_tokenizer();
  spec["added_tokens"] = {added_token(300, "<|s|>", true), added_token(301, "<w>", false)};
  auto tok = Tokenizer::from_json(spec);
  EXPECT_EQ(tok->encode("hello<|s|>hello"), (Ids{259, 300, 259}));
  // parse_special=false: special tokens are plain text; non-special added tokens still
  // match (Hugging Face's split_special_tokens behaves the same).
  EXPECT_EQ(tok->encode("<|s|><w>", false), concat({bytes_of("<|s|>"), Ids{301}}));
  EXPECT_EQ(tok->decode(Ids{259, 300, 301}), "hello<|s|><w>");
  EXPECT_EQ(tok->decode(Ids{259, 300, 301}, /*skip_special=*/true), "hello<w>");
  EXPECT_TRUE(tok->is_special(300));
  EXPECT_FALSE(tok->is_special(301));
  EXPECT_FALSE(tok->is_special(259));
  EXPECT_EQ(tok->token_id("<|s|>"), 300);
  EXPECT_EQ(tok->token_text(300), "<|s|>");
  EXPECT_EQ(tok->vocab_size(), 302);
}

TEST(Tokenizer, LongestAddedTokenWinsAtTheLeftmostPosition) {
  nlohmann::json spec = hello_tokenizer();
  spec["added_tokens"] = {added_token(300, "<a>", true), added_token(301, "<a><b>", true),
                          added_token(302, "a><", true)};
  auto tok = Tokenizer::from_json(spec);
  EXPECT_EQ(tok->encode("<a><b>"), (Ids{301}));
  EXPECT_EQ(tok->encode("<a><c>"), concat({Ids{300}, bytes_of("<c>")}));
  EXPECT_EQ(tok->encode("x<a><"), concat({bytes_of("x"), Ids{300}, bytes_of("<")}));
}

TEST(Tokenizer, StripFlagsAbsorbNeighbouringWhitespace) {
  nlohmann::json spec = hello_tokenizer();
  spec["added_tokens"] = {added_token(300, "<L>", true, /*lstrip=*/true),
                          added_token(301, "<R>", true, false, /*rstrip=*/true)};
  auto tok = Tokenizer::from_json(spec);
  EXPECT_EQ(tok->encode("a \t <L> b"), concat({bytes_of("a"), Ids{300}, bytes_of(" b")}));
  EXPECT_EQ(tok->encode("a <R> \n b"), concat({bytes_of("a "), Ids{301}, bytes_of("b")}));
  EXPECT_EQ(tok->encode("<R> <L>"), (Ids{301, 300}));
}

TEST(Tokenizer, SingleWordTokensNeedWordBoundaries) {
  nlohmann::json spec = hello_tokenizer();
  spec["added_tokens"] = {added_token(300, "tok", false, false, false, false, /*single=*/true)};
  auto tok = Tokenizer::from_json(spec);
  EXPECT_EQ(tok->encode("a tok."), concat({bytes_of("a "), Ids{300}, bytes_of(".")}));
  EXPECT_EQ(tok->encode("atok"), bytes_of("atok"));
  EXPECT_EQ(tok->encode("toks"), bytes_of("toks"));
}

TEST(Tokenizer, NormalizedAddedTokensMatchAfterNormalization) {
  nlohmann::json spec = hello_tokenizer();
  spec["normalizer"] = {{"type", "Lowercase"}};
  spec["added_tokens"] = {added_token(300, "yes", false, false, false, /*normalized=*/true),
                          added_token(301, "NO", false, false, false, /*normalized=*/false)};
  auto tok = Tokenizer::from_json(spec);
  EXPECT_EQ(tok->encode("YES hello"), concat({Ids{300}, bytes_of(" "), Ids{259}}));
  // Raw-text tokens see the input before lowercasing.
  EXPECT_EQ(tok->encode("NO"), (Ids{301}));
  EXPECT_EQ(tok->encode("no"), bytes_of("no"));
}

TEST(Tokenizer, NormalizerRunsBetweenAddedTokens) {
  nlohmann::json spec = hello_tokenizer();
  spec["normalizer"] = {{"type", "NFC"}};
  spec["added_tokens"] = {added_token(300, "<s>", true)};
  auto tok = Tokenizer::from_json(spec);
  EXPECT_EQ(tok->encode("e\xCC\x81<s>e\xCC\x81"),
            concat({bytes_of("\xC3\xA9"), Ids{300}, bytes_of("\xC3\xA9")}));
}

TEST(Tokenizer, IdsOutsideTheVocabularyDecodeToNothing) {
  auto tok = Tokenizer::from_json(hello_tokenizer());
  EXPECT_EQ(tok->decode(Ids{259, 5000, -1, 259}), "hellohello");
  EXPECT_EQ(tok->token_text(5000), "");
  EXPECT_FALSE(tok->token_id("nope").has_value());
}

TEST(Tokenizer, ConcurrentEncodesAgreeWithSerialOnes) {
  auto tok = Tokenizer::from_json(hello_tokenizer());
  std::vector<std::string> texts;
  for (int i = 0; i < 64; ++i) texts.push_back("hello " + std::to_string(i * 7919) + " hell");
  std::vector<Ids> expected;
  for (const auto& t : texts) expected.push_back(tok->encode(t));
  std::vector<int> mismatches(4, 0);
  std::vector<std::thread> threads;
  for (int w = 0; w < 4; ++w) {
    threads.emplace_back([&, w] {
      for (int round = 0; round < 50; ++round) {
        for (size_t i = 0; i < texts.size(); ++i) {
          size_t k = (i + w * 13 + round) % texts.size();
          if (tok->encode(texts[k]) != expected[k]) ++mismatches[w];
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(mismatches, std::vector<int>(4, 0));
}

TEST(StreamingDetokenizer, EmitsOnlyCompleteCharacters) {
  auto tok = Tokenizer::from_json(hello_tokenizer());
  StreamingDetokenizer stream(*tok);
  EXPECT_EQ(stream.push(259), "hello");
  const std::string smile = "\xF0\x9F\x99\x82";  // 🙂 as four byte tokens
  EXPECT_EQ(stream.push(0xF0), "");
  EXPECT_EQ(stream.push(0x9F), "");
  EXPECT_EQ(stream.push(0x99), "");
  EXPECT_EQ(stream.push(0x82), smile);
  EXPECT_EQ(stream.push('!'), "!");
  EXPECT_EQ(stream.finish(), "");
}

TEST(StreamingDetokenizer, ConcatenationEqualsDecodeIncludingBrokenBytes) {
  nlohmann::json spec = hello_tokenizer();
  spec["added_tokens"] = {added_token(300, "<|s|>", true)};
  auto tok = Tokenizer::from_json(spec);
  // A truncated 3-byte character, interrupted by a special token, and a dangling lead byte.
  Ids ids = {259, 0xE4, 0xBD, 300, 'a', 0xF0, 0x9F, 0x99, 0x82, 0xE4};
  for (bool skip : {false, true}) {
    StreamingDetokenizer stream(*tok, skip);
    std::string text;
    for (int32_t id : ids) {
      std::string piece = stream.push(id);
      text += piece;
    }
    std::string tail = stream.finish();
    EXPECT_EQ(tail, "\xEF\xBF\xBD");  // the dangling E4, as decode() renders it
    EXPECT_EQ(text + tail, tok->decode(ids, skip));
  }
}

TEST(StreamingDetokenizer, PositionDependentDecoderStreamsByRedecoding) {
  const std::string m = "\xE2\x96\x81";
  nlohmann::json spec = {
      {"model",
       {{"type", "BPE"},
        {"vocab", {{m + "Hi", 0}, {m + "there", 1}, {"!", 2}}},
        {"merges", nlohmann::json::array()}}},
      {"decoder", {{"type", "Metaspace"}, {"replacement", m}, {"prepend_scheme", "always"}}}};
  auto tok = Tokenizer::from_json(spec);
  EXPECT_FALSE(tok->decodes_per_token());
  StreamingDetokenizer stream(*tok);
  std::string text = stream.push(0);
  EXPECT_EQ(text, "Hi");
  text += stream.push(1);
  text += stream.push(2);
  text += stream.finish();
  EXPECT_EQ(text, "Hi there!");
  EXPECT_EQ(text, tok->decode(Ids{0, 1, 2}));
}

TEST(Tokenizer, FromFileAcceptsFileOrFolderAndNamesBadFiles) {
  auto dir =
      std::filesystem::temp_directory_path() / ("qmlx_tok_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "tokenizer.json") << hello_tokenizer().dump();
  EXPECT_EQ(Tokenizer::from_file(dir.string())->encode("hello"), (Ids{259}));
  EXPECT_EQ(Tokenizer::from_file((dir / "tokenizer.json").string())->encode("hello"), (Ids{259}));

  nlohmann::json bad = hello_tokenizer();
  bad["pre_tokenizer"] = {{"type", "UnicodeScripts"}};
  std::ofstream(dir / "bad.json") << bad.dump();
  try {
    Tokenizer::from_file((dir / "bad.json").string());
    FAIL() << "accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("UnicodeScripts"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("bad.json"), std::string::npos);
  }
  std::ofstream(dir / "broken.json") << "{not json";
  EXPECT_THROW(Tokenizer::from_file((dir / "broken.json").string()), Error);
  EXPECT_THROW(Tokenizer::from_file((dir / "missing.json").string()), Error);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace qmlx
