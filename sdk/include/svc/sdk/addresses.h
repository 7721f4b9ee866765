// Addresses people and agents give: email addresses (the RFC 5321 dot-atom subset this server
// accepts), phone numbers (E.164), and URLs svcd itself will call (voice agents' response URLs,
// webhooks). Plugins that store or send to addresses check them the same way.
//
// The public-address rule: a URL given by a client is called from inside the operator's network,
// so it must not reach an address that is not globally reachable (server-side request forgery):
// loopback, private, link-local, carrier-grade NAT, documentation, benchmarking, reserved,
// unspecified, multicast, nor an IPv6 form that carries such an IPv4 address. It is checked when
// the URL is stored, and again when it is called, against the address actually connected to (a name
// may resolve elsewhere by then: DNS rebinding). Tests allow private addresses with a plugin's own
// `allow_private_urls` key.
#pragma once

#include <Poco/Net/IPAddress.h>
#include <Poco/URI.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace svc::sdk {

/// @param local a candidate local part of someone else's address (a recipient, an SMTP path).
/// @return true for an RFC 5321 dot-atom of at most 64 characters: atext, no leading, trailing
/// or consecutive dots.
bool isDotAtomLocalPart(std::string_view local);
/// @param domain a candidate. @return true for a host name of two or more labels (letters,
/// digits and inner hyphens, at most 63 each; the last not all digits).
bool isValidDomain(std::string_view domain);
/// @param address a candidate `local@domain`. @return true when it is one this server accepts:
/// at most 254 characters, an isDotAtomLocalPart local part and an isValidDomain host.
bool isValidEmailAddress(std::string_view address);
/// @param text a candidate number. @return it in E.164 (`+` and 8-15 digits, the first not 0)
/// with spaces, hyphens, dots and parentheses removed, or nullopt when it is not one.
std::optional<std::string> normalizeE164(const std::string& text);

/// @param address an IP address. @return true for an address a server-side call must not reach
/// unless allowed: one in a block of the IANA IPv4 or IPv6 Special-Purpose Address Registry that
/// is not globally reachable (192.0.0.0/24 and 2001::/23 whole but for the latter's AMT, AS112,
/// ORCHIDv2 and drone ID blocks), multicast, IPv6 outside 2000::/3, 6to4 and Teredo; IPv4-mapped
/// (::ffff:0:0/96) and NAT64 (64:ff9b::/96) addresses as the IPv4 address they carry.
bool isInternalAddress(const Poco::Net::IPAddress& address);

/// Checks a URL a client wants svcd to call. @param raw the URL. @param field the body field it
/// came in, named in the error. @param allow_private whether internal addresses may be named
/// (tests). @param allow_key the configuration key that sets allow_private, named in the refusal
/// of an internal address so that whoever runs a test server finds the switch (empty: none named).
/// @return the parsed URL. @throws HttpError 400 `invalid` naming field: longer than 2048
/// characters, not an absolute http or https URL, carrying credentials or a fragment, a host that
/// does not resolve, or (unless allowed) one that resolves to an internal address.
Poco::URI checkedPublicUrl(const std::string& raw, const std::string& field, bool allow_private,
                           const std::string& allow_key = "");

/// @param host a URL's host (a name or an IP literal). @param allow_private whether internal
/// addresses may be kept. @return its addresses that the rule allows, in resolver order (empty
/// when none is allowed). @throws Poco::Exception when the name does not resolve.
std::vector<Poco::Net::IPAddress> allowedAddresses(const std::string& host, bool allow_private);

}  // namespace svc::sdk
