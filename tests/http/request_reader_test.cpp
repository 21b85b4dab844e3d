#include "http/request_reader.h"

#include <gtest/gtest.h>

#include <string>

namespace qmlx::http {
namespace {

using Status = RequestReader::Status;

struct Outcome {
  Status status;
  std::string left;  // bytes not consumed
};

// Feeds `bytes` split into pieces of `piece` bytes (0: all at once).
Outcome feed(RequestReader& reader, const std::string& bytes, size_t piece = 0) {
  std::string input;
  Status status = Status::kNeedMore;
  size_t step = piece == 0 ? bytes.size() : piece;
  size_t at = 0;
  for (; at < bytes.size() && status == Status::kNeedMore; at += step) {
    input += bytes.substr(at, step);
    status = reader.consume(input);
  }
  if (at < bytes.size()) input += bytes.substr(at);  // what arrives after the request
  if (bytes.empty()) status = reader.consume(input);
  return {status, input};
}

ReadLimits limits(size_t body = 1000, size_t head = 512) { return {head, body}; }

TEST(RequestReader, ReadsAHeadAndABodyWhateverTheSplit) {
  const std::string request =
      "POST /v1/chat/completions?x=1 HTTP/1.1\r\nHost: h\r\ncontent-length: 5\r\n\r\nhello";
  for (size_t piece : {0, 1, 2, 7}) {
    RequestReader reader(limits());
    Outcome out = feed(reader, request, piece);
    ASSERT_EQ(out.status, Status::kComplete) << piece;
    EXPECT_EQ(reader.request().method, "POST");
    EXPECT_EQ(reader.request().path, "/v1/chat/completions");
    EXPECT_EQ(reader.request().query, "x=1");
    EXPECT_EQ(reader.request().get_header_value("Content-Length"), "5");  // any case
    EXPECT_EQ(reader.request().body, "hello");
    EXPECT_TRUE(out.left.empty());
  }
}

TEST(RequestReader, LeavesAPipelinedRequestInTheInput) {
  RequestReader reader(limits());
  std::string input = "GET /a HTTP/1.1\r\n\r\nGET /b HTTP/1.1\r\n\r\n";
  ASSERT_EQ(reader.consume(input), Status::kComplete);
  EXPECT_EQ(reader.request().path, "/a");
  EXPECT_EQ(input, "GET /b HTTP/1.1\r\n\r\n");
  reader.reset();
  ASSERT_EQ(reader.consume(input), Status::kComplete);
  EXPECT_EQ(reader.request().path, "/b");
  EXPECT_TRUE(input.empty());
}

TEST(RequestReader, APostWithoutLengthHasNoBody) {
  RequestReader reader(limits());
  Outcome out = feed(reader, "POST /admin/cache/gc HTTP/1.1\r\nHost: x\r\n\r\n");
  ASSERT_EQ(out.status, Status::kComplete);
  EXPECT_TRUE(reader.request().body.empty());
}

TEST(RequestReader, DecodesChunkedBodiesWithExtensionsAndTrailers) {
  const std::string request =
      "POST /p HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
      "5;ext=1\r\nhello\r\n6\r\n world\r\n0\r\nX-Trailer: t\r\n\r\nNEXT";
  for (size_t piece : {0, 1, 3}) {
    RequestReader reader(limits());
    Outcome out = feed(reader, request, piece);
    ASSERT_EQ(out.status, Status::kComplete) << piece;
    EXPECT_EQ(reader.request().body, "hello world");
    EXPECT_EQ(out.left, "NEXT");
  }
}

TEST(RequestReader, RefusesAChunkedBodyOverTheLimitBeforeBufferingIt) {
  RequestReader reader(limits(10));
  Outcome out = feed(reader,
                     "POST /p HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n8\r\n12345678\r\n"
                     "8\r\n12345678\r\n");
  ASSERT_EQ(out.status, Status::kFailed);
  EXPECT_EQ(reader.error_status(), 413);
  EXPECT_TRUE(reader.connection_unusable());
  EXPECT_LE(reader.request().body.size(), 10u);
}

TEST(RequestReader, RefusesAContentLengthOverTheLimitAtTheHead) {
  RequestReader reader(limits(10));
  Outcome out =
      feed(reader, "POST /p HTTP/1.1\r\nContent-Length: 11\r\nExpect: 100-continue\r\n\r\n");
  ASSERT_EQ(out.status, Status::kFailed);
  EXPECT_EQ(reader.error_status(), 413);
}

TEST(RequestReader, AsksForContinueOnlyBeforeTheBody) {
  RequestReader reader(limits());
  std::string input = "POST /p HTTP/1.1\r\nContent-Length: 3\r\nExpect: 100-continue\r\n\r\n";
  ASSERT_EQ(reader.consume(input), Status::kNeedMore);
  EXPECT_TRUE(reader.expects_continue());
  input = "abc";
  ASSERT_EQ(reader.consume(input), Status::kComplete);
  EXPECT_FALSE(reader.expects_continue());
}

TEST(RequestReader, RefusesAmbiguousOrInvalidFraming) {
  struct Case {
    std::string head;
    int status;
  };
  const Case cases[] = {
      {"Content-Length: -5\r\n", 400},
      {"Content-Length: 5x\r\n", 400},
      {"Content-Length: 99999999999999999999999\r\n", 400},
      {"Content-Length: 3\r\nContent-Length: 4\r\n", 400},
      {"Content-Length: 3\r\nTransfer-Encoding: chunked\r\n", 400},
      {"Transfer-Encoding: gzip\r\n", 501},
      {" folded: x\r\n", 400},
      {"no colon\r\n", 400},
  };
  for (const Case& c : cases) {
    RequestReader reader(limits());
    Outcome out = feed(reader, "POST /p HTTP/1.1\r\n" + c.head + "\r\n");
    EXPECT_EQ(out.status, Status::kFailed) << c.head;
    EXPECT_EQ(reader.error_status(), c.status) << c.head;
  }
}

TEST(RequestReader, EqualRepeatedLengthsAreOneLength) {
  RequestReader reader(limits());
  Outcome out = feed(reader, "POST /p HTTP/1.1\r\nContent-Length: 2, 2\r\n\r\nok");
  ASSERT_EQ(out.status, Status::kComplete);
  EXPECT_EQ(reader.request().body, "ok");
}

TEST(RequestReader, RefusesMalformedRequestLinesAndVersions) {
  const std::pair<std::string, int> cases[] = {
      {"GET\r\n\r\n", 400},
      {"GET /a b HTTP/1.1\r\n\r\n", 400},
      {"GET a HTTP/1.1\r\n\r\n", 400},
      {"G(T /a HTTP/1.1\r\n\r\n", 400},
      {"GET /a HTTP/2.0\r\n\r\n", 505},
  };
  for (const auto& [text, status] : cases) {
    RequestReader reader(limits());
    Outcome out = feed(reader, text);
    EXPECT_EQ(out.status, Status::kFailed) << text;
    EXPECT_EQ(reader.error_status(), status) << text;
  }
}

TEST(RequestReader, AnOversizedHeadIs431WithoutWaitingForItsEnd) {
  RequestReader reader(limits(1000, 100));
  Outcome out = feed(reader, "GET /a HTTP/1.1\r\nX-Big: " + std::string(200, 'a'), 1);
  ASSERT_EQ(out.status, Status::kFailed);
  EXPECT_EQ(reader.error_status(), 431);
}

TEST(RequestReader, SkipsBlankLinesBeforeARequest) {
  RequestReader reader(limits());
  Outcome out = feed(reader, "\r\n\r\nGET /a HTTP/1.0\r\n\r\n");
  ASSERT_EQ(out.status, Status::kComplete);
  EXPECT_EQ(reader.request().version, "HTTP/1.0");
}

}  // namespace
}  // namespace qmlx::http
