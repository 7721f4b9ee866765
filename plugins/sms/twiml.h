// The TwiML documents the Twilio webhooks answer with (https://www.twilio.com/docs/voice/twiml):
// XML built by Poco's writer, so every text and attribute is escaped.
#pragma once

#include <string>

namespace svc::plugins::sms {

/// The media type of a TwiML answer.
inline constexpr const char* kTwimlType = "text/xml; charset=utf-8";

/// @return `<Response/>`: nothing to do (the answer to an inbound SMS).
std::string twimlEmpty();

/// @param url where Twilio fetches the call's next instructions (the identity's voice agent).
/// @return `<Response><Redirect method="POST">url</Redirect></Response>`.
std::string twimlRedirect(const std::string& url);

/// @param message what to say before hanging up.
/// @return `<Response><Say>message</Say><Hangup/></Response>`.
std::string twimlSayAndHangUp(const std::string& message);

}  // namespace svc::plugins::sms
