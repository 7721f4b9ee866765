// Sender rules: per identity (and per account, as a default) allow and block lists of addresses
// and domains, applied when mail arrives: to the envelope sender at SMTP RCPT, and to the header
// From (the author DMARC judges) at the end of DATA, so that neither the null sender nor a From
// other than the envelope's gets a message past them; local delivery judges the sending inbox's
// address, which is both. This file is the pure part: what a pattern may be, and how the rules
// that apply decide.
//
// How identity and account rules combine (plugins/email/README.md, Sender rules):
// - The identity's own rules are asked first, then the account's defaults: the first of the two
//   layers with a rule matching the sender decides. So an identity can allow a sender its account
//   blocks, or block one its account allows.
// - Within a layer the most specific matching pattern decides: an address beats a domain, a
//   longer domain (more labels) beats a shorter one; on a tie, block wins. So `allow example.com`
//   with `block spam@example.com` refuses only that address.
// - When no rule matches, the sender is accepted unless an allow rule exists in either layer (an
//   allow list is present): then only senders it names are accepted.
// - The null sender (`MAIL FROM:<>`, bounces and other delivery reports) is accepted at RCPT:
//   refusing it would lose the reports of our own mail that bounced. Every message is judged by
//   its From at the end of DATA and again when filed (judgeAuthor): under an allow list it must
//   name exactly one valid, allowed From; a block rule matching any From mailbox refuses it. A
//   report consumed as a bounce of our own mail is never judged: it is not shown as mail.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace svc::plugins::email {

/// One rule as stored.
struct SenderRule {
  std::string id, account_id;
  std::string identity_uuid;  ///< "" for an account-wide default.
  std::string kind;           ///< `allow` or `block`.
  std::string pattern;        ///< A lower-case address, or a lower-case domain (no `@`).
  std::int64_t created_us = 0;
};

/// Most rules one account may hold (its identities' and its defaults together): enough for any
/// hand-kept list, few enough that every RCPT can scan them from memory.
constexpr std::size_t kMaxRulesPerAccount = 1000;

/// @param raw what a client sent: an address (`bob@example.com`), or a domain (`example.com`, a
/// leading `@` allowed), any case, spaces around ignored. @param error set to why, when it is
/// none of those. @return the stored form: lower-case, a domain without its `@`.
std::optional<std::string> normalizedPattern(const std::string& raw, std::string& error);

/// What the rules say about a sender.
struct SenderVerdict {
  bool accepted = true;
  std::string reason;  ///< When refused: a sentence for the sender's server (no pattern named).
};

/// @param rules the account's rules (defaults and every identity's; others are ignored).
/// @param identity the recipient identity. @param sender the envelope sender ("" for the null
/// sender), any case. @return the verdict, combining the layers as this file's comment says.
SenderVerdict judgeSender(const std::vector<SenderRule>& rules, const std::string& identity,
                          const std::string& sender);

/// A message's From as the rules see it.
struct Author {
  /// The author DMARC judges and the views show: lower-case, "" unless the message has exactly
  /// one From field of one valid mailbox.
  std::string address;
  /// Every mailbox of every From field, lower-case, quotes around a local part and a trailing
  /// dot of a domain dropped: what a block rule must not match, however the header is made.
  std::vector<std::string> mailboxes;
};

/// The judgement of a message's From (at the end of DATA, and again when it is filed, on what
/// the views will show). Under an allow list, the message must name exactly one valid From the
/// list allows, whatever the envelope sender (which anyone may write); otherwise every From
/// mailbox is judged and one blocked is enough to refuse.
SenderVerdict judgeAuthor(const std::vector<SenderRule>& rules, const std::string& identity,
                          const Author& from);

}  // namespace svc::plugins::email
