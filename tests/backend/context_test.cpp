// The compute context: transfers (in place on shared memory, through staging otherwise), the
// recorder's barriers, a submission that times out, and the on-disk pipeline cache.
#include "backend/vulkan/context.h"

#include <filesystem>
#include <fstream>

#include "backend/vulkan/copy.h"
#include "backend/vulkan/device_probe.h"
#include "backend/vulkan/pipeline_cache_file.h"
#include "base/error.h"
#include "vulkan_fixture.h"

namespace qmlx::vulkan::testing {
namespace {

using ContextTest = VulkanTest;

std::vector<uint8_t> random_bytes(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<uint8_t> v(n);
  for (uint8_t& b : v) b = uint8_t(rng());
  return v;
}

TEST_F(ContextTest, ProbeDescribesTheContextsDevice) {
  const DeviceInfo& d = context().device_info();
  const VulkanProbe probe = probe_vulkan();
  ASSERT_EQ(probe.status, VulkanProbe::Status::kOk);
  ASSERT_LT(size_t(d.index), probe.devices.size());
  EXPECT_EQ(probe.devices[d.index].device_uuid, d.device_uuid);
  EXPECT_TRUE(d.can_run);
  EXPECT_GT(d.max_storage_buffer_range, 0u);
  EXPECT_GT(d.subgroup_size, 0u);
  if (exact_device()) {
    EXPECT_NE(d.name.find("llvmpipe"), std::string::npos);
    EXPECT_EQ(d.driver_name, "llvmpipe");
    EXPECT_EQ(d.type, DeviceType::kCpu);
  }
}

TEST_F(ContextTest, UploadDownloadRoundTripsAtOffsets) {
  const std::vector<uint8_t> bytes = random_bytes(1 << 20, 1);
  Buffer b = context().create_buffer(bytes.size() + 64);
  context().upload(b, 12, bytes.data(), bytes.size());
  std::vector<uint8_t> back(bytes.size());
  context().download(b, 12, back.data(), back.size());
  EXPECT_EQ(back, bytes);
}

TEST_F(ContextTest, StagingPathRoundTripsThroughTheDevice) {
  ContextOptions options = base_options();
  options.force_staging = true;
  auto staged = Context::create(options);
  const size_t before = staged->instance().validation_message_count();
  EXPECT_FALSE(staged->unified_memory());
  {
    // Over 64 MiB: more than one staging chunk each way.
    const std::vector<uint8_t> bytes = random_bytes((size_t(70) << 20) + 48, 2);
    Buffer a = staged->create_buffer(bytes.size()), b = staged->create_buffer(bytes.size());
    EXPECT_EQ(a.mapped(), nullptr);
    staged->upload(a, 0, bytes.data(), bytes.size());
    CommandRecorder recorder(*staged);
    record_copy(recorder, a, 0, b, 0, bytes.size());
    recorder.submit_and_wait();
    std::vector<uint8_t> back(bytes.size());
    staged->download(b, 0, back.data(), back.size());
    EXPECT_TRUE(back == bytes);
  }
  expect_no_validation_messages(staged->instance(), before);
}

TEST_F(ContextTest, RecorderPlacesBarriersOnlyBetweenDependentWork) {
  const size_t n = 4096;
  const std::vector<uint8_t> bytes = random_bytes(n, 3);
  Buffer a = context().create_buffer(n), b = context().create_buffer(n),
         c = context().create_buffer(n), d = context().create_buffer(n),
         e = context().create_buffer(n);
  context().upload(a, 0, bytes.data(), n);
  context().upload(c, 0, bytes.data(), n);
  CommandRecorder recorder(context());
  record_copy(recorder, a, 0, b, 0, n);  // a -> b
  record_copy(recorder, c, 0, d, 0, n);  // c -> d: independent
  EXPECT_EQ(recorder.barrier_count(), 0u);
  record_copy(recorder, b, 0, e, 0, n / 2);  // reads what the first copy wrote
  EXPECT_EQ(recorder.barrier_count(), 1u);
  record_copy(recorder, d, n / 2, e, n / 2, n / 2);  // another half of e: no conflict
  EXPECT_EQ(recorder.barrier_count(), 1u);
  // Reads e, just written (overwriting a, read before the first barrier, alone would not wait).
  record_copy(recorder, e, 0, a, 0, n);
  EXPECT_EQ(recorder.barrier_count(), 2u);
  record_copy(recorder, b, 0, e, 0, n);  // writes e, which the last copy read
  EXPECT_EQ(recorder.barrier_count(), 3u);
  EXPECT_EQ(recorder.dispatch_count(), 6u);
  recorder.submit_and_wait();
  std::vector<uint8_t> back(n);
  context().download(a, 0, back.data(), n);
  EXPECT_TRUE(back == bytes);
  context().download(e, 0, back.data(), n);
  EXPECT_TRUE(back == bytes);
  EXPECT_THROW(recorder.submit_and_wait(), Error);  // once only
}

TEST_F(ContextTest, TimeoutIsAnErrorNotAHang) {
  ContextOptions options = base_options();
  options.fence_timeout = std::chrono::milliseconds(0);
  auto impatient = Context::create(options);
  const size_t before = impatient->instance().validation_message_count();
  {
    const size_t bytes = size_t(16) << 20;
    Buffer a = impatient->create_buffer(bytes), b = impatient->create_buffer(bytes);
    CommandRecorder recorder(*impatient);
    // 128 MiB of traffic: far longer than the zero wait allowed, short enough to drain below.
    for (int i = 0; i < 4; ++i) record_copy(recorder, a, 0, b, 0, bytes);
    try {
      recorder.submit_and_wait();
      FAIL() << "a zero timeout passed";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("did not finish within 0 ms"), std::string::npos)
          << e.what();
    }
    try {
      impatient->check_usable();
      FAIL() << "a timed-out context stayed usable";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("unusable"), std::string::npos) << e.what();
    }
    EXPECT_THROW(impatient->create_buffer(16), Error);
    // The work goes on after the timeout; its buffers must outlive it.
    EXPECT_TRUE(impatient->drain_pending());
  }
  expect_no_validation_messages(impatient->instance(), before);
}

class PipelineCacheTest : public VulkanTest {
 protected:
  void SetUp() override {
    VulkanTest::SetUp();
    if (IsSkipped()) return;
    dir_ = std::filesystem::path(::testing::TempDir()) /
           ("qmlx-vulkan-cache-" + std::to_string(std::random_device{}()));
    std::filesystem::remove_all(dir_);
    path_ = pipeline_cache_path(dir_.string(), context().device_info());
  }
  void TearDown() override {
    std::filesystem::remove_all(dir_);
    VulkanTest::TearDown();
  }

  // Opens a context on the cache, runs a copy, closes it (which saves the cache); returns the
  // bytes the context found in the cache file.
  size_t run_with_cache() {
    ContextOptions options = base_options();
    options.use_pipeline_cache = true;
    options.pipeline_cache_dir = dir_.string();
    auto ctx = Context::create(options);
    const size_t before = ctx->instance().validation_message_count();
    const size_t loaded = ctx->pipelines().loaded_cache_bytes();
    {
      Buffer a = ctx->create_buffer(256), b = ctx->create_buffer(256);
      CommandRecorder recorder(*ctx);
      record_copy(recorder, a, 0, b, 0, 256);
      recorder.submit_and_wait();
    }
    EXPECT_EQ(ctx->pipelines().created(), 1u);
    expect_no_validation_messages(ctx->instance(), before);
    return loaded;
  }

  std::vector<char> file_bytes() {
    std::ifstream in(path_, std::ios::binary);
    return std::vector<char>((std::istreambuf_iterator<char>(in)), {});
  }
  void write_file(const std::vector<char>& bytes) {
    std::ofstream out(path_, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), std::streamsize(bytes.size()));
  }

  std::filesystem::path dir_;
  std::string path_;
};

TEST_F(PipelineCacheTest, SavedOnCloseAndLoadedByTheNextContext) {
  EXPECT_EQ(run_with_cache(), 0u);
  ASSERT_TRUE(std::filesystem::exists(path_)) << path_;
  // The file name is the device's UUID and driver version.
  EXPECT_NE(path_.find(uuid_hex(context().device_info().device_uuid)), std::string::npos);
  EXPECT_GT(run_with_cache(), 0u);
}

TEST_F(PipelineCacheTest, CorruptFilesAreIgnored) {
  run_with_cache();
  const std::vector<char> good = file_bytes();
  // Our 32-byte header and at least the driver's 32 (lavapipe 22.3 stores no more than that).
  ASSERT_GE(good.size(), 64u);

  std::vector<char> flipped = good;
  flipped[good.size() - 5] ^= 0x5a;  // payload byte: the checksum catches it
  write_file(flipped);
  EXPECT_EQ(run_with_cache(), 0u);

  write_file(std::vector<char>(good.begin(), good.begin() + good.size() / 2));  // truncated
  EXPECT_EQ(run_with_cache(), 0u);

  write_file({'n', 'o', 't', ' ', 'a', ' ', 'c', 'a', 'c', 'h', 'e'});
  EXPECT_EQ(run_with_cache(), 0u);

  // Each run above rewrote a good file on close.
  EXPECT_GT(run_with_cache(), 0u);
}

TEST_F(PipelineCacheTest, DataForAnotherDeviceIsIgnored) {
  run_with_cache();
  DeviceInfo other = context().device_info();
  other.pipeline_cache_uuid[0] ^= 1;
  EXPECT_TRUE(read_pipeline_cache(path_, other).empty());
  EXPECT_FALSE(read_pipeline_cache(path_, context().device_info()).empty());
}

}  // namespace
}  // namespace qmlx::vulkan::testing
