// The three checks of an inbound message, every DNS question through our DnsResolver: SPF
// (libspf2), DKIM (our auth/dkim_verify, which verifies what libopendkim verifies and keeps
// decoded keys), DMARC (libopendmarc, given the record we looked up). Each says temperror when
// DNS failed, never throws for what a client sent.
#pragma once

#include "auth/authentication.h"
#include "auth/dns_resolver.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace svc::plugins::email {

/// SPF (RFC 7208) of the connecting address for the envelope sender, or for the HELO name when
/// the sender is empty (a bounce).
SpfOutcome checkSpf(DnsResolver& dns, const std::string& client_ip, const std::string& helo,
                    const std::string& mail_from);

/// Every DKIM-Signature of the message (RFC 6376), in order. @param data the message, CRLF.
/// @param now the time its signatures are judged at (t=, x=), seconds since the epoch; 0: now.
std::vector<DkimOutcome> checkDkim(DnsResolver& dns, std::string_view data, std::int64_t now = 0);
/// Looks up the keys checkDkim would ask for, so that a DnsResolver::Recording around it (or the
/// cache) holds them for a check completed later (Authenticator::complete).
void prefetchDkimKeys(DnsResolver& dns, std::string_view data);

/// @return the lower-case domain of the message's (first) From address; "" when it has none.
std::string fromDomain(std::string_view data);

/// Looks up the DMARC record that applies to from_domain (into the resolver's cache), to be done
/// before the other checks: a sender's own slow or silent zones (its DKIM keys, its SPF includes)
/// must not spend the message's DNS time or pause the From domain's zone before its policy is
/// known. @return false when that policy cannot be reject (no record, or a record whose p= and
/// sp= libopendmarc reads as something else), true when it may be, the record cannot be read, or
/// the lookup failed.
bool dmarcMayReject(DnsResolver& dns, const std::string& from_domain);
/// DMARC (RFC 7489) of from_domain, given the SPF and DKIM outcomes. Without a DMARC record the
/// result is none, and the alignment flags still say whether SPF or DKIM passed for a domain
/// aligned (relaxed) with From.
DmarcOutcome checkDmarc(DnsResolver& dns, const std::string& from_domain, const SpfOutcome& spf,
                        const std::vector<DkimOutcome>& dkim);

/// @return the organizational domain of a domain (the public suffix list's answer).
std::string organizationalDomain(const std::string& domain);
/// @return the public suffix list's path when it could not be read (nullopt when loaded):
/// without it every domain is its own organizational domain, so DMARC's relaxed alignment
/// becomes strict and each subdomain counts as a DNS zone of its own.
std::optional<std::string> missingSuffixList();

}  // namespace svc::plugins::email
