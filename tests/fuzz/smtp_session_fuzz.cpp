// Fuzzes the SMTP conversation (SmtpSession: the protocol as a state machine over bytes) with the
// client's bytes. The first input byte picks how the bytes are split (1-64 per feed), whether
// STARTTLS is offered and the memory budget; the rest is what the client sends.
//
// What the listener relies on, checked three ways at once: the same bytes fed whole, fed in
// pieces, and fed whole to a delivery that answers only at the end (as a busy spool does) give
// the same replies in the same order and store the same messages; every reply is one or more
// lines of a three-digit code; a stored message has CRLF line ends only and fits the size limit;
// and a session gives its whole share of the memory budget back when it ends.
#include "email_config.h"
#include "fuzz_check.h"
#include "smtp_session.h"

#include <Poco/Logger.h>

#include <string>
#include <vector>

using namespace svc::plugins::email;

namespace {

class Delivery : public SmtpDelivery {
 public:
  explicit Delivery(bool late) : late_(late) {}
  bool acceptsRecipient(const std::string& address) override {
    return address.rfind("in", 0) == 0;  // in@..., inbox@..., innocent@...
  }
  void deliver(const SmtpClient&, const std::string&, const std::vector<std::string>&,
               const std::string&) override {}
  void deliverAsync(const SmtpClient&, const std::string&, const std::vector<std::string>&,
                    std::string data, Stored stored) override {
    messages.push_back(std::move(data));
    if (late_) {
      pending.push_back(std::move(stored));
    } else {
      stored("");
    }
  }
  void answerAll() {
    for (auto& stored : pending) stored("");
    pending.clear();
  }
  std::vector<std::string> messages;
  std::vector<Stored> pending;

 private:
  bool late_;
};

void checkReplies(const std::string& out) {
  std::size_t at = 0;
  while (at < out.size()) {
    std::size_t eol = out.find("\r\n", at);
    FUZZ_CHECK(eol != std::string::npos, "a reply line without CRLF");
    std::string line = out.substr(at, eol - at);
    FUZZ_CHECK(line.size() >= 4 && std::isdigit(static_cast<unsigned char>(line[0])) &&
                   std::isdigit(static_cast<unsigned char>(line[1])) &&
                   std::isdigit(static_cast<unsigned char>(line[2])) &&
                   (line[3] == ' ' || line[3] == '-'),
               "a reply line that is not a code");
    FUZZ_CHECK(line.find('\r') == std::string::npos && line.find('\n') == std::string::npos,
               "a bare CR or LF inside a reply");
    at = eol + 2;
  }
}

void checkMessage(const std::string& message, std::size_t limit) {
  FUZZ_CHECK(message.size() <= limit, "a stored message past the size limit");
  for (std::size_t i = 0; i < message.size(); ++i) {
    if (message[i] == '\n') FUZZ_CHECK(i > 0 && message[i - 1] == '\r', "a bare LF stored");
    if (message[i] == '\r') {
      FUZZ_CHECK(i + 1 < message.size() && message[i + 1] == '\n', "a bare CR stored");
    }
  }
}

struct Run {
  std::string out;
  std::vector<std::string> messages;
};

Run converse(const SmtpConfig& config, std::string_view bytes, std::size_t step, bool tls,
             bool late, std::size_t budget_bytes) {
  Delivery delivery(late);
  DataBudget budget(budget_bytes);
  Run run;
  {
    SmtpSession session(
        config, delivery, Poco::Logger::get("fuzz"), tls, [] {}, &budget);
    for (std::size_t at = 0; at < bytes.size(); at += step) session.feed(bytes.substr(at, step));
    delivery.answerAll();
    run.out = session.takeOutput();
    FUZZ_CHECK(!session.answerPending(),
               "an answer still pending after every message was answered");
  }
  FUZZ_CHECK(budget.used() == 0, "a session kept part of the memory budget after it ended");
  run.messages = std::move(delivery.messages);
  return run;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  static const SmtpConfig declared = EmailConfig::defaults().smtp;
  SmtpConfig config = declared;
  config.hostname = "here.test";
  config.max_message_bytes = 2000;
  config.max_recipients = 3;
  const std::size_t step = 1 + (data[0] & 0x3f);
  const bool tls = (data[0] & 0x40) != 0;
  const std::size_t budget = (data[0] & 0x80) ? 600 : 1 << 20;
  const std::string_view bytes = svc::fuzz::asView(data + 1, size - 1);

  Run whole = converse(config, bytes, bytes.size() + 1, tls, false, budget);
  Run split = converse(config, bytes, step, tls, false, budget);
  Run late = converse(config, bytes, bytes.size() + 1, tls, true, budget);
  checkReplies(whole.out);
  for (const auto& m : whole.messages) checkMessage(m, config.max_message_bytes);
  FUZZ_CHECK(split.out == whole.out, "replies depend on how the bytes were split");
  FUZZ_CHECK(split.messages == whole.messages, "messages depend on how the bytes were split");
  FUZZ_CHECK(late.out == whole.out, "replies depend on when the messages were answered");
  FUZZ_CHECK(late.messages == whole.messages, "messages depend on when they were answered");
  return 0;
}
