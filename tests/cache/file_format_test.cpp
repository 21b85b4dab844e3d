#include "cache/file_format.h"

#include <gtest/gtest.h>

#include "cache/capture.h"
#include "fake_session.h"

namespace qmlx {
namespace {

constexpr int kChunk = 16;

PendingWrite sealed_capture(const StateLayout& layout, size_t tokens) {
  std::vector<int32_t> ids = test::make_tokens(3, tokens);
  test::FakeSession session = test::FakeSession::prefilled(layout, ids);
  CaptureOptions options{Hash128{11, 12}, kChunk, SnapshotKind::kPromptEnd, 1234};
  PendingWrite write = capture_state(session, ids, options, [](const Hash128&) { return true; });
  seal_pending(write);
  return write;
}

bool snapshot_valid(std::span<const uint8_t> file) {
  SnapshotHeader h;
  return decode_snapshot_header(file, file.size(), &h).ok() &&
         verify_snapshot_sections(h, file).ok();
}

TEST(SnapshotFile, RoundTripsItsHeader) {
  PendingWrite write = sealed_capture(test::hybrid_layout(), 40);
  SnapshotHeader h;
  ASSERT_TRUE(decode_snapshot_header(write.file, write.file.size(), &h).ok());
  EXPECT_EQ(h.position, 40);
  EXPECT_EQ(h.kind, SnapshotKind::kPromptEnd);
  EXPECT_EQ(h.created_ms, 1234);
  EXPECT_TRUE(h.has_logits);
  EXPECT_EQ(h.id, write.header.id);
  EXPECT_EQ(h.fingerprint, (Hash128{11, 12}));
  EXPECT_TRUE(snapshot_matches_layout(h, test::hybrid_layout(), kChunk));
  EXPECT_FALSE(snapshot_matches_layout(h, test::attention_only_layout(), kChunk));
  EXPECT_TRUE(verify_snapshot_sections(h, write.file).ok());
  EXPECT_EQ(
      decode_chunk_list(std::span<const uint8_t>(write.file)
                            .subspan(h.sections[kChunkList].offset, h.sections[kChunkList].size)),
      write.chunk_list);
}

TEST(SnapshotFile, EveryFlippedByteIsDetected) {
  PendingWrite write = sealed_capture(test::hybrid_layout(), 40);
  ASSERT_TRUE(snapshot_valid(write.file));
  for (size_t i = 0; i < write.file.size(); ++i) {
    write.file[i] ^= 0x10;
    EXPECT_FALSE(snapshot_valid(write.file)) << "byte " << i;
    write.file[i] ^= 0x10;
  }
}

TEST(SnapshotFile, TruncationIsDetected) {
  PendingWrite write = sealed_capture(test::hybrid_layout(), 40);
  for (size_t keep : {size_t(0), size_t(100), kSnapshotHeaderBytes, write.file.size() - 1}) {
    std::vector<uint8_t> cut(write.file.begin(), write.file.begin() + keep);
    EXPECT_FALSE(snapshot_valid(cut)) << keep;
  }
}

TEST(ChunkFile, VerifiesAndDetectsEveryFlippedByte) {
  PendingWrite write = sealed_capture(test::attention_only_layout(), 40);
  ASSERT_EQ(write.chunks.size(), 2u);
  std::vector<uint8_t>& file = write.chunks[1].file;
  const Hash128 name = write.chunk_list[1];
  ChunkHeader h;
  ASSERT_TRUE(verify_chunk(file, name, &h).ok());
  EXPECT_TRUE(chunk_matches_layout(h, test::attention_only_layout(), kChunk));
  EXPECT_FALSE(verify_chunk(file, write.chunk_list[0], &h).ok());  // misnamed
  for (size_t i = 0; i < file.size(); ++i) {
    file[i] ^= 0x01;
    EXPECT_FALSE(verify_chunk(file, name, &h).ok()) << "byte " << i;
    file[i] ^= 0x01;
  }
  file.pop_back();
  EXPECT_FALSE(verify_chunk(file, name, &h).ok());
}

}  // namespace
}  // namespace qmlx
