#include "upload_form.h"

#include <svc/sdk/http.h>

#include <gtest/gtest.h>

using namespace svc;
using namespace svc::plugins::email;

namespace {

const std::string kForm = "multipart/form-data; boundary=XyZ";

std::string part(const std::string& name, const std::string& filename, const std::string& type,
                 const std::string& bytes) {
  std::string p = "--XyZ\r\nContent-Disposition: form-data; name=\"" + name + "\"";
  if (!filename.empty()) p += "; filename=\"" + filename + "\"";
  p += "\r\n";
  if (!type.empty()) p += "Content-Type: " + type + "\r\n";
  return p + "\r\n" + bytes + "\r\n";
}

// The error's status and the field its detail names.
std::pair<int, std::string> refusal(const std::string& content_type, const std::string& body,
                                    const std::string& query = "", std::size_t max = 1000) {
  try {
    readUpload(content_type, body, query, max);
  } catch (const sdk::HttpError& e) {
    return {e.status(), e.errors().empty() ? "" : e.errors().begin()->first};
  }
  return {0, ""};
}

}  // namespace

TEST(UploadForm, TakesTheFileFieldOfAForm) {
  std::string body = part("note", "", "", "hello") +
                     part("file", "report.pdf", "Application/PDF; x=1", "%PDF-1.7\r\nbytes") +
                     "--XyZ--\r\n";
  Upload u = readUpload(kForm, body, "", 1000);
  EXPECT_EQ(u.filename, "report.pdf");
  EXPECT_EQ(u.content_type, "application/pdf");
  EXPECT_EQ(u.data, "%PDF-1.7\r\nbytes");
}

TEST(UploadForm, APartWithoutATypeIsOctetStream) {
  Upload u = readUpload(kForm, part("file", "a.bin", "", "\x01\x02") + "--XyZ--", "", 1000);
  EXPECT_EQ(u.content_type, "application/octet-stream");
  EXPECT_EQ(u.data, "\x01\x02");
}

TEST(UploadForm, ARawBodyTakesItsNameFromTheQuery) {
  Upload u = readUpload("text/plain; charset=utf-8", "hi there", " notes.txt ", 1000);
  EXPECT_EQ(u.filename, "notes.txt");
  EXPECT_EQ(u.content_type, "text/plain");
  EXPECT_EQ(u.data, "hi there");
  EXPECT_EQ(readUpload("", "x", "a", 10).content_type, "application/octet-stream");
}

TEST(UploadForm, RefusesFormsThatAreNotWhole) {
  std::string whole = part("file", "a.txt", "text/plain", "abc") + "--XyZ--\r\n";
  EXPECT_EQ(refusal("multipart/form-data", whole), std::make_pair(400, std::string("file")));
  // Cut before the closing boundary: a dropped connection must not store a truncated file.
  EXPECT_EQ(refusal(kForm, part("file", "a.txt", "text/plain", "abc")),
            std::make_pair(400, std::string("body")));
  EXPECT_EQ(refusal(kForm, part("other", "a.txt", "", "abc") + "--XyZ--"),
            std::make_pair(400, std::string("file")));
  EXPECT_EQ(refusal(kForm, "garbage\r\n--XyZ--"), std::make_pair(400, std::string("file")));
}

TEST(UploadForm, RefusesUnsafeNamesAndTypes) {
  for (const std::string& name :
       std::vector<std::string>{"", "  ", "../etc/passwd", "a\\b", "a\nb", "..", ".",
                                std::string(256, 'a'), std::string("\xef\xbf", 2)}) {
    EXPECT_EQ(refusal("text/plain", "x", name), std::make_pair(400, std::string("filename")))
        << name;
  }
  EXPECT_EQ(refusal("textplain", "x", "a.txt"), std::make_pair(400, std::string("content_type")));
  EXPECT_EQ(refusal(kForm, part("file", "a.txt", "text/\x01x", "abc") + "--XyZ--"),
            std::make_pair(400, std::string("content_type")));
}

TEST(UploadForm, RefusesFilesOverTheLimitWith413) {
  EXPECT_EQ(refusal("text/plain", std::string(11, 'x'), "a.txt", 10).first, 413);
  EXPECT_EQ(
      refusal(kForm, part("file", "a.txt", "", std::string(11, 'x')) + "--XyZ--", "", 10).first,
      413);
  EXPECT_EQ(readUpload("text/plain", std::string(10, 'x'), "a.txt", 10).data.size(), 10u);
}

// Found by fuzzing Poco's MultipartReader, which guessed at these and stored other bytes than
// the client sent: a part head line without a colon, with space before the colon, or folded.
TEST(UploadForm, RefusesMalformedPartHeadsInsteadOfGuessing) {
  for (const std::string& head :
       {std::string("Content-Type: image/png\r\n\xa6\r\n"), std::string("Content-Type : a/b\r\n"),
        std::string("X-A: 1\r\n folded\r\n"), std::string(": empty name\r\n")}) {
    std::string body =
        "--XyZ\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a\"\r\n" + head +
        "\r\nbytes\r\n--XyZ--\r\n";
    EXPECT_EQ(refusal(kForm, body), std::make_pair(400, std::string("file"))) << head;
  }
}

TEST(UploadForm, ReadsTheDelimitersAsRfc2046Has) {
  // A preamble, transport padding after a delimiter, an empty part sharing its head's CRLF,
  // an epilogue after the close delimiter.
  std::string body =
      "preamble\r\n--XyZ  \r\n\r\n\r\n--XyZ\r\nContent-Disposition: form-data; name=\"file\"; "
      "filename=\"empty.txt\"\r\n\r\n--XyZ--\r\nepilogue";
  Upload u = readUpload(kForm, body, "", 1000);
  EXPECT_EQ(u.filename, "empty.txt");
  EXPECT_EQ(u.data, "");
  // The file's bytes are exactly what lies between its head and the next delimiter, which the
  // file must not contain (RFC 2046: the sender picks a boundary that is not in the content).
  u = readUpload(kForm, part("file", "b.bin", "", "\r\n--XyZ\r\n") + "--XyZ--", "", 1000);
  EXPECT_EQ(u.data, "");
  EXPECT_EQ(
      readUpload(kForm, part("file", "b.bin", "", "a\r\n-XyZ\r\n") + "--XyZ--", "", 1000).data,
      "a\r\n-XyZ\r\n");
  // A delimiter line with anything but padding after it, or bare LF line ends, is malformed.
  EXPECT_EQ(refusal(kForm, "--XyZ\nContent-Disposition: form-data; name=\"file\"\n\nx\n--XyZ--"),
            std::make_pair(400, std::string("body")));
  EXPECT_EQ(refusal(kForm, part("file", "b.bin", "", "x") + "--XyZjunk\r\n--XyZ--"),
            std::make_pair(400, std::string("body")));
}
