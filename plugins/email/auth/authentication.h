// What the checks of one inbound message found (SPF, DKIM, DMARC), the overall verdict drawn from
// them, what the DMARC policy asks us to do, and the RFC 8601 Authentication-Results header that
// records it. Plain data and pure functions: the checks live in auth/checks.*, the threads in
// auth/authenticator.*.
//
// Result names are RFC 8601's: pass, fail, softfail, neutral, none, temperror, permerror.
#pragma once

#include <Poco/JSON/Object.h>

#include <optional>
#include <string>
#include <vector>

namespace svc::plugins::email {

struct SpfOutcome {
  std::string result = "none";
  std::string domain;  ///< The domain checked: the envelope sender's, else the HELO name.
  std::string client_ip, helo, mail_from;
};

struct DkimOutcome {
  std::string result, domain, selector;
};

struct DmarcOutcome {
  std::string result = "none";  ///< pass, fail, none (no record), temperror, permerror.
  std::string policy;           ///< none, quarantine, reject; empty without a record.
  std::string from_domain;
  bool spf_aligned = false, dkim_aligned = false;
};

/// What a DMARC result asks of the receiver. kDefer: try again later (451), the policy being
/// known and only a DNS error standing between the message and its failure.
enum class PolicyAction { kAccept, kQuarantine, kReject, kDefer };

struct Authentication {
  std::string source = "smtp";  ///< smtp, or local (between identities of this server).
  std::optional<SpfOutcome> spf;
  std::vector<DkimOutcome> dkim;
  std::optional<DmarcOutcome> dmarc;
  std::string verdict = "none";  ///< pass, fail, none.
  std::string reason;            ///< Why, in a few words.
  std::string header;            ///< `Authentication-Results: ...`, unfolded.
};

/// Draws the verdict and its reason from spf, dkim and dmarc (see authentication.cpp).
void decideVerdict(Authentication& a);
/// @return what a DMARC outcome asks for when enforcing: a failure under p=reject or
/// p=quarantine; a temperror (a DNS error about a domain aligned with From) under p=reject is
/// deferred, under p=quarantine quarantined, since a sender can cause such errors on purpose
/// (a key name no resolver asks, a DNS budget spent on its own slow zones); kAccept otherwise.
PolicyAction dmarcAction(const std::optional<DmarcOutcome>& dmarc);
/// @param authserv_id this server's SMTP hostname. @return the header line (RFC 8601), unfolded.
std::string authenticationResults(const Authentication& a, const std::string& authserv_id);
/// @return the header folded into lines under 78 octets where it can be, CRLF-terminated.
std::string foldHeader(const std::string& header);
/// The verdict of mail one identity of this server sent another through the API (never over
/// SMTP): pass, since the sender proved who it is to this server. @param from its address.
Authentication localAuthentication(const std::string& from, const std::string& authserv_id);

Poco::JSON::Object::Ptr authenticationJson(const Authentication& a);
/// @return the JSON text of a. @see authenticationJson
std::string authenticationText(const Authentication& a);

}  // namespace svc::plugins::email
