#include "cache/resp_wire.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <string>
#include <thread>
#include <vector>

namespace qmlx {
namespace {

// Both ends of a local stream socket.
class SocketPair {
 public:
  SocketPair() {
    int fds[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, fds) != 0) std::abort();
    ours = fds[0];
    theirs = fds[1];
  }
  ~SocketPair() {
    if (ours >= 0) close(ours);
    if (theirs >= 0) close(theirs);
  }
  // Writes bytes as the server would.
  void serve(const std::string& bytes) const {
    ASSERT_EQ(write(theirs, bytes.data(), bytes.size()), ssize_t(bytes.size()));
  }
  void hang_up() {
    close(theirs);
    theirs = -1;
  }
  std::string drain(size_t n) const {
    std::string got(n, '\0');
    size_t done = 0;
    while (done < n) {
      const ssize_t r = read(theirs, got.data() + done, n - done);
      if (r <= 0) break;
      done += size_t(r);
    }
    got.resize(done);
    return got;
  }
  int ours = -1, theirs = -1;
};

TEST(RespWireTest, WritesCommandsAsRespArraysWithLargeArgumentsInPlace) {
  SocketPair pair;
  const std::string big(100000, 'x');  // sent from its own memory, not copied into the frame
  std::string expected = "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$100000\r\n" + big + "\r\n";
  expected += "*2\r\n$3\r\nGET\r\n$0\r\n\r\n";
  std::string got;
  std::thread reader([&] { got = pair.drain(expected.size()); });
  ASSERT_TRUE(resp_write_commands(pair.ours, {{"SET", "k", big}, {"GET", ""}}).ok());
  reader.join();
  EXPECT_EQ(got, expected);
}

TEST(RespWireTest, ReadsEveryFlatReplyType) {
  SocketPair pair;
  pair.serve("+OK\r\n-MOVED 3999 127.0.0.1:7001\r\n:42\r\n$-1\r\n$5\r\nhello\r\n");
  RespReader reader(pair.ours);
  RespReply reply;
  ASSERT_TRUE(reader.read({}, &reply).ok());
  EXPECT_EQ(reply.kind, RespKind::kStatus);
  EXPECT_EQ(reply.text, "OK");
  ASSERT_TRUE(reader.read({}, &reply).ok());
  EXPECT_EQ(reply.kind, RespKind::kError);
  EXPECT_EQ(reply.text, "MOVED 3999 127.0.0.1:7001");
  ASSERT_TRUE(reader.read({}, &reply).ok());
  EXPECT_EQ(reply.kind, RespKind::kInteger);
  EXPECT_EQ(reply.text, "42");
  ASSERT_TRUE(reader.read({}, &reply).ok());
  EXPECT_EQ(reply.kind, RespKind::kNil);
  ASSERT_TRUE(reader.read({}, &reply).ok());
  EXPECT_EQ(reply.kind, RespKind::kBulk);
  EXPECT_EQ(reply.text, "hello");
  EXPECT_FALSE(reader.has_leftover());
}

TEST(RespWireTest, ABulkStringOfTheRightSizeLandsInPlaceOneOfAnotherSizeIsSkipped) {
  SocketPair pair;
  // Larger than the reader's own buffer, so most of it goes straight from the socket.
  std::string value(300000, '\0');
  for (size_t i = 0; i < value.size(); ++i) value[i] = char(i * 31 + 7);
  std::thread server(
      [&] { pair.serve("$300000\r\n" + value + "\r\n$300000\r\n" + value + "\r\n+after\r\n"); });
  RespReader reader(pair.ours);
  std::vector<uint8_t> place(value.size());
  RespReply reply;
  ASSERT_TRUE(reader.read(place, &reply).ok());
  EXPECT_EQ(reply.kind, RespKind::kBulk);
  EXPECT_EQ(reply.bulk_bytes, value.size());
  EXPECT_TRUE(reply.text.empty());
  EXPECT_EQ(std::string(place.begin(), place.end()), value);
  // Expected 10 bytes, got 300000: read and dropped, the stream stays in step.
  std::vector<uint8_t> small(10, 0xAB);
  ASSERT_TRUE(reader.read(small, &reply).ok());
  EXPECT_EQ(reply.bulk_bytes, value.size());
  EXPECT_EQ(small, std::vector<uint8_t>(10, 0xAB));
  ASSERT_TRUE(reader.read({}, &reply).ok());
  EXPECT_EQ(reply.text, "after");
  server.join();
}

TEST(RespWireTest, ProtocolErrorsAndHangUpsAreIoErrorsNotCrashes) {
  for (const std::string bytes : {"*2\r\n", "$abc\r\n", "$5\r\nhelloXX", "\r\n"}) {
    SocketPair pair;
    pair.serve(bytes);
    pair.hang_up();
    RespReader reader(pair.ours);
    RespReply reply;
    const Status s = reader.read({}, &reply);
    EXPECT_FALSE(s.ok()) << bytes;
    EXPECT_EQ(s.code(), Status::Code::kIOError) << bytes;
  }
  SocketPair pair;  // a bulk string cut short by the server going away
  pair.serve("$100\r\nonly part");
  pair.hang_up();
  RespReader reader(pair.ours);
  std::vector<uint8_t> place(100);
  RespReply reply;
  EXPECT_NE(reader.read(place, &reply).message().find("closed"), std::string::npos);
}

TEST(RespWireTest, ASilentServerIsATimeout) {
  SocketPair pair;
  timeval tv{0, 50 * 1000};
  ASSERT_EQ(setsockopt(pair.ours, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)), 0);
  RespReader reader(pair.ours);
  RespReply reply;
  const Status s = reader.read({}, &reply);
  EXPECT_NE(s.message().find("timed out"), std::string::npos) << s.ToString();
}

}  // namespace
}  // namespace qmlx
