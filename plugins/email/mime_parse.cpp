// Parsing a received message: the MIME tree, bodies and attachments.
#include "mime.h"
#include "mime_header.h"
#include "mime_text.h"

#include <Poco/String.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <optional>

namespace svc::plugins::email {

namespace {

struct Part {
  std::vector<std::pair<std::string, std::string>> headers;
  std::string_view raw;  // the whole part, headers and body: a view into the message
  std::string_view body;
  std::string header(const std::string& name) const {
    for (const auto& [k, v] : headers) {
      if (Poco::icompare(k, name) == 0) return v;
    }
    return {};
  }
};

// Splits at the first empty line; unfolds headers. Header lines without a colon are skipped.
Part splitPart(std::string_view raw, std::size_t max_headers, std::vector<std::string>& problems) {
  Part part;
  part.raw = raw;
  std::size_t pos = 0;
  std::string current;
  auto flush = [&] {
    if (current.empty()) return;
    std::size_t colon = current.find(':');
    if (colon == std::string::npos || colon == 0) {
      problems.push_back("a header line without a name was skipped");
    } else if (part.headers.size() < max_headers) {
      std::string name(trim(std::string_view(current).substr(0, colon)));
      std::string value(trim(std::string_view(current).substr(colon + 1)));
      part.headers.emplace_back(std::move(name), std::move(value));
    }
    current.clear();
  };
  while (pos < raw.size()) {
    std::size_t eol = raw.find('\n', pos);
    std::string_view line =
        raw.substr(pos, eol == std::string_view::npos ? raw.size() - pos : eol - pos);
    std::size_t next = eol == std::string_view::npos ? raw.size() : eol + 1;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) {
      flush();
      part.body = raw.substr(next);
      return part;
    }
    if ((line[0] == ' ' || line[0] == '\t') && !current.empty()) {
      current += ' ';
      current += trim(line);
    } else {
      flush();
      current = std::string(line);
    }
    pos = next;
  }
  flush();
  part.body = std::string_view();
  return part;
}

std::string extensionFor(const std::string& type) {
  if (type == "text/plain") return ".txt";
  if (type == "text/html") return ".html";
  if (type == "image/png") return ".png";
  if (type == "image/jpeg") return ".jpg";
  if (type == "application/pdf") return ".pdf";
  if (type == "message/rfc822") return ".eml";
  return ".bin";
}

std::string safeFilename(std::string name) {
  name = repairUtf8(name);
  // Path separators and control characters have no place in a file name a client will save.
  std::string out;
  for (unsigned char c : name) {
    if (c < 0x20 || c == 0x7f || c == '/' || c == '\\') {
      out += '_';
    } else {
      out += static_cast<char>(c);
    }
  }
  std::string_view t = trim(out);
  if (t == "." || t == "..") return "_";
  // At most 255 bytes, cut before a character, never inside one.
  std::size_t cut = std::min<std::size_t>(t.size(), 255);
  while (cut < t.size() && cut > 0 && (static_cast<unsigned char>(t[cut]) & 0xC0) == 0x80) --cut;
  return std::string(trim(t.substr(0, cut)));  // the cut may leave spaces at the end
}

class Parser {
 public:
  Parser(ParsedMessage& msg, const MimeLimits& limits, std::string_view message)
      : msg_(msg), limits_(limits), message_(message) {}

  void walk(const Part& part, int depth, const std::string& default_type) {
    if (truncated_) return;
    if (++parts_ > limits_.max_parts) {
      keepRemainder(part);
      return;
    }
    HeaderParams ct = parseParams(part.header("Content-Type"));
    std::string type =
        ct.value.empty() || ct.value.find('/') == std::string::npos ? default_type : ct.value;
    if (type.rfind("multipart/", 0) == 0) {
      std::string boundary = ct.get("boundary");
      if (boundary.empty() || boundary.size() > 200) {
        msg_.problems.push_back("a multipart without a usable boundary was read as text");
        leaf(part, "text/plain", ct);
        return;
      }
      if (depth >= limits_.max_depth) {
        msg_.problems.push_back("multiparts nested too deep were kept as an attachment");
        keepAttachment(part, "application/octet-stream", "nested-parts.bin",
                       std::string(part.body));
        return;
      }
      std::string child_default = type == "multipart/digest" ? "message/rfc822" : "text/plain";
      auto children = splitMultipart(part.body, boundary);
      if (children.empty()) {
        msg_.problems.push_back("a multipart without parts was read as text");
        leaf(part, "text/plain", ct);
        return;
      }
      for (std::string_view child : children) {
        if (truncated_) return;  // the rest is in truncated-parts already
        walk(splitPart(child, limits_.max_headers, msg_.problems), depth + 1, child_default);
      }
      return;
    }
    leaf(part, type, ct);
  }

 private:
  std::vector<std::string_view> splitMultipart(std::string_view body, const std::string& boundary) {
    std::vector<std::string_view> parts;
    const std::string dash = "--" + boundary;
    std::size_t pos = 0;
    std::optional<std::size_t> start;
    bool closed = false;
    while (pos <= body.size()) {
      std::size_t eol = body.find('\n', pos);
      std::size_t line_end = eol == std::string_view::npos ? body.size() : eol;
      std::string_view line = body.substr(pos, line_end - pos);
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      if (line.size() >= dash.size() && line.compare(0, dash.size(), dash) == 0) {
        std::string_view rest = trim(line.substr(dash.size()));
        if (rest.empty() || rest == "--") {
          if (start) {
            // The part ends before the line break that precedes the boundary line.
            std::size_t end = pos;
            if (end > *start && body[end - 1] == '\n') --end;
            if (end > *start && body[end - 1] == '\r') --end;
            parts.push_back(body.substr(*start, end - *start));
          }
          if (rest == "--") {
            closed = true;
            break;
          }
          start = eol == std::string_view::npos ? body.size() : eol + 1;
        }
      }
      if (eol == std::string_view::npos) break;
      pos = eol + 1;
    }
    if (!closed) {
      if (start && *start < body.size()) parts.push_back(body.substr(*start));
      msg_.problems.push_back("a multipart was not closed");
    }
    return parts;
  }

  std::string decodeBody(const Part& part) {
    std::string cte = lower(trim(part.header("Content-Transfer-Encoding")));
    if (cte == "base64") {
      bool bad = false;
      std::string out = decodeBase64Lenient(part.body, &bad);
      if (bad) msg_.problems.push_back("invalid characters in base64 were skipped");
      return out;
    }
    if (cte == "quoted-printable") return decodeQuotedPrintable(part.body, false);
    return std::string(part.body);
  }

  void leaf(const Part& part, const std::string& type, const HeaderParams& ct) {
    HeaderParams disposition = parseParams(part.header("Content-Disposition"));
    std::string filename = disposition.get("filename");
    if (filename.empty()) filename = ct.get("name");
    filename = decodeHeaderWords(filename);
    bool attachment = disposition.value == "attachment" || !filename.empty();
    std::string data = decodeBody(part);
    if (!attachment && (type == "text/plain" || type == "text/html")) {
      std::string text = toUtf8(data, ct.get("charset"));
      std::string& slot = type == "text/plain" ? msg_.text : msg_.html;
      if (slot.empty()) {
        slot = std::move(text);
        return;
      }
    }
    if (filename.empty())
      filename = "attachment-" + std::to_string(msg_.attachments.size() + 1) + extensionFor(type);
    keepAttachment(part, type, filename, std::move(data));
  }

  void keepAttachment(const Part&, const std::string& type, const std::string& filename,
                      std::string data) {
    ParsedAttachment a;
    a.filename = safeFilename(filename);
    if (a.filename.empty()) a.filename = "attachment" + extensionFor(type);
    a.content_type = type.size() > 127 ? "application/octet-stream" : type;
    a.data = std::move(data);
    msg_.attachments.push_back(std::move(a));
  }

  // Parts beyond the limit are not read, but they were received: everything from the first of
  // them to the end of the message is kept, unparsed, as one attachment. The parts are views into
  // the message in document order, so that remainder is also every later sibling of every
  // enclosing multipart; the walk stops there.
  void keepRemainder(const Part& first_unread) {
    truncated_ = true;
    std::string_view rest = first_unread.raw;
    const char* begin = message_.data();
    const char* at = first_unread.raw.data();
    if (at >= begin && at <= begin + message_.size()) rest = message_.substr(at - begin);
    msg_.problems.push_back("more than " + std::to_string(limits_.max_parts) +
                            " MIME parts: the rest is kept unread as truncated-parts");
    ParsedAttachment a;
    a.filename = "truncated-parts";
    a.content_type = "application/octet-stream";
    a.data = std::string(rest);
    msg_.attachments.push_back(std::move(a));
  }

  ParsedMessage& msg_;
  const MimeLimits& limits_;
  std::string_view message_;
  int parts_ = 0;
  bool truncated_ = false;
};

}  // namespace

std::string htmlToText(std::string_view html) {
  std::string out;
  out.reserve(html.size());
  std::size_t i = 0;
  auto startsWithTag = [&](std::size_t at, const char* tag) {
    std::size_t n = std::strlen(tag);
    return html.size() - at >= n && Poco::icompare(std::string(html.substr(at, n)), tag) == 0;
  };
  while (i < html.size()) {
    char c = html[i];
    if (c == '<') {
      // Script and style content is not text.
      for (const char* block : {"<script", "<style"}) {
        if (startsWithTag(i, block)) {
          // Searched in place, case-insensitively: copying and lowering the rest of the page at
          // every <script made a page of them cost quadratic time (5.8 s for 272 KB).
          const std::string close = std::string("</") + (block + 1);
          auto end = std::search(
              html.begin() + static_cast<std::ptrdiff_t>(i), html.end(), close.begin(), close.end(),
              [](char a, char b) { return std::tolower(static_cast<unsigned char>(a)) == b; });
          i = static_cast<std::size_t>(end - html.begin());
          break;
        }
      }
      if (i >= html.size()) break;
      bool breaks = startsWithTag(i, "<br") || startsWithTag(i, "<p") || startsWithTag(i, "</p") ||
                    startsWithTag(i, "<div") || startsWithTag(i, "</div") ||
                    startsWithTag(i, "<tr") || startsWithTag(i, "<li");
      std::size_t end = html.find('>', i);
      i = end == std::string_view::npos ? html.size() : end + 1;
      if (breaks && !out.empty() && out.back() != '\n') out += '\n';
      continue;
    }
    if (c == '&') {
      static const std::pair<const char*, const char*> entities[] = {
          {"&amp;", "&"}, {"&lt;", "<"},   {"&gt;", ">"},  {"&quot;", "\""},
          {"&#39;", "'"}, {"&nbsp;", " "}, {"&apos;", "'"}};
      bool done = false;
      for (const auto& [name, text] : entities) {
        if (startsWithTag(i, name)) {
          out += text;
          i += std::strlen(name);
          done = true;
          break;
        }
      }
      if (done) continue;
    }
    if (c == '\r') {
      ++i;
      continue;
    }
    out += c;
    ++i;
  }
  // Collapse runs of blank space left by markup.
  std::string collapsed;
  int newlines = 0;
  bool space = false;
  for (char c : out) {
    if (c == '\n') {
      if (++newlines <= 2) collapsed += '\n';
      space = false;
    } else if (c == ' ' || c == '\t') {
      space = true;
    } else {
      if (space && !collapsed.empty() && collapsed.back() != '\n') collapsed += ' ';
      space = false;
      newlines = 0;
      collapsed += c;
    }
  }
  return std::string(trim(collapsed));
}

std::vector<std::pair<std::string, std::string>> topHeaders(std::string_view raw,
                                                            std::size_t max_headers) {
  std::vector<std::string> problems;
  return splitPart(raw, max_headers, problems).headers;
}

ParsedMessage parseMessage(std::string_view raw, const MimeLimits& limits) {
  ParsedMessage msg;
  Part top = splitPart(raw, limits.max_headers, msg.problems);
  for (const auto& [name, value] : top.headers) msg.headers.emplace_back(name, headerText(value));
  msg.from = parseAddressList(top.header("From"));
  msg.to = parseAddressList(top.header("To"));
  msg.cc = parseAddressList(top.header("Cc"));
  msg.reply_to = parseAddressList(top.header("Reply-To"));
  msg.subject = decodeHeaderWords(top.header("Subject"));
  auto ids = parseMessageIds(top.header("Message-ID"));
  if (!ids.empty()) msg.message_id = ids.front();
  ids = parseMessageIds(top.header("In-Reply-To"));
  if (!ids.empty()) msg.in_reply_to = ids.front();
  msg.references = parseMessageIds(top.header("References"));
  Parser parser(msg, limits, raw);
  parser.walk(top, 0, "text/plain");
  if (msg.text.empty() && !msg.html.empty()) msg.text = htmlToText(msg.html);
  return msg;
}

}  // namespace svc::plugins::email
