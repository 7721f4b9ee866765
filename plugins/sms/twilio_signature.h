// Twilio's request signature, the X-Twilio-Signature header of its webhooks: base64 of the
// HMAC-SHA1, keyed with the account's auth token, of the URL Twilio requested followed by each
// POST parameter's name and value, sorted by name (a repeated name: its distinct values sorted).
// It is computed and checked as the official helper library does (twilio-node's
// getExpectedTwilioSignature and validateRequest), port variants of the URL included.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace svc::plugins::sms {

/// A form body's fields, decoded, in the order received (names may repeat).
using FormParams = std::vector<std::pair<std::string, std::string>>;

/// @param body an application/x-www-form-urlencoded body (`+` is a space).
/// @return its fields, decoded. @throws Poco::Exception when it is malformed.
FormParams parseForm(const std::string& body);

/// @param auth_token the account's auth token. @param url the full URL requested, query
/// included. @param params the POST parameters. @return the signature Twilio sends for them.
std::string twilioSignature(std::string_view auth_token, std::string_view url,
                            const FormParams& params);

/// Checks a request's X-Twilio-Signature, in constant time. Twilio signs the URL sometimes with
/// and sometimes without its port, so (as twilio-node does) the URL as given, without its port
/// and with its port (the scheme's default when it names none) are all accepted.
/// @param signature the header's value. @return whether it signs url and params.
bool verifyTwilioSignature(std::string_view auth_token, std::string_view signature,
                           std::string_view url, const FormParams& params);

}  // namespace svc::plugins::sms
