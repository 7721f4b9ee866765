#include "auth/own_results.h"

#include <Poco/String.h>

#include <utility>
#include <vector>

namespace svc::plugins::email {

namespace {

bool isWsp(char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

// RFC 2045 tspecials and what ends a token: an authserv-id is a token or a quoted-string.
bool endsToken(char c) {
  return isWsp(c) || static_cast<unsigned char>(c) < 0x20 ||
         std::string_view("()<>@,;:\\\"/[]?=").find(c) != std::string_view::npos;
}

// @return the authserv-id at the start of an Authentication-Results value, after any comments
// and folding whitespace (CFWS), unquoted.
std::string authservId(std::string_view v) {
  std::size_t i = 0;
  for (;;) {
    while (i < v.size() && isWsp(v[i])) ++i;
    if (i >= v.size() || v[i] != '(') break;
    for (int depth = 0; i < v.size(); ++i) {  // a comment, nested ones and quoted-pairs in it
      if (v[i] == '\\') {
        ++i;
      } else if (v[i] == '(') {
        ++depth;
      } else if (v[i] == ')' && --depth == 0) {
        ++i;
        break;
      }
    }
  }
  std::string id;
  if (i < v.size() && v[i] == '"') {
    for (++i; i < v.size() && v[i] != '"'; ++i) {
      if (v[i] == '\\' && i + 1 < v.size()) ++i;
      if (v[i] != '\r' && v[i] != '\n') id += v[i];
    }
  } else {
    for (; i < v.size() && !endsToken(v[i]); ++i) id += v[i];
  }
  return id;
}

bool namesUs(std::string_view field, std::string_view authserv_id) {
  const std::size_t colon = field.find(':');
  if (colon == std::string_view::npos) return false;
  std::string_view name = field.substr(0, colon);
  while (!name.empty() && (name.back() == ' ' || name.back() == '\t')) name.remove_suffix(1);
  if (Poco::icompare(std::string(name), "Authentication-Results") != 0) return false;
  std::string id = authservId(field.substr(colon + 1));
  std::string ours(authserv_id);
  for (std::string* s : {&id, &ours}) {  // a domain's trailing dot names the same domain
    if (!s->empty() && s->back() == '.') s->pop_back();
  }
  return !ours.empty() && Poco::icompare(id, ours) == 0;
}

// @return where the line starting at pos ends (after its LF, or the end).
std::size_t lineEnd(std::string_view s, std::size_t pos) {
  const std::size_t eol = s.find('\n', pos);
  return eol == std::string_view::npos ? s.size() : eol + 1;
}

}  // namespace

std::optional<std::string> withoutOwnResults(std::string_view message,
                                             std::string_view authserv_id) {
  std::vector<std::pair<std::size_t, std::size_t>> drop;
  std::size_t pos = 0;
  while (pos < message.size()) {
    const char first = message[pos];
    if (first == '\n' || (first == '\r' && pos + 1 < message.size() && message[pos + 1] == '\n')) {
      break;  // the empty line: the body follows, and nothing in it is a header
    }
    std::size_t end = lineEnd(message, pos);
    if (first == ' ' || first == '\t') {  // folded on from a line that is not a field: kept
      pos = end;
      continue;
    }
    while (end < message.size() && (message[end] == ' ' || message[end] == '\t')) {
      end = lineEnd(message, end);  // the field's continuation lines
    }
    if (namesUs(message.substr(pos, end - pos), authserv_id)) drop.emplace_back(pos, end);
    pos = end;
  }
  if (drop.empty()) return std::nullopt;
  std::string out;
  out.reserve(message.size());
  std::size_t kept = 0;
  for (const auto& [from, to] : drop) {
    out.append(message.substr(kept, from - kept));
    kept = to;
  }
  out.append(message.substr(kept));
  return out;
}

}  // namespace svc::plugins::email
