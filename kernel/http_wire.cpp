#include "http_wire.h"

#include <Poco/DateTimeFormat.h>
#include <Poco/DateTimeFormatter.h>
#include <Poco/Net/HTTPResponse.h>
#include <Poco/Timestamp.h>

#include <ctime>

namespace svc::kernel::http {

namespace {

// The Date field changes once a second: each thread formats it once a second.
const std::string& dateField() {
  thread_local std::time_t formatted_at = 0;
  thread_local std::string value;
  std::time_t now = std::time(nullptr);
  if (now != formatted_at) {
    formatted_at = now;
    value = Poco::DateTimeFormatter::format(Poco::Timestamp::fromEpochTime(now),
                                            Poco::DateTimeFormat::HTTP_FORMAT);
  }
  return value;
}

}  // namespace

void appendResponseHead(std::string& out, int status, const std::string& content_type,
                        const std::vector<std::pair<std::string, std::string>>& headers) {
  out += "HTTP/1.1 ";
  out += std::to_string(status);
  out += ' ';
  out += Poco::Net::HTTPResponse::getReasonForStatus(
      static_cast<Poco::Net::HTTPResponse::HTTPStatus>(status));
  out += "\r\nDate: ";
  out += dateField();
  out += "\r\n";
  if (!content_type.empty()) {
    out += "Content-Type: ";
    out += content_type;
    out += "\r\n";
  }
  for (const auto& [name, value] : headers) {
    out += name;
    out += ": ";
    out += value;
    out += "\r\n";
  }
}

}  // namespace svc::kernel::http
