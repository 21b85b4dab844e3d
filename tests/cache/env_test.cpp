#include "base/env.h"

#include <gtest/gtest.h>

#include "base/fault_env.h"
#include "fake_session.h"

namespace qmlx {
namespace {

std::vector<uint8_t> bytes_of(const std::string& s) { return {s.begin(), s.end()}; }

Status write_file(Env* env, const std::string& path, const std::string& text, bool sync) {
  std::unique_ptr<WritableFile> file;
  Status s = env->new_writable_file(path, &file);
  if (s.ok()) s = file->append(bytes_of(text));
  if (s.ok() && sync) s = file->sync();
  if (s.ok()) s = file->close();
  return s;
}

std::string read_all(Env* env, const std::string& path) {
  std::vector<uint8_t> data;
  EXPECT_TRUE(env->read_file(path, &data).ok());
  return std::string(data.begin(), data.end());
}

TEST(PosixEnv, WritesReadsRenamesListsAndRemoves) {
  test::TempDir dir;
  Env* env = Env::posix();
  const std::string a = join_path(dir.path(), "a");
  ASSERT_TRUE(write_file(env, a, "hello", true).ok());
  std::unique_ptr<WritableFile> appender;
  ASSERT_TRUE(env->new_appendable_file(a, &appender).ok());
  ASSERT_TRUE(appender->append(bytes_of(" world")).ok());
  ASSERT_TRUE(appender->close().ok());
  EXPECT_EQ(read_all(env, a), "hello world");

  std::unique_ptr<RandomAccessFile> reader;
  ASSERT_TRUE(env->new_random_access_file(a, &reader).ok());
  EXPECT_EQ(reader->size(), 11u);
  uint8_t five[5];
  ASSERT_TRUE(reader->read(6, 5, five).ok());
  EXPECT_EQ(std::string(five, five + 5), "world");
  EXPECT_EQ(reader->read(8, 5, five).code(), Status::Code::kCorruption);

  ASSERT_TRUE(env->create_dirs(join_path(dir.path(), "x/y")).ok());
  const std::string b = join_path(dir.path(), "x/y/b");
  ASSERT_TRUE(env->rename_file(a, b).ok());
  EXPECT_FALSE(env->file_exists(a));
  ASSERT_TRUE(env->sync_dir(join_path(dir.path(), "x/y")).ok());
  std::vector<std::string> names;
  ASSERT_TRUE(env->list_dir(join_path(dir.path(), "x/y"), &names).ok());
  EXPECT_EQ(names, std::vector<std::string>{"b"});
  uint64_t size = 0, total = 0;
  ASSERT_TRUE(env->file_size(b, &size).ok());
  EXPECT_EQ(size, 11u);
  ASSERT_TRUE(env->tree_size(dir.path(), &total).ok());
  EXPECT_EQ(total, 11u);
  EXPECT_EQ(env->remove_file(a).code(), Status::Code::kNotFound);
  ASSERT_TRUE(env->remove_tree(join_path(dir.path(), "x")).ok());
  EXPECT_FALSE(env->is_dir(join_path(dir.path(), "x")));
}

TEST(FaultEnv, FailsTheNthWriteWithTheGivenError) {
  test::TempDir dir;
  FaultEnv env(Env::posix());
  env.fail_nth(FaultEnv::Op::kWrite, 2, Status::NoSpace("injected"));
  EXPECT_TRUE(write_file(&env, join_path(dir.path(), "1"), "x", false).ok());
  EXPECT_EQ(write_file(&env, join_path(dir.path(), "2"), "x", false).code(),
            Status::Code::kNoSpace);
  EXPECT_TRUE(write_file(&env, join_path(dir.path(), "3"), "x", false).ok());
  env.fail_nth(FaultEnv::Op::kSync, 1, Status::IOError("eio"), /*persistent=*/true);
  EXPECT_EQ(write_file(&env, join_path(dir.path(), "4"), "x", true).code(), Status::Code::kIOError);
  EXPECT_EQ(env.sync_dir(dir.path()).code(), Status::Code::kIOError);
  env.fail_nth(FaultEnv::Op::kRename, 1, Status::IOError("eio"));
  EXPECT_FALSE(env.rename_file(join_path(dir.path(), "1"), join_path(dir.path(), "5")).ok());
}

TEST(FaultEnv, CrashDropsUnsyncedBytesAndNames) {
  test::TempDir dir;
  Env* posix = Env::posix();
  const std::string synced = join_path(dir.path(), "synced");
  const std::string partial = join_path(dir.path(), "partial");
  ASSERT_TRUE(write_file(posix, synced, "old", true).ok());  // existed before the FaultEnv
  FaultEnv env(posix);
  std::unique_ptr<WritableFile> file;
  ASSERT_TRUE(env.new_appendable_file(synced, &file).ok());
  ASSERT_TRUE(file->append(bytes_of("+kept")).ok());
  ASSERT_TRUE(file->sync().ok());
  ASSERT_TRUE(file->append(bytes_of("+lost")).ok());
  ASSERT_TRUE(file->close().ok());
  ASSERT_TRUE(write_file(&env, partial, "never synced name", true).ok());

  env.crash_after(0);
  EXPECT_FALSE(write_file(&env, join_path(dir.path(), "late"), "x", false).ok());
  EXPECT_TRUE(env.crashed());
  ASSERT_TRUE(env.simulate_crash(FaultEnv::CrashMode::kDropUnsynced).ok());
  EXPECT_EQ(read_all(posix, synced), "old+kept");
  EXPECT_FALSE(posix->file_exists(partial));  // its directory was never synced
  EXPECT_FALSE(env.crashed());
}

TEST(FaultEnv, NamesSurviveOnceTheirDirectoryIsSynced) {
  test::TempDir dir;
  FaultEnv env(Env::posix());
  const std::string path = join_path(dir.path(), "f");
  ASSERT_TRUE(write_file(&env, path, "data", true).ok());
  ASSERT_TRUE(env.sync_dir(dir.path()).ok());
  ASSERT_TRUE(env.simulate_crash(FaultEnv::CrashMode::kDropUnsynced).ok());
  EXPECT_EQ(read_all(Env::posix(), path), "data");
}

TEST(FaultEnv, FlipsBytesOnReadOfMatchingFiles) {
  test::TempDir dir;
  FaultEnv env(Env::posix());
  ASSERT_TRUE(write_file(Env::posix(), join_path(dir.path(), "a.kv"), "abcdef", true).ok());
  ASSERT_TRUE(write_file(Env::posix(), join_path(dir.path(), "b.snap"), "abcdef", true).ok());
  env.corrupt_reads(".kv");
  EXPECT_NE(read_all(&env, join_path(dir.path(), "a.kv")), "abcdef");
  EXPECT_EQ(read_all(&env, join_path(dir.path(), "b.snap")), "abcdef");
}

}  // namespace
}  // namespace qmlx
