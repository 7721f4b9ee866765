// Fuzzes the delivery report reader (parseDeliveryReport over parseMessage, what SMTP ingest runs
// on every message, and parseDeliveryStatus on raw status fields) with the bounce matching after
// it. A report comes from anyone on the internet.
//
// What the rest of the plugin relies on: the text kept (diagnostic, MTAs) is UTF-8 without control
// characters because it goes into JSON and svcctl's terminal; addresses are valid or empty, status
// codes well formed or empty; at most kMaxReportedRecipients recipients; a bounce names only a
// recipient of the message.
#include "bounces/bounce_intake.h"
#include "bounces/dsn.h"
#include "fuzz_check.h"

#include <svc/sdk/addresses.h>
#include <svc/sdk/util.h>

using namespace svc;
using namespace svc::plugins::email;

namespace {

void checkLine(const std::string& s, std::size_t max, const char* what) {
  FUZZ_CHECK(sdk::isValidUtf8(s), what);
  FUZZ_CHECK(s.size() <= max, what);
  for (unsigned char c : s) FUZZ_CHECK(c >= 0x20 && c != 0x7f, what);
}

void checkReport(const DeliveryReport& r) {
  FUZZ_CHECK(r.recipients.size() <= kMaxReportedRecipients, "too many recipients");
  checkLine(r.reporting_mta, 255, "the reporting MTA");
  for (const auto& n : r.recipients) {
    checkLine(n.diagnostic, 1000, "a diagnostic");
    checkLine(n.remote_mta, 255, "a remote MTA");
    for (const auto* a : {&n.final_recipient, &n.original_recipient}) {
      FUZZ_CHECK(a->empty() || sdk::isValidEmailAddress(*a), "an invalid address");
    }
    FUZZ_CHECK(n.status.empty() || (n.status.size() >= 5 && n.status[1] == '.'), "a status");
  }
  const std::vector<std::string> ours = {"a@example.com", "b@example.com"};
  for (const auto& b : reportedBounces(r, ours, 1, true)) {
    FUZZ_CHECK(b.recipient == ours[0] || b.recipient == ours[1], "a stranger bounced");
    FUZZ_CHECK(sdk::isValidUtf8(b.reason) && !b.reason.empty(), "a bounce's reason");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view raw = fuzz::asView(data, size);
  if (auto r = parseDeliveryReport(parseMessage(raw))) checkReport(*r);
  checkReport(parseDeliveryStatus(raw));
  return 0;
}
