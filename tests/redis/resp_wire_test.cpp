#include "redis/resp_wire.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <string>
#include <thread>
#include <vector>

#include "redis/socket_stream.h"

namespace qmlx {
namespace {

// Both ends of a local stream socket; ours is read and written through a SocketStream.
class SocketPair {
 public:
  SocketPair() {
    int fds[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, fds) != 0) std::abort();
    ours = fds[0];
    theirs = fds[1];
    stream = std::make_unique<SocketStream>(ours);
  }
  ~SocketPair() {
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
  std::unique_ptr<SocketStream> stream;  // owns ours
};

// A server's bytes from memory, handed out `step` bytes per read (so every reply is cut at
// every possible place); then the stream is closed.
class ScriptedStream final : public ByteStream {
 public:
  explicit ScriptedStream(std::string bytes, size_t step = 1 << 20)
      : bytes_(std::move(bytes)), step_(step) {}
  Status write_all(std::span<const std::string_view>) override { return Status::Ok(); }
  Status read_some(std::span<uint8_t> out, size_t* got) override {
    if (at_ == bytes_.size()) return Status::IOError("connection closed by the server");
    *got = std::min({out.size(), step_, bytes_.size() - at_});
    std::copy_n(bytes_.data() + at_, *got, out.data());
    at_ += *got;
    return Status::Ok();
  }

 private:
  std::string bytes_;
  size_t step_;
  size_t at_ = 0;
};

TEST(RespWireTest, WritesCommandsAsRespArraysWithLargeArgumentsInPlace) {
  SocketPair pair;
  const std::string big(100000, 'x');  // sent from its own memory, not copied into the frame
  std::string expected = "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$100000\r\n" + big + "\r\n";
  expected += "*2\r\n$3\r\nGET\r\n$0\r\n\r\n";
  std::string got;
  std::thread reader([&] { got = pair.drain(expected.size()); });
  ASSERT_TRUE(resp_write_commands(*pair.stream, {{"SET", "k", big}, {"GET", ""}}).ok());
  reader.join();
  EXPECT_EQ(got, expected);
}

TEST(RespWireTest, ReadsEveryFlatReplyType) {
  SocketPair pair;
  pair.serve("+OK\r\n-MOVED 3999 127.0.0.1:7001\r\n:42\r\n$-1\r\n$5\r\nhello\r\n");
  RespReader reader(*pair.stream);
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
  RespReader reader(*pair.stream);
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
  for (const std::string bytes :
       {"*2\r\n", "$abc\r\n", "$5\r\nhelloXX", "\r\n", ":12x\r\n", "$-2\r\n", "*-5\r\n",
        "*1\r\n?\r\n", "$99999999999999999999\r\n"}) {
    SocketPair pair;
    pair.serve(bytes);
    pair.hang_up();
    RespReader reader(*pair.stream);
    RespReply reply;
    const Status s = reader.read({}, &reply);
    EXPECT_FALSE(s.ok()) << bytes;
    EXPECT_EQ(s.code(), Status::Code::kIOError) << bytes;
  }
  SocketPair pair;  // a bulk string cut short by the server going away
  pair.serve("$100\r\nonly part");
  pair.hang_up();
  RespReader reader(*pair.stream);
  std::vector<uint8_t> place(100);
  RespReply reply;
  EXPECT_NE(reader.read(place, &reply).message().find("closed"), std::string::npos);
}

TEST(RespWireTest, ASilentServerIsATimeout) {
  SocketPair pair;
  timeval tv{0, 50 * 1000};
  ASSERT_EQ(setsockopt(pair.ours, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)), 0);
  RespReader reader(*pair.stream);
  RespReply reply;
  const Status s = reader.read({}, &reply);
  EXPECT_NE(s.message().find("timed out"), std::string::npos) << s.ToString();
}

TEST(RespWireTest, ReadsNestedArraysAsClusterSlotsScanAndHgetallSendThem) {
  // CLUSTER SLOTS (two ranges, one with a replica), a SCAN page, HGETALL, then a nil array and
  // an empty one; handed over one byte at a time.
  const std::string slots =
      "*2\r\n"
      "*3\r\n:0\r\n:5460\r\n*3\r\n$9\r\n127.0.0.1\r\n:7000\r\n$2\r\nid\r\n"
      "*4\r\n:5461\r\n:16383\r\n*2\r\n$0\r\n\r\n:7001\r\n*2\r\n$3\r\n::1\r\n:7002\r\n";
  const std::string scan = "*2\r\n$2\r\n17\r\n*2\r\n$1\r\na\r\n$4\r\nb\r\nc\r\n";
  const std::string hgetall = "*4\r\n$2\r\ns1\r\n$3\r\n100\r\n$2\r\ns2\r\n$-1\r\n";
  ScriptedStream stream(slots + scan + hgetall + "*-1\r\n*0\r\n", 1);
  RespReader reader(stream);
  RespReply reply;
  ASSERT_TRUE(reader.read({}, &reply).ok());
  ASSERT_EQ(reply.kind, RespKind::kArray);
  ASSERT_EQ(reply.elements.size(), 2u);
  const RespReply& first = reply.elements[0];
  ASSERT_EQ(first.elements.size(), 3u);
  EXPECT_EQ(first.elements[0].integer, 0);
  EXPECT_EQ(first.elements[1].integer, 5460);
  EXPECT_EQ(first.elements[2].elements[0].str(), "127.0.0.1");
  EXPECT_EQ(first.elements[2].elements[1].integer, 7000);
  const RespReply& second = reply.elements[1];
  ASSERT_EQ(second.elements.size(), 4u);
  EXPECT_EQ(second.elements[2].elements[0].kind, RespKind::kBulk);
  EXPECT_EQ(second.elements[2].elements[0].str(), "");
  EXPECT_EQ(second.elements[3].elements[1].integer, 7002);

  ASSERT_TRUE(reader.read({}, &reply).ok());
  ASSERT_EQ(reply.elements.size(), 2u);
  EXPECT_EQ(reply.elements[0].str(), "17");
  ASSERT_EQ(reply.elements[1].elements.size(), 2u);
  EXPECT_EQ(reply.elements[1].elements[1].str(), "b\r\nc");  // binary-safe: CRLF inside
  ASSERT_TRUE(reader.read({}, &reply).ok());
  ASSERT_EQ(reply.elements.size(), 4u);
  EXPECT_EQ(reply.elements[1].str(), "100");
  EXPECT_EQ(reply.elements[3].kind, RespKind::kNil);
  ASSERT_TRUE(reader.read({}, &reply).ok());
  EXPECT_EQ(reply.kind, RespKind::kNil);
  ASSERT_TRUE(reader.read({}, &reply).ok());
  EXPECT_EQ(reply.kind, RespKind::kArray);
  EXPECT_TRUE(reply.elements.empty());
  EXPECT_FALSE(reader.has_leftover());
  // Errors and integers inside arrays (EXEC-style), negative integers.
  ScriptedStream mixed("*3\r\n-ERR no\r\n:-42\r\n+QUEUED\r\n");
  RespReader mixed_reader(mixed);
  ASSERT_TRUE(mixed_reader.read({}, &reply).ok());
  EXPECT_EQ(reply.elements[0].kind, RespKind::kError);
  EXPECT_EQ(reply.elements[0].str(), "ERR no");
  EXPECT_EQ(reply.elements[1].integer, -42);
  EXPECT_EQ(reply.elements[2].kind, RespKind::kStatus);
}

TEST(RespWireTest, EveryTruncationOfANestedReplyIsAnIoError) {
  const std::string whole = "*2\r\n*2\r\n:1\r\n$5\r\nhello\r\n*1\r\n$-1\r\n";
  for (size_t cut = 0; cut < whole.size(); ++cut) {
    ScriptedStream stream(whole.substr(0, cut), 3);
    RespReader reader(stream);
    RespReply reply;
    const Status s = reader.read({}, &reply);
    EXPECT_EQ(s.code(), Status::Code::kIOError) << cut;
    EXPECT_NE(s.message().find("closed"), std::string::npos) << cut << ": " << s.ToString();
  }
  ScriptedStream stream(whole);
  RespReader reader(stream);
  RespReply reply;
  EXPECT_TRUE(reader.read({}, &reply).ok());
}

TEST(RespWireTest, LimitsBoundDepthElementsAndBytes) {
  RespLimits limits;
  limits.max_depth = 3;
  limits.max_elements = 10;
  limits.max_bytes = 100;
  auto read_with = [&](const std::string& bytes) {
    ScriptedStream stream(bytes);
    RespReader reader(stream, limits);
    RespReply reply;
    return reader.read({}, &reply);
  };
  EXPECT_TRUE(read_with("*1\r\n*1\r\n*1\r\n:1\r\n").ok());
  const Status deep = read_with("*1\r\n*1\r\n*1\r\n*1\r\n:1\r\n");
  EXPECT_NE(deep.message().find("nested deeper than 3"), std::string::npos) << deep.ToString();
  // A server that nests without end is stopped at the limit, not by the stack.
  std::string endless;
  for (int i = 0; i < 100000; ++i) endless += "*1\r\n";
  EXPECT_EQ(read_with(endless).code(), Status::Code::kIOError);
  // Elements count over all levels: 2 + 2 * 4 = 10 fits, one more does not.
  EXPECT_TRUE(read_with("*2\r\n*4\r\n:1\r\n:2\r\n:3\r\n:4\r\n*4\r\n:1\r\n:2\r\n:3\r\n:4\r\n").ok());
  const Status many = read_with("*2\r\n*4\r\n:1\r\n:2\r\n:3\r\n:4\r\n*5\r\n");
  EXPECT_NE(many.message().find("over the limit"), std::string::npos) << many.ToString();
  // An announced size is refused before anything is allocated for it.
  EXPECT_NE(read_with("*4000000000\r\n").message().find("over the limit"), std::string::npos);
  EXPECT_NE(read_with("$101\r\n").message().find("over the limit"), std::string::npos);
  // Bytes count over the whole reply.
  const std::string sixty = "$60\r\n" + std::string(60, 'x') + "\r\n";
  EXPECT_TRUE(read_with("*1\r\n" + sixty).ok());
  EXPECT_FALSE(read_with("*2\r\n" + sixty + sixty).ok());
  // The defaults let a bulk string far larger than the read buffer through, announced large
  // but cut short: an error once the stream ends, never a crash.
  ScriptedStream cut("$1073741824\r\nabc");
  RespReader reader(cut);
  RespReply reply;
  EXPECT_NE(reader.read({}, &reply).message().find("closed"), std::string::npos);
}

}  // namespace
}  // namespace qmlx
