// RFC 8601 section 5: a border MTA removes the Authentication-Results fields of incoming mail
// that carry its own authserv-id before it adds its own. Such a field was not written by us (we
// add ours after this), so it is a forgery: left in, anything that reads the message later would
// take its `dkim=pass` as our verdict. Fields of other servers are kept: they are theirs to
// vouch for, and a reader can tell them apart by their authserv-id.
//
// The checks read the message as it arrived (a DKIM signature may cover such a field); what is
// stored and spooled is the message without the forgeries, below our own header.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace svc::plugins::email {

/// @param message a message as received (CRLF or LF). @param authserv_id this server's name in
/// Authentication-Results (its SMTP hostname). @return the message without the top-level
/// Authentication-Results fields naming authserv_id (any case, quoted or not, after comments);
/// nullopt when it has none.
std::optional<std::string> withoutOwnResults(std::string_view message,
                                             std::string_view authserv_id);

}  // namespace svc::plugins::email
