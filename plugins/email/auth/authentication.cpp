#include "auth/authentication.h"

#include <Poco/JSON/Array.h>
#include <Poco/JSONString.h>

#include <algorithm>

namespace svc::plugins::email {

namespace {

// A property value (RFC 8601 pvalue): an address or domain as it is, anything else quoted.
std::string pvalue(const std::string& v) {
  bool plain = !v.empty();
  for (unsigned char c : v) {
    if (!(std::isalnum(c) || c == '.' || c == '@' || c == '-' || c == '_' || c == '+')) {
      plain = false;
    }
  }
  if (plain) return v;
  std::string q = "\"";
  for (unsigned char c : v) {
    if (c < 0x20 || c == 0x7f) continue;  // no control characters in a header
    if (c == '"' || c == '\\') q += '\\';
    q += static_cast<char>(c);
  }
  return q + "\"";
}

}  // namespace

// The verdict answers one question for an agent: did the domain in From really send this?
// - DMARC pass: pass. DMARC fail: fail (the domain says mail failing its checks is not its own).
// - A temporary DNS failure anywhere DMARC needed: none; it may pass when asked again.
// - No DMARC record: pass when SPF or DKIM passed for a domain aligned with From (the same
//   organizational domain, as DMARC's relaxed mode reads it); fail when SPF failed outright
//   (the domain listed its senders and this is not one); else none.
void decideVerdict(Authentication& a) {
  if (a.source == "local") return;
  if (!a.dmarc) {
    a.verdict = "none";
    if (a.reason.empty()) a.reason = "not checked";
    return;
  }
  const DmarcOutcome& d = *a.dmarc;
  const std::string spf = a.spf ? a.spf->result : "none";
  if (d.result == "pass") {
    a.verdict = "pass";
    a.reason = std::string("DMARC pass (") + (d.dkim_aligned ? "DKIM" : "SPF") + " aligned with " +
               d.from_domain + ")";
  } else if (d.result == "fail") {
    a.verdict = "fail";
    a.reason = "DMARC fail: no SPF or DKIM pass aligned with " + d.from_domain + " (policy " +
               d.policy + ")";
  } else if (d.result == "temperror") {
    a.verdict = "none";
    a.reason = "a DNS lookup failed for now (temperror)";
  } else if (d.spf_aligned || d.dkim_aligned) {
    a.verdict = "pass";
    a.reason = std::string(d.dkim_aligned ? "DKIM" : "SPF") + " pass aligned with " +
               d.from_domain + "; the domain publishes no DMARC policy";
  } else if (spf == "fail") {
    a.verdict = "fail";
    a.reason = "SPF fail: " + a.spf->client_ip + " is not a sender of " + a.spf->domain;
  } else {
    a.verdict = "none";
    a.reason = d.from_domain.empty() ? "the message has no From domain"
                                     : "nothing authenticates " + d.from_domain;
  }
}

PolicyAction dmarcAction(const std::optional<DmarcOutcome>& dmarc) {
  if (!dmarc || (dmarc->result != "fail" && dmarc->result != "temperror")) {
    return PolicyAction::kAccept;
  }
  const bool failed = dmarc->result == "fail";
  if (dmarc->policy == "reject") return failed ? PolicyAction::kReject : PolicyAction::kDefer;
  if (dmarc->policy == "quarantine") return PolicyAction::kQuarantine;
  return PolicyAction::kAccept;
}

std::string authenticationResults(const Authentication& a, const std::string& authserv_id) {
  std::string h = "Authentication-Results: " + authserv_id;
  if (a.source == "local") {
    const std::string from = a.spf ? a.spf->mail_from : "";
    return h + "; auth=pass (delivered within this server)" +
           (from.empty() ? "" : " smtp.auth=" + pvalue(from));
  }
  if (!a.spf && a.dkim.empty() && !a.dmarc) return h + "; none";
  if (a.spf) {
    h += "; spf=" + a.spf->result;
    if (!a.spf->mail_from.empty()) h += " smtp.mailfrom=" + pvalue(a.spf->mail_from);
    if (!a.spf->helo.empty()) h += " smtp.helo=" + pvalue(a.spf->helo);
  }
  if (a.dkim.empty()) h += "; dkim=none";
  for (const auto& d : a.dkim) {
    h += "; dkim=" + d.result;
    if (!d.domain.empty()) h += " header.d=" + pvalue(d.domain);
    if (!d.selector.empty()) h += " header.s=" + pvalue(d.selector);
  }
  if (a.dmarc) {
    h += "; dmarc=" + a.dmarc->result;
    if (!a.dmarc->policy.empty()) h += " (p=" + a.dmarc->policy + ")";
    if (!a.dmarc->from_domain.empty()) h += " header.from=" + pvalue(a.dmarc->from_domain);
  }
  return h;
}

std::string foldHeader(const std::string& header) {
  // Each result on its own continuation line: "; " becomes ";\r\n\t".
  std::string out;
  out.reserve(header.size() + 16);
  bool quoted = false;
  for (std::size_t i = 0; i < header.size(); ++i) {
    const char c = header[i];
    if (c == '"' && (i == 0 || header[i - 1] != '\\')) quoted = !quoted;
    if (!quoted && c == ';' && i + 1 < header.size() && header[i + 1] == ' ') {
      out += ";\r\n\t";
      ++i;
      continue;
    }
    out += c;
  }
  return out + "\r\n";
}

Authentication localAuthentication(const std::string& from, const std::string& authserv_id) {
  Authentication a;
  a.source = "local";
  a.verdict = "pass";
  a.reason = "sent by an identity of this server, which proved who it is to the API";
  SpfOutcome sender;  // only to carry the address into the header
  sender.mail_from = from;
  a.spf = sender;
  a.header = authenticationResults(a, authserv_id);
  a.spf.reset();
  return a;
}

Poco::JSON::Object::Ptr authenticationJson(const Authentication& a) {
  Poco::JSON::Object::Ptr o = new Poco::JSON::Object;
  o->set("verdict", a.verdict);
  o->set("reason", a.reason);
  o->set("source", a.source);
  if (a.spf) {
    Poco::JSON::Object::Ptr spf = new Poco::JSON::Object;
    spf->set("result", a.spf->result);
    spf->set("domain", a.spf->domain);
    spf->set("client_ip", a.spf->client_ip);
    spf->set("helo", a.spf->helo);
    spf->set("mail_from", a.spf->mail_from);
    o->set("spf", spf);
  } else {
    o->set("spf", Poco::Dynamic::Var());
  }
  Poco::JSON::Array::Ptr dkim = new Poco::JSON::Array;
  for (const auto& d : a.dkim) {
    Poco::JSON::Object::Ptr sig = new Poco::JSON::Object;
    sig->set("domain", d.domain);
    sig->set("selector", d.selector);
    sig->set("result", d.result);
    dkim->add(sig);
  }
  o->set("dkim", dkim);
  if (a.dmarc) {
    Poco::JSON::Object::Ptr dmarc = new Poco::JSON::Object;
    dmarc->set("result", a.dmarc->result);
    dmarc->set("policy", a.dmarc->policy.empty() ? Poco::Dynamic::Var()
                                                 : Poco::Dynamic::Var(a.dmarc->policy));
    dmarc->set("from_domain", a.dmarc->from_domain);
    dmarc->set("spf_aligned", a.dmarc->spf_aligned);
    dmarc->set("dkim_aligned", a.dmarc->dkim_aligned);
    o->set("dmarc", dmarc);
  } else {
    o->set("dmarc", Poco::Dynamic::Var());
  }
  o->set("header", a.header);
  return o;
}

// Written directly rather than through authenticationJson(): it is made for every message the
// listener receives, and building Poco's objects of Dynamic::Var cost some 40,000 instructions
// and dozens of allocations a message. The same text: keys in Poco's (sorted) order, strings
// escaped by Poco's own function (a unit test compares the two).
std::string authenticationText(const Authentication& a) {
  std::string out;
  out.reserve(512 + a.header.size() + a.reason.size());
  const auto str = [&out](const std::string& v) {
    // Printable ASCII that no JSON escape touches (Poco's escapes '/' too) goes in as it is;
    // anything else is escaped by Poco.
    const bool plain = std::all_of(v.begin(), v.end(), [](char c) {
      return c >= 0x20 && c < 0x7f && c != '"' && c != '\\' && c != '/';
    });
    if (!plain) {
      out += Poco::toJSON(v, Poco::JSON_WRAP_STRINGS);
      return;
    }
    out += '"';
    out += v;
    out += '"';
  };
  const auto key = [&out, &str](const char* k, bool first = false) {
    if (!first) out += ',';
    str(k);
    out += ':';
  };
  out += '{';
  key("dkim", true);
  out += '[';
  for (std::size_t i = 0; i < a.dkim.size(); ++i) {
    if (i > 0) out += ',';
    out += '{';
    key("domain", true);
    str(a.dkim[i].domain);
    key("result");
    str(a.dkim[i].result);
    key("selector");
    str(a.dkim[i].selector);
    out += '}';
  }
  out += ']';
  key("dmarc");
  if (a.dmarc) {
    const DmarcOutcome& d = *a.dmarc;
    out += '{';
    key("dkim_aligned", true);
    out += d.dkim_aligned ? "true" : "false";
    key("from_domain");
    str(d.from_domain);
    key("policy");
    if (d.policy.empty()) {
      out += "null";
    } else {
      str(d.policy);
    }
    key("result");
    str(d.result);
    key("spf_aligned");
    out += d.spf_aligned ? "true" : "false";
    out += '}';
  } else {
    out += "null";
  }
  key("header");
  str(a.header);
  key("reason");
  str(a.reason);
  key("source");
  str(a.source);
  key("spf");
  if (a.spf) {
    out += '{';
    key("client_ip", true);
    str(a.spf->client_ip);
    key("domain");
    str(a.spf->domain);
    key("helo");
    str(a.spf->helo);
    key("mail_from");
    str(a.spf->mail_from);
    key("result");
    str(a.spf->result);
    out += '}';
  } else {
    out += "null";
  }
  key("verdict");
  str(a.verdict);
  out += '}';
  return out;
}

}  // namespace svc::plugins::email
