#include "access_log.h"

#include <Poco/JSON/Parser.h>

#include <gtest/gtest.h>

#include <unistd.h>

#include <regex>

namespace svc::kernel {
namespace {

std::string capture(bool json, const std::string& path) {
  int fds[2];
  EXPECT_EQ(::pipe(fds), 0);
  {
    AccessLog log(json, fds[1]);
    log.record("GET", path, 201, 1.5, "rid-1", "127.0.0.1");
  }  // destruction flushes
  ::close(fds[1]);
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(fds[0], buf, sizeof buf)) > 0) out.append(buf, static_cast<std::size_t>(n));
  ::close(fds[0]);
  return out;
}

TEST(AccessLog, TextLineHasMethodPathStatusDurationAndRequestId) {
  std::string line = capture(false, "/api/health/");
  EXPECT_TRUE(std::regex_match(
      line,
      std::regex(
          R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z Information access: GET /api/health/ 201 1\.500ms rid=rid-1\n)")))
      << line;
}

TEST(AccessLog, AForgedPathCannotBreakTheLineOrTheJson) {
  std::string evil = "/a\n2026-01-01 Fatal svcd: forged\"\\\x01\xff";
  std::string text = capture(false, evil);
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 1) << text;
  std::string json = capture(true, evil);
  EXPECT_EQ(std::count(json.begin(), json.end(), '\n'), 1) << json;
  auto obj = Poco::JSON::Parser().parse(json).extract<Poco::JSON::Object::Ptr>();
  EXPECT_EQ(obj->getValue<std::string>("logger"), "access");
  EXPECT_EQ(obj->getValue<std::string>("status"), "201");
  EXPECT_EQ(obj->getValue<std::string>("request_id"), "rid-1");
  EXPECT_EQ(obj->getValue<std::string>("path").substr(0, 3), "/a\n");
}

}  // namespace
}  // namespace svc::kernel
