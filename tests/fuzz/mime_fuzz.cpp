// Fuzzes the email plugin's message parser (parseMessage, what SMTP ingest and the mail store
// use) on raw RFC 5322 bytes.
//
// What the rest of the plugin relies on: every decoded string (subject, bodies, display names,
// attachment names) is valid UTF-8 because it goes into JSON; an attachment name is one safe file
// name (no slash or backslash, no control character, not "." or "..", at most 255 bytes) because
// clients save it as is. And what we send is what we read: a message rebuilt with buildMessage
// from the parsed subject and attachments parses back to the same subject and attachments.
#include "fuzz_check.h"
#include "mime.h"

#include <svc/sdk/util.h>

#include <cctype>

using namespace svc;
using namespace svc::plugins::email;

namespace {

void checkText(const std::string& s, const char* what) {
  if (!sdk::isValidUtf8(s)) {
    std::fprintf(stderr, "%s is not UTF-8 (%zu bytes)\n", what, s.size());
    FUZZ_CHECK(false, what);
  }
}

void checkMailboxes(const std::vector<Mailbox>& list) {
  for (const auto& m : list) checkText(m.name, "a display name");
}

void checkFilename(const std::string& name) {
  checkText(name, "an attachment name");
  FUZZ_CHECK(!name.empty(), "an empty attachment name");
  FUZZ_CHECK(name.size() <= 255, "an attachment name longer than 255 bytes");
  FUZZ_CHECK(name != "." && name != "..", "a relative attachment name");
  for (unsigned char c : name) {
    FUZZ_CHECK(c != '/' && c != '\\', "a path separator in an attachment name");
    FUZZ_CHECK(c >= 0x20 && c != 0x7f, "a control character in an attachment name");
  }
}

// Runs of whitespace as one space, none at the ends: folding may move whitespace, not text.
std::string normalizeSpace(const std::string& s) {
  std::string out;
  bool space = false;
  for (char c : s) {
    if (c == ' ' || c == '\t') {
      space = true;
      continue;
    }
    if (space && !out.empty()) out += ' ';
    space = false;
    out += c;
  }
  return out;
}

// Types that rebuildMessage writes as a leaf; multipart/* and message/* would be re-read as
// structure, which is correct and not a round trip.
bool simpleLeafType(const std::string& type) {
  std::size_t slash = type.find('/');
  if (slash == std::string::npos || slash == 0 || slash + 1 == type.size()) return false;
  if (type.rfind("multipart/", 0) == 0 || type.rfind("message/", 0) == 0) return false;
  for (unsigned char c : type) {
    if (!(std::isalnum(c) || c == '/' || c == '-' || c == '+' || c == '.')) return false;
  }
  return true;
}

void checkRoundTrip(const ParsedMessage& parsed) {
  for (const auto& a : parsed.attachments) {
    if (!simpleLeafType(a.content_type)) return;
  }
  OutgoingMail out;
  out.from = {"Fuzz", "fuzz@example.org"};
  out.to = {{"", "to@example.org"}};
  out.subject = parsed.subject;
  out.content = "text";
  out.message_id = "<round-trip@example.org>";
  out.date_us = 1700000000000000;
  out.attachments = parsed.attachments;
  std::string bytes = buildMessage(out);
  ParsedMessage again = parseMessage(bytes);
  if (normalizeSpace(again.subject) != normalizeSpace(parsed.subject)) {
    std::fprintf(stderr, "subject [%s] read back as [%s]\n", parsed.subject.c_str(),
                 again.subject.c_str());
    FUZZ_CHECK(false, "the subject did not survive buildMessage + parseMessage");
  }
  FUZZ_CHECK(again.attachments.size() == parsed.attachments.size(),
             "attachments were lost or added by buildMessage + parseMessage");
  for (std::size_t i = 0; i < parsed.attachments.size(); ++i) {
    const auto& a = parsed.attachments[i];
    const auto& b = again.attachments[i];
    FUZZ_CHECK(a.data == b.data, "attachment bytes changed by buildMessage + parseMessage");
    if (a.filename != b.filename) {
      std::fprintf(stderr, "filename [%s] read back as [%s]\n", a.filename.c_str(),
                   b.filename.c_str());
      FUZZ_CHECK(false, "an attachment name changed by buildMessage + parseMessage");
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view raw = fuzz::asView(data, size);
  ParsedMessage m = parseMessage(raw);
  checkText(m.subject, "the subject");
  checkText(m.text, "the text body");
  checkText(m.html, "the HTML body");
  checkMailboxes(m.from);
  checkMailboxes(m.to);
  checkMailboxes(m.cc);
  checkMailboxes(m.reply_to);
  for (const auto& [name, value] : m.headers) checkText(value, "a header value");
  FUZZ_CHECK(m.attachments.size() <= 500, "more attachments than max_parts");
  for (const auto& a : m.attachments) {
    checkFilename(a.filename);
    FUZZ_CHECK(!a.content_type.empty() && a.content_type.size() <= 127, "attachment type size");
    for (char c : a.content_type) {
      FUZZ_CHECK(!std::isupper(static_cast<unsigned char>(c)), "an attachment type not lower-case");
    }
  }
  checkRoundTrip(m);
  return 0;
}
