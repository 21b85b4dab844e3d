// --kv-cache-dtype and the prefix cache, end to end (issue 16): a server with int8 K/V never
// restores a checkpoint written by a bf16 server and vice versa (the fingerprint includes the
// dtype), while each still restores its own. Warm == cold with int8 K/V is in
// cache_differential_test.cpp.
#include <gtest/gtest.h>

#include "server/config/options.h"
#include "server/scheduling/runtime_loader.h"
#include "tests/integration/turn_harness.h"

namespace qmlx::testing {
namespace {

using ordered_json = nlohmann::ordered_json;

class KvCacheDtype : public TinyModelCacheTest {
 protected:
  KvCacheDtype() : TinyModelCacheTest("qmlx-kv-cache-dtype", 31) {}
};

TEST_F(KvCacheDtype, AServerNeverRestoresAnotherDtypesCheckpoints) {
  server::ServerOptions options;
  options.kv_cache_dtype = DType::kInt8;
  std::shared_ptr<const server::ModelRuntime> bf16 = runtime_, int8 = server::load_model_runtime(
                                                                   root_ + "/model", options);
  ASSERT_EQ(bf16->state_layout.kv_dtype, DType::kBF16);
  ASSERT_EQ(int8->state_layout.kv_dtype, DType::kInt8);
  const ordered_json messages = ordered_json::array(
      {{{"role", "system"}, {"content", "You are a careful coding agent. Read the file first."}},
       {{"role", "user"}, {"content", "please fix the parser bug in main.cpp and run the tests"}}});
  const std::string stores = config_.disk_cache_dir;
  int round = 0;
  for (auto [writer, reader] : {std::pair{bf16, int8}, std::pair{int8, bf16}}) {
    SCOPED_TRACE(std::string(dtype_name(writer->state_layout.kv_dtype)) + " checkpoints, " +
                 dtype_name(reader->state_layout.kv_dtype) + " server");
    config_.disk_cache_dir = stores + "-" + std::to_string(round++);
    {
      TurnHarness first(writer, config_);
      EXPECT_EQ(first.chat(messages, {}, 4).stats.cached_tokens, 0);
    }  // its writer drains
    TurnHarness other(reader, config_);
    EXPECT_EQ(other.chat(messages, {}, 4).stats.cached_tokens, 0);
    TurnHarness same(writer, config_);  // the store is intact: the writer's dtype hits
    EXPECT_GT(same.chat(messages, {}, 4).stats.cached_tokens, 0);
  }
}

}  // namespace
}  // namespace qmlx::testing
