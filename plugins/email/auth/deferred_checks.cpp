#include "auth/deferred_checks.h"

#include <svc/sdk/util.h>

#include <Poco/NumberParser.h>
#include <Poco/StringTokenizer.h>

namespace svc::plugins::email {

namespace {

// base64url has no '.': it stands for the empty string, which base64url writes as nothing.
constexpr const char* kEmpty = ".";

std::string token(std::string_view bytes) {
  return bytes.empty() ? kEmpty : sdk::base64url(bytes);
}

class Reader {
 public:
  explicit Reader(std::string_view text)
      : tokens_(std::string(text), " ", Poco::StringTokenizer::TOK_IGNORE_EMPTY) {}

  bool done() const { return at_ == tokens_.count(); }
  std::optional<std::string> bytes() {
    if (done()) return std::nullopt;
    const std::string& t = tokens_[at_++];
    if (t == kEmpty) return std::string();
    return sdk::base64urlDecode(t);
  }
  std::optional<Poco::Int64> number() {
    Poco::Int64 n = 0;
    if (done() || !Poco::NumberParser::tryParse64(tokens_[at_++], n)) return std::nullopt;
    return n;
  }

 private:
  Poco::StringTokenizer tokens_;
  std::size_t at_ = 0;
};

}  // namespace

std::string DeferredChecks::text() const {
  std::string out = std::to_string(arrived);
  for (const std::string* s :
       {&spf.result, &spf.domain, &spf.client_ip, &spf.helo, &spf.mail_from}) {
    out += ' ';
    out += token(*s);
  }
  for (const auto& r : answers) {
    out += ' ' + token(r.name) + ' ' + std::to_string(r.type) + ' ' +
           std::to_string(static_cast<int>(r.answer.status)) + ' ' +
           std::to_string(r.answer.records.size());
    for (const auto& record : r.answer.records) out += ' ' + token(record);
  }
  return out;
}

std::optional<DeferredChecks> DeferredChecks::parse(std::string_view text) {
  Reader in(text);
  DeferredChecks out;
  const auto arrived = in.number();
  if (!arrived) return std::nullopt;
  out.arrived = *arrived;
  for (std::string* s :
       {&out.spf.result, &out.spf.domain, &out.spf.client_ip, &out.spf.helo, &out.spf.mail_from}) {
    auto b = in.bytes();
    if (!b) return std::nullopt;
    *s = std::move(*b);
  }
  while (!in.done()) {
    DnsResolver::Recorded r;
    auto name = in.bytes();
    const auto type = in.number();
    const auto status = in.number();
    const auto count = in.number();
    if (!name || !type || !status || !count || *status < 0 ||
        *status > static_cast<int>(DnsAnswer::Status::kFailed) || *count < 0) {
      return std::nullopt;
    }
    r.name = std::move(*name);
    r.type = static_cast<int>(*type);
    r.answer.status = static_cast<DnsAnswer::Status>(*status);
    for (Poco::Int64 i = 0; i < *count; ++i) {
      auto record = in.bytes();
      if (!record) return std::nullopt;
      r.answer.records.push_back(std::move(*record));
    }
    out.answers.push_back(std::move(r));
  }
  return out;
}

}  // namespace svc::plugins::email
