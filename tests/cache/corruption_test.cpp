// Truncated files, flipped bytes and forged contents in chunks, snapshots and token blobs:
// each is detected with its reason, quarantined, counted, and the restore falls back to the
// next candidate or a cold miss, never installing a wrong state.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "base/fault_env.h"
#include "cache_fixture.h"

namespace qmlx {
namespace {

using test::make_tokens;
using test::prefix;

std::vector<uint8_t> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

void write_bytes(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
}

size_t quarantined_files(const std::string& store) {
  const std::string q = store + "/quarantine";
  if (!std::filesystem::exists(q)) return 0;
  return size_t(std::distance(std::filesystem::directory_iterator(q), {}));
}

class Corruption : public test::CacheTest {
 protected:
  // Two resume points for `convo_`: a message_boundary at 32 and a prompt_end at 60.
  void SetUp() override {
    convo_ = make_tokens(21, 80);
    cache_ = open();
    capture(*cache_, prefix(convo_, 32), SnapshotKind::kMessageBoundary);
    capture(*cache_, prefix(convo_, 60), SnapshotKind::kPromptEnd);
    deep_ = prefix_hash(fingerprint_, prefix(convo_, 60), test::kChunkTokens);
    shallow_ = prefix_hash(fingerprint_, prefix(convo_, 32), test::kChunkTokens);
  }

  std::string snapshot_path(const Hash128& id) const {
    return cache_->store_dir() + "/" + DiskStore::snapshot_name(id);
  }
  std::string chunk_path(int index) const {
    auto chain = chain_hashes(fingerprint_, convo_, test::kChunkTokens);
    return cache_->store_dir() + "/" + DiskStore::chunk_name(chain[size_t(index) + 1]);
  }
  SnapshotHeader header_of(const std::vector<uint8_t>& file) {
    SnapshotHeader h;
    EXPECT_TRUE(decode_snapshot_header(file, file.size(), &h).ok());
    return h;
  }

  std::vector<int32_t> convo_;
  std::unique_ptr<PrefixCache> cache_;
  Hash128 deep_, shallow_;
};

TEST_F(Corruption, FlippedSnapshotByteFallsBackToTheNextCandidate) {
  std::vector<uint8_t> file = read_bytes(snapshot_path(deep_));
  SnapshotHeader h = header_of(file);
  file[h.sections[kStates].offset + 5] ^= 0x40;
  write_bytes(snapshot_path(deep_), file);

  RestoreResult r = restore_and_check(*cache_, convo_);
  ASSERT_TRUE(r.hit);
  EXPECT_EQ(r.cached_tokens, 32);
  ASSERT_EQ(r.rejected.size(), 1u);
  EXPECT_EQ(r.rejected[0].reason, RejectReason::kChecksum);
  EXPECT_EQ(cache_->stats().restore_rejected.at("checksum"), 1u);
  EXPECT_EQ(cache_->stats().quarantined, 1u);
  EXPECT_EQ(quarantined_files(cache_->store_dir()), 1u);
  EXPECT_FALSE(std::filesystem::exists(snapshot_path(deep_)));
  // Gone from the index too: the next lookup no longer offers it.
  EXPECT_EQ(cache_->lookup(convo_).front().position, 32);
}

TEST_F(Corruption, DamageToASnapshotAndItsChunkHealsOnTheNextCapture) {
  // One bad write hit the deep snapshot and a chunk it shares: when the snapshot fails, its
  // chunks are checked at once, so the recapture stores a sound chunk instead of trusting it.
  std::vector<uint8_t> file = read_bytes(snapshot_path(deep_));
  file[header_of(file).sections[kStates].offset + 3] ^= 0x11;
  write_bytes(snapshot_path(deep_), file);
  std::vector<uint8_t> chunk = read_bytes(chunk_path(2));
  chunk[chunk.size() - 7] ^= 0x22;
  write_bytes(chunk_path(2), chunk);

  RestoreResult r = restore_and_check(*cache_, convo_);
  EXPECT_EQ(r.cached_tokens, 32);  // the shallow snapshot does not need chunk 2
  EXPECT_EQ(quarantined_files(cache_->store_dir()), 2u);
  capture(*cache_, prefix(convo_, 60), SnapshotKind::kPromptEnd);
  RestoreResult healed = restore_and_check(*cache_, convo_);
  EXPECT_EQ(healed.cached_tokens, 60);
  EXPECT_TRUE(healed.rejected.empty());
}

TEST_F(Corruption, TruncatedSharedChunkMeansAColdMiss) {
  std::vector<uint8_t> file = read_bytes(chunk_path(1));
  file.resize(file.size() / 2);
  write_bytes(chunk_path(1), file);

  RestoreResult r = restore_and_check(*cache_, convo_);
  EXPECT_FALSE(r.hit);
  EXPECT_EQ(r.miss_reason, "rejected");
  // The shallow snapshot named the lost chunk too: it is dropped with it, not tried.
  ASSERT_EQ(r.rejected.size(), 1u);
  EXPECT_EQ(r.rejected[0].reason, RejectReason::kFormat);  // size does not match its header
  EXPECT_EQ(quarantined_files(cache_->store_dir()), 1u);
  EXPECT_FALSE(std::filesystem::exists(snapshot_path(shallow_)));
  EXPECT_EQ(cache_->stats().evictions.at("missing_chunk"), 2u);
  // Both snapshots need the lost chunk: neither is offered any more.
  EXPECT_TRUE(cache_->lookup(convo_).empty());
  // A new capture of the same prefix heals the store.
  capture(*cache_, prefix(convo_, 60), SnapshotKind::kInterval);
  EXPECT_TRUE(capture(*cache_, prefix(convo_, 70), SnapshotKind::kInterval));
  EXPECT_EQ(restore_and_check(*cache_, convo_).cached_tokens, 70);
}

TEST_F(Corruption, ForgedTokenBlobWithValidChecksumsIsCaughtByTheByteCompare) {
  std::vector<uint8_t> file = read_bytes(snapshot_path(deep_));
  SnapshotHeader h = header_of(file);
  int32_t* tokens = reinterpret_cast<int32_t*>(file.data() + h.sections[kTokens].offset);
  tokens[40] += 1;  // inside the tail: the chunk list still matches the prompt
  seal_snapshot(h, file);
  write_bytes(snapshot_path(deep_), file);

  RestoreResult r = restore_and_check(*cache_, convo_);
  ASSERT_TRUE(r.hit);
  EXPECT_EQ(r.cached_tokens, 32);
  EXPECT_EQ(r.rejected.at(0).reason, RejectReason::kTokens);
  EXPECT_EQ(cache_->stats().restore_rejected.at("tokens"), 1u);
}

TEST_F(Corruption, FlippedTokenBlobByteIsACheckSumFailure) {
  std::vector<uint8_t> file = read_bytes(snapshot_path(shallow_));
  SnapshotHeader h = header_of(file);
  file[h.sections[kTokens].offset + 3] ^= 0x01;
  write_bytes(snapshot_path(shallow_), file);
  RestoreResult r = restore_and_check(*cache_, prefix(convo_, 40));
  EXPECT_FALSE(r.hit);
  EXPECT_EQ(r.rejected.at(0).reason, RejectReason::kChecksum);
}

TEST_F(Corruption, ChunkOfAnotherFingerprintIsRejected) {
  std::vector<uint8_t> file = read_bytes(chunk_path(0));
  ChunkHeader h;
  ASSERT_TRUE(decode_chunk_header(file, file.size(), &h).ok());
  h.fingerprint = Hash128{1, 1};
  seal_chunk(h, file);
  write_bytes(chunk_path(0), file);
  RestoreResult r = restore_and_check(*cache_, convo_);
  EXPECT_FALSE(r.hit);
  EXPECT_EQ(r.rejected.at(0).reason, RejectReason::kFingerprint);
  EXPECT_EQ(cache_->stats().restore_rejected.at("fingerprint"), 1u);
}

TEST_F(Corruption, BytesFlippedOnReadAreDetected) {
  cache_.reset();
  FaultEnv env(Env::posix());
  env.corrupt_reads(".kv");
  auto cache = open(&env);
  RestoreResult r = restore_and_check(*cache, convo_);
  EXPECT_FALSE(r.hit);
  EXPECT_EQ(r.rejected.at(0).reason, RejectReason::kChecksum);
}

TEST_F(Corruption, TruncatedSnapshotIsQuarantinedAtStartup) {
  std::vector<uint8_t> file = read_bytes(snapshot_path(deep_));
  file.resize(100);
  write_bytes(snapshot_path(deep_), file);
  cache_ = open();
  EXPECT_EQ(cache_->list().size(), 1u);
  EXPECT_EQ(quarantined_files(cache_->store_dir()), 1u);
  EXPECT_EQ(restore_and_check(*cache_, convo_).cached_tokens, 32);
}

}  // namespace
}  // namespace qmlx
