// Mail as bytes: parsing what arrives (RFC 5322 headers, MIME structure, transfer encodings,
// RFC 2047 words, charsets to UTF-8) and writing what leaves. Parsing never throws on bad input:
// whatever cannot be read is kept as safely as possible and named in `problems`. Parsing lives in
// mime_parse.cpp, header fields in mime_header.cpp, charsets and transfer encodings in
// mime_text.cpp, writing in mime_build.cpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace svc::plugins::email {

/// One mailbox of an address header.
struct Mailbox {
  std::string name;     ///< Display name, UTF-8 (may be empty).
  std::string address;  ///< `local@domain` as written (domain lower-cased).
};

/// A part kept as an attachment.
struct ParsedAttachment {
  std::string filename;      ///< UTF-8; generated when the part names none.
  std::string content_type;  ///< `type/subtype`, lower-case.
  std::string data;          ///< The decoded bytes.
};

/// A parsed message.
struct ParsedMessage {
  std::vector<std::pair<std::string, std::string>> headers;  ///< Unfolded, as received.
  std::vector<Mailbox> from, to, cc, reply_to;
  std::string subject;  ///< Decoded to UTF-8.
  std::string message_id, in_reply_to;
  std::vector<std::string> references;  ///< Message-IDs, `<...>` included.
  std::string text, html;               ///< UTF-8 bodies (the first of each kind).
  std::vector<ParsedAttachment> attachments;
  std::vector<std::string> problems;  ///< What was malformed, for the log.
};

/// Limits the parser enforces.
struct MimeLimits {
  int max_depth = 16;   ///< Nested multiparts deeper than this are kept as attachments.
  int max_parts = 500;  ///< Parts beyond this are kept raw as one `truncated-parts` attachment.
  std::size_t max_headers = 1000;  ///< Header fields beyond this are ignored.
};

/// @param raw the message with CRLF (or LF) line ends. @param limits the limits.
/// @return what could be read; never throws on malformed input.
ParsedMessage parseMessage(std::string_view raw, const MimeLimits& limits = {});

/// @param raw a message. @param max_headers as MimeLimits'. @return its header fields (name,
/// unfolded value) as parseMessage reads them: what checks of the header must judge, so that
/// what they judge is what the message's views show.
std::vector<std::pair<std::string, std::string>> topHeaders(
    std::string_view raw, std::size_t max_headers = MimeLimits{}.max_headers);

/// @param headers a message's header fields (topHeaders). @return the address of the one mailbox
/// of its one From field, as written; "" when it has not exactly one From field of exactly one
/// mailbox (RFC 7489 section 6.6.1: no author to judge). What DMARC and the sender rules judge.
std::string authorAddress(const std::vector<std::pair<std::string, std::string>>& headers);

/// @param value a header value with RFC 2047 encoded words. @return it in UTF-8.
std::string decodeHeaderWords(std::string_view value);
/// @param bytes text in charset. @param charset its name (any case; empty: us-ascii).
/// @return valid UTF-8 (invalid sequences become U+FFFD).
std::string toUtf8(std::string_view bytes, std::string_view charset);
/// @param value an address-list header value. @return its mailboxes (groups flattened).
std::vector<Mailbox> parseAddressList(std::string_view value);
/// @param value a header value such as References. @return the `<...>` ids in it, in order.
std::vector<std::string> parseMessageIds(std::string_view value);
/// @param html an HTML body. @return its text, for previews and messages without a text part.
std::string htmlToText(std::string_view html);

/// What an outgoing message is made of.
struct OutgoingMail {
  Mailbox from;
  std::vector<Mailbox> to, cc;  ///< Bcc never appears in the bytes.
  std::string subject, content;
  std::string message_id, in_reply_to;  ///< `<...>`; in_reply_to may be empty.
  std::vector<std::string> references;
  std::int64_t date_us = 0;
  std::vector<ParsedAttachment> attachments;
};

/// @param mail the message. @return RFC 5322 bytes with CRLF line ends, lines under 1000
/// octets, non-ASCII headers as RFC 2047 words, text as quoted-printable UTF-8.
std::string buildMessage(const OutgoingMail& mail);

}  // namespace svc::plugins::email
