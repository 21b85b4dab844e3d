#include "cache/hash.h"

#include <gtest/gtest.h>

#include "fake_session.h"

namespace qmlx {
namespace {

TEST(Hash128, HexRoundTrips) {
  Hash128 h{0x0123456789abcdefull, 0xfedcba9876543210ull};
  EXPECT_EQ(h.hex(), "fedcba98765432100123456789abcdef");
  EXPECT_EQ(Hash128::from_hex(h.hex()), h);
  EXPECT_FALSE(Hash128::from_hex("xyz"));
  EXPECT_FALSE(Hash128::from_hex("FEDCBA98765432100123456789ABCDEF"));
}

TEST(Fingerprint, ChangesWithEveryInput) {
  StateLayout layout = test::hybrid_layout();
  Hash128 base = model_fingerprint("qwen3.5 tensors...", layout);
  EXPECT_EQ(base, model_fingerprint("qwen3.5 tensors...", layout));
  EXPECT_NE(base, model_fingerprint("qwen3.5 tensors..!", layout));
  StateLayout f16 = layout;
  f16.kv_dtype = DType::kF16;
  EXPECT_NE(base, model_fingerprint("qwen3.5 tensors...", f16));
  StateLayout int8 = layout;
  int8.kv_dtype = DType::kInt8;
  EXPECT_NE(base, model_fingerprint("qwen3.5 tensors...", int8));
  EXPECT_NE(model_fingerprint("qwen3.5 tensors...", f16),
            model_fingerprint("qwen3.5 tensors...", int8));
  StateLayout wider = layout;
  wider.ssm_heads = 4;
  EXPECT_NE(base, model_fingerprint("qwen3.5 tensors...", wider));
}

TEST(ChainHashes, StartAtTheFingerprintAndExtendPrefixes) {
  const Hash128 f{1, 2};
  std::vector<int32_t> tokens = test::make_tokens(7, 100);
  std::vector<Hash128> chain = chain_hashes(f, tokens, 16);
  ASSERT_EQ(chain.size(), 100u / 16 + 1);
  EXPECT_EQ(chain[0], f);
  for (size_t i = 1; i < chain.size(); ++i) {
    // Independently: each link is the hash of the previous link and that chunk's tokens.
    EXPECT_EQ(chain[i], chain_next(chain[i - 1], std::span(tokens).subspan((i - 1) * 16, 16)));
  }
  // A prefix's chain is a prefix of the chain.
  std::vector<Hash128> shorter = chain_hashes(f, std::span(tokens).first(40), 16);
  EXPECT_TRUE(std::equal(shorter.begin(), shorter.end(), chain.begin()));
  // Changing one token changes every later link, and none before it.
  tokens[35] ^= 1;
  std::vector<Hash128> edited = chain_hashes(f, tokens, 16);
  EXPECT_EQ(edited[2], chain[2]);
  for (size_t i = 3; i < chain.size(); ++i) EXPECT_NE(edited[i], chain[i]);
  // Another fingerprint gives another chain.
  EXPECT_NE(chain_hashes(Hash128{1, 3}, tokens, 16)[1], edited[1]);
}

TEST(PrefixHash, NamesFullChunksAndTails) {
  const Hash128 f{5, 6};
  std::vector<int32_t> tokens = test::make_tokens(9, 40);
  std::vector<Hash128> chain = chain_hashes(f, tokens, 16);
  EXPECT_EQ(prefix_hash(f, std::span(tokens).first(32), 16), chain[2]);
  EXPECT_EQ(prefix_hash(f, tokens, 16), chain_next(chain[2], std::span(tokens).subspan(32)));
  EXPECT_NE(prefix_hash(f, std::span(tokens).first(39), 16), prefix_hash(f, tokens, 16));
}

}  // namespace
}  // namespace qmlx
