// The strict HTTP/1.1 reader: every framing RFC 9112 calls ambiguous is refused with the status
// the listener answers, and what is accepted is framed exactly one way.
#include "http_framing.h"

#include <gtest/gtest.h>

#include <string>

namespace svc::kernel::http {
namespace {

HeadParse parse(const std::string& head) {
  return parseRequestHead(head);
}

struct Refusal {
  const char* name;
  std::string head;
  int status;
};

class RefusedHeads : public ::testing::TestWithParam<Refusal> {};

TEST_P(RefusedHeads, AreRefusedWithTheirStatus) {
  const Refusal& c = GetParam();
  HeadParse r = parse(c.head);
  ASSERT_EQ(r.status, HeadParse::Status::kError) << c.name;
  EXPECT_EQ(r.error.status, c.status) << c.name << ": " << r.error.detail;
  EXPECT_FALSE(r.error.detail.empty());
}

const std::string kGet = "GET /api/health/ HTTP/1.1\r\nHost: x\r\n";

INSTANTIATE_TEST_SUITE_P(
    Framing, RefusedHeads,
    ::testing::Values(
        Refusal{"SpaceBeforeColon", kGet + "Content-Length : 5\r\n\r\n", 400},
        Refusal{"TabBeforeColon", kGet + "Content-Length\t: 5\r\n\r\n", 400},
        Refusal{"NoColon", kGet + "X-Nothing\r\n\r\n", 400},
        Refusal{"ObsFold", kGet + "X-A: one\r\n two\r\n\r\n", 400},
        Refusal{"BareLf", "GET / HTTP/1.1\nHost: x\n\n", 400},
        Refusal{"BareCrInValue", kGet + "X-A: a\rb\r\n\r\n", 400},
        Refusal{"ControlInValue", kGet + "X-A: a\x01z\r\n\r\n", 400},
        Refusal{"LengthsDiffer", kGet + "Content-Length: 5\r\nContent-Length: 6\r\n\r\n", 400},
        Refusal{"LengthListDiffers", kGet + "Content-Length: 5, 6\r\n\r\n", 400},
        Refusal{"LengthHex", kGet + "Content-Length: 0x13\r\n\r\n", 400},
        Refusal{"LengthSigned", kGet + "Content-Length: +5\r\n\r\n", 400},
        Refusal{"LengthTwentyDigits", kGet + "Content-Length: 12345678901234567890\r\n\r\n", 400},
        Refusal{"LengthEmpty", kGet + "Content-Length: \r\n\r\n", 400},
        Refusal{"LengthAndChunked",
                kGet + "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n", 400},
        Refusal{"XchunkedWithLength",
                kGet + "Transfer-Encoding: xchunked\r\nContent-Length: 5\r\n\r\n", 400},
        Refusal{"Xchunked", kGet + "Transfer-Encoding: xchunked\r\n\r\n", 501},
        Refusal{"GzipThenChunked", kGet + "Transfer-Encoding: gzip, chunked\r\n\r\n", 501},
        Refusal{"ChunkedNotLast", kGet + "Transfer-Encoding: chunked, gzip\r\n\r\n", 400},
        Refusal{"ChunkedTwice",
                kGet + "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n", 400},
        Refusal{"ChunkedInHttp10", "POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", 400},
        Refusal{"NoHostIn11", "GET / HTTP/1.1\r\nX-A: b\r\n\r\n", 400},
        Refusal{"TwoHosts", kGet + "Host: y\r\n\r\n", 400},
        Refusal{"Http99", "GET / HTTP/9.9\r\nHost: x\r\n\r\n", 505},
        Refusal{"Http20", "GET / HTTP/2.0\r\nHost: x\r\n\r\n", 505},
        Refusal{"VersionGarbage", "GET / HTTP/1.1x\r\nHost: x\r\n\r\n", 400},
        Refusal{"LowerCaseVersion", "GET / http/1.1\r\nHost: x\r\n\r\n", 400},
        Refusal{"DoubleSpace", "GET  / HTTP/1.1\r\nHost: x\r\n\r\n", 400},
        Refusal{"SpaceInTarget", "GET /a b HTTP/1.1\r\nHost: x\r\n\r\n", 400},
        Refusal{"Garbage", "GARBAGE\r\n\r\n", 400},
        Refusal{"EmptyName", kGet + ": value\r\n\r\n", 400}),
    [](const ::testing::TestParamInfo<Refusal>& info) { return std::string(info.param.name); });

TEST(HttpFraming, AcceptedHeadsAreFramedOneWay) {
  const std::string text =
      "POST /api/x/?a=1 HTTP/1.1\r\nHost: x\r\nContent-Length: 5, 5\r\n"
      "Content-Length: 5\r\nX-Spaced:   value  \r\n\r\nhello";
  HeadParse r = parse(text);
  ASSERT_EQ(r.status, HeadParse::Status::kComplete) << r.error.detail;
  EXPECT_EQ(r.head.method, "POST");
  EXPECT_EQ(r.head.target, "/api/x/?a=1");
  EXPECT_EQ(r.head.framing, BodyFraming::kLength);
  EXPECT_EQ(r.head.content_length, 5u);
  EXPECT_EQ(*r.head.field("x-spaced"), "value");
  EXPECT_EQ(r.consumed, text.find("\r\n\r\n") + 4);  // the head, not the body after it

  HeadParse chunked = parse("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: CHUNKED\r\n\r\n");
  ASSERT_EQ(chunked.status, HeadParse::Status::kComplete);
  EXPECT_EQ(chunked.head.framing, BodyFraming::kChunked);
}

TEST(HttpFraming, KeepAliveFollowsVersionAndConnection) {
  EXPECT_TRUE(parse(kGet + "\r\n").head.keep_alive);
  EXPECT_FALSE(parse(kGet + "Connection: close\r\n\r\n").head.keep_alive);
  EXPECT_FALSE(parse("GET / HTTP/1.0\r\n\r\n").head.keep_alive);
  EXPECT_TRUE(parse("GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n").head.keep_alive);
  EXPECT_TRUE(parse(kGet + "Expect: 100-continue\r\n\r\n").head.expect_continue);
}

TEST(HttpFraming, AHeadIsIncompleteUntilItsBlankLineAndEmptyLinesBeforeItAreSkipped) {
  EXPECT_EQ(parse("GET / HTTP/1.1\r\nHost: x\r\n").status, HeadParse::Status::kIncomplete);
  const std::string text = "\r\n\r\nGET / HTTP/1.1\r\nHost: x\r\n\r\n";
  HeadParse r = parse(text);
  ASSERT_EQ(r.status, HeadParse::Status::kComplete);
  EXPECT_EQ(r.consumed, text.size());
}

TEST(HttpFraming, OversizedHeadsAndTooManyFieldsAreRefusedBeforeTheyEnd) {
  HeadLimits limits;
  limits.max_head_bytes = 1024;
  EXPECT_EQ(parseRequestHead(kGet + "X-Big: " + std::string(2000, 'a'), limits).status,
            HeadParse::Status::kError);
  std::string many = kGet;
  for (int i = 0; i < 101; ++i) many += "X-" + std::to_string(i) + ": v\r\n";
  EXPECT_EQ(parse(many + "\r\n").status, HeadParse::Status::kError);
}

std::string decodeAll(const std::string& body, ChunkedDecoder::Status& status,
                      std::size_t& consumed) {
  ChunkedDecoder d;
  std::string out;
  status = d.feed(body, consumed, out);
  return out;
}

TEST(HttpFraming, ChunkedBodiesDecodeWholeOrByteByByte) {
  const std::string body = "5;ext=1\r\nhello\r\n6\r\n world\r\n0\r\nX-Trailer: t\r\n\r\nNEXT";
  ChunkedDecoder::Status status;
  std::size_t consumed = 0;
  EXPECT_EQ(decodeAll(body, status, consumed), "hello world");
  EXPECT_EQ(status, ChunkedDecoder::Status::kDone);
  EXPECT_EQ(body.substr(consumed), "NEXT");  // the next request is not taken

  ChunkedDecoder d;
  std::string pending, out;
  for (char c : body.substr(0, body.size() - 4)) {
    pending += c;
    std::size_t used = 0;
    status = d.feed(pending, used, out);
    pending.erase(0, used);
  }
  EXPECT_EQ(status, ChunkedDecoder::Status::kDone);
  EXPECT_EQ(out, "hello world");
}

TEST(HttpFraming, ChunkExtensionsHaveABudget) {
  ChunkedDecoder d;
  std::string out, ext = "1;" + std::string(1000, 'e') + "\r\nx\r\n";
  ChunkedDecoder::Status status = ChunkedDecoder::Status::kNeedMore;
  int chunks = 0;
  while (status == ChunkedDecoder::Status::kNeedMore && chunks < 100) {
    std::size_t used = 0;
    status = d.feed(ext, used, out);
    ++chunks;
  }
  EXPECT_EQ(status, ChunkedDecoder::Status::kError);
  EXPECT_LE(chunks, 17);  // 16 KiB of extensions, 1,000 bytes a chunk
}

TEST(HttpFraming, MalformedChunksAreErrors) {
  for (std::string body :
       {"zz\r\nhello\r\n0\r\n\r\n", "5\r\nhelloXX0\r\n\r\n", "5\nhello\r\n0\r\n\r\n",
        "5 garbage\r\nhello\r\n0\r\n\r\n", "ffffffffffffffffff\r\n", "0\r\nbad trailer\r\n\r\n",
        "-5\r\nhello\r\n0\r\n\r\n", "5 \r\nhello\r\n0\r\n\r\n"}) {
    ChunkedDecoder::Status status;
    std::size_t consumed = 0;
    decodeAll(body, status, consumed);
    EXPECT_EQ(status, ChunkedDecoder::Status::kError) << body;
  }
}

}  // namespace
}  // namespace svc::kernel::http
