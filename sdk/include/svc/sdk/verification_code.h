// The one-time code a message most likely carries (a verification code, OTP, PIN, passcode, TAN),
// so the messaging plugins (SMS and email) can hand it to an agent beside the message.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace svc::sdk {

/// How much of a body extractVerificationCode() reads. A code sits near the top of a message;
/// reading no further keeps the cost of a 1 MB body that of a short one.
constexpr std::size_t kVerificationCodeScanBytes = 20 * 1024;

/// Finds the one-time code in a message, by hand scanning (linear in the text read).
///
/// - A message must name a code somewhere: a word such as code, OTP, PIN, passcode, TAN,
///   verification, one-time, authentication or password, in English, German, French, Spanish,
///   Portuguese, Italian, Dutch, Polish, Turkish, Russian, Chinese, Japanese or Korean
///   (compounds included: Bestätigungscode, verificatiecode). Words that name another kind of
///   code do not count: promo, discount, coupon, gift, zip, postal, tracking, QR, bar, area,
///   country, error or source code.
/// - A code is 4 to 10 digits, or 4 to 10 letters and digits (both, in an irregular mix such as
///   A7K9QX or K7Q-2XF; not a word plus a number such as SAVE20). A code written in groups
///   (`482 913`, `482-913`, `K7Q-2XF`) is returned as it is typed: the groups joined, without
///   the separator. A one- or two-letter prefix such as Google's `G-482913` is left out.
/// - Candidates are scored: nearer a keyword is better, six digits and a line of its own are
///   what codes look like. What looks like something else is never taken or loses: prices and
///   amounts (a currency next to them, decimals, thousands separators), dates, times and years,
///   phone numbers (`+` prefixes, groups of unequal length), masked card and account numbers,
///   order, invoice, tracking, account and reference numbers (named so just before them, or
///   `#1234`), house numbers and postal codes, quantities with a unit, and anything inside a URL
///   or an e-mail address. A code inside a link (`?code=ABC123`) is not taken: a link is
///   followed, not typed, and what matters is written in the text.
///
/// @param subject the subject line (empty for an SMS). @param body the message's text (for
/// email, its text part or the text of its HTML part); only the first kVerificationCodeScanBytes
/// are read. @return the code, or nullopt when the message most likely carries none.
std::optional<std::string> extractVerificationCode(std::string_view subject, std::string_view body);

}  // namespace svc::sdk
