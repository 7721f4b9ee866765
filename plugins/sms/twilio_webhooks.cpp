#include "twilio_webhooks.h"

#include "twilio_client.h"
#include "twiml.h"

#include <svc/sdk/util.h>

#include <Poco/Exception.h>
#include <Poco/URI.h>

#include <algorithm>
#include <initializer_list>

namespace svc::plugins::sms {

namespace {

sdk::HttpError refused(const std::string& why) {
  return sdk::HttpError(403, "permission_denied",
                        "This webhook accepts only requests Twilio signed: " + why);
}

// The first value of a parameter, or empty.
std::string param(const FormParams& params, const std::string& name) {
  for (const auto& [n, value] : params) {
    if (n == name) return value;
  }
  return "";
}

std::string required(const FormParams& params, const std::string& name) {
  std::string value = param(params, name);
  if (value.empty()) throw sdk::HttpError::invalid(name, "is required");
  return value;
}

// Twilio's ids: two letters and 32 hex digits. Required and checked, because the signature
// joins names and values with nothing between them: a signed `From=+1555` then `MessageSid=SM..`
// signs the same as one field `From=+1555MessageSidSM..`, which then carries no id.
std::string twilioSid(const FormParams& params, const std::string& name,
                      std::initializer_list<const char*> prefixes) {
  const std::string sid = required(params, name);
  bool prefixed = false;
  for (const char* prefix : prefixes) prefixed = prefixed || sid.rfind(prefix, 0) == 0;
  const bool hex =
      sid.size() == 34 && sid.find_first_not_of("0123456789abcdef", 2) == std::string::npos;
  if (!prefixed || !hex) throw refused("the " + name + " is not one of Twilio's.");
  return sid;
}

// What a signature covers, one way only: the URL and the parameters sorted, each name and value
// delimited. Reordered, re-encoded or repeated parameters sign the same, so they are the same
// request here too.
std::string signedContent(const std::string& url, FormParams params) {
  std::sort(params.begin(), params.end());
  params.erase(std::unique(params.begin(), params.end()), params.end());
  std::string out = url;
  for (const auto& [name, value] : params) {
    out += '\0' + name + '\0' + value;
  }
  return out;
}

// The URL Twilio requested: our public base, the path, and the query (the kernel keeps it
// decoded, so it is encoded again; our webhook URLs carry none).
std::string publicUrl(const std::string& base, const sdk::Request& request) {
  std::string url = base + request.path;
  if (!request.query.empty()) {
    Poco::URI uri("/");
    for (const auto& [name, value] : request.query) uri.addQueryParameter(name, value);
    url += "?" + uri.getRawQuery();
  }
  return url;
}

}  // namespace

TwilioWebhooks::TwilioWebhooks(const TwilioConfig& config, CarrierEvents& events, sdk::Database& db)
    : auth_token_(config.auth_token),
      public_base_url_(config.public_base_url),
      events_(events),
      seen_(db) {}

void TwilioWebhooks::registerRoutes(sdk::RouteRegistry& routes) {
  // Twilio posts forms (which the kernel leaves to the handler) and reads TwiML back: the
  // declarations say what parameters a URL may carry and what may be answered.
  const sdk::RouteError unsigned_request{
      403, "permission_denied", "the request is not signed by Twilio, or was received before"};
  const auto add = [&](const char* path, const char* summary,
                       sdk::Response (TwilioWebhooks::*handler)(const sdk::Request&),
                       std::vector<sdk::Param> query, int status, const char* answer) {
    sdk::Route route;
    route.method = "POST";
    route.pattern = path;
    route.auth = sdk::AuthNeed::kNone;
    route.body = sdk::BodyKind::kJsonOrForm;
    route.summary = summary;
    route.handler = [this, handler](sdk::Request& request) { return (this->*handler)(request); };
    route.query = std::move(query);
    // TwiML is XML; the status callback answers nothing.
    route.responses = {
        {status,
         (status == 204 ? sdk::Schema::any() : sdk::Schema::bytes("text/xml")).describe(answer)}};
    route.errors = {unsigned_request};
    routes.add(std::move(route));
  };
  add(kTwilioSmsPath, "Twilio's inbound SMS webhook (signed by Twilio)", &TwilioWebhooks::sms, {},
      200, "An empty TwiML document.");
  add(kTwilioStatusPath, "Twilio's message status callback (signed by Twilio)",
      &TwilioWebhooks::status,
      {{kTwilioMessageParam, sdk::Schema::string(), false,
        "Our id of the message, which the callback URL carries."}},
      204, "Nothing.");
  add(kTwilioVoicePath, "Twilio's incoming call webhook (signed by Twilio)", &TwilioWebhooks::voice,
      {}, 200, "TwiML: a redirect to the identity's voice agent, or a message and a hang-up.");
}

sdk::Response TwilioWebhooks::verified(
    const sdk::Request& request, const std::function<sdk::Response(const FormParams&)>& handle) {
  const auto signature = request.header("x-twilio-signature");
  if (!signature || signature->empty()) throw refused("X-Twilio-Signature is missing.");
  // Twilio signs form parameters only: any other body would go unsigned.
  if (!request.body.empty() && request.content_type != "application/x-www-form-urlencoded") {
    throw refused("the body is not form-encoded.");
  }
  FormParams params;
  try {
    params = parseForm(request.body);
  } catch (const Poco::Exception&) {
    throw refused("the body is malformed.");
  }
  const std::string url = publicUrl(public_base_url_, request);
  if (!verifyTwilioSignature(auth_token_, *signature, url, params)) {
    throw refused("X-Twilio-Signature does not match.");
  }
  const std::string key = sdk::sha256Hex(signedContent(url, params));
  if (!seen_.admit(key)) throw refused("this request was received before.");
  try {
    return handle(params);
  } catch (...) {
    seen_.forget(key);
    throw;
  }
}

sdk::Response TwilioWebhooks::sms(const sdk::Request& request) {
  return verified(request, [&](const FormParams& p) {
    InboundSms sms{required(p, "From"), required(p, "To"), param(p, "Body"),
                   twilioSid(p, "MessageSid", {"SM", "MM"})};
    events_.received(sms);  // an SMS to a number nobody holds is dropped, as Twilio needs no answer
    return sdk::Response::text(200, twimlEmpty(), kTwimlType);
  });
}

sdk::Response TwilioWebhooks::status(const sdk::Request& request) {
  return verified(request, [&](const FormParams& p) {
    Delivery report;
    report.ref = twilioSid(p, "MessageSid", {"SM", "MM"});
    report.message_id = request.queryParam(kTwilioMessageParam).value_or("");
    const std::string twilio_status = required(p, "MessageStatus");
    report.status = deliveryStatus(twilio_status);
    if (report.status.empty()) return sdk::Response::noContent();  // nothing about delivery
    if (report.status == "failed" || report.status == "undelivered") {
      report.error_code = param(p, "ErrorCode");
      report.error_message = param(p, "ErrorMessage");
      if (report.error_message.empty()) {
        report.error_message =
            "Twilio reports the message " + twilio_status +
            (report.error_code.empty() ? "" : " (error " + report.error_code + ")") + ".";
      }
    }
    events_.delivery(report);
    return sdk::Response::noContent();
  });
}

sdk::Response TwilioWebhooks::voice(const sdk::Request& request) {
  return verified(request, [&](const FormParams& p) {
    // A withheld caller's From may be empty.
    std::string from = param(p, "From");
    IncomingCall call{from.empty() ? "anonymous" : from, required(p, "To"),
                      twilioSid(p, "CallSid", {"CA"})};
    const CallAnswer answer = events_.incomingCall(call);
    return sdk::Response::text(200,
                               answer.handoff_url.empty() ? twimlSayAndHangUp(kDeclinedCallMessage)
                                                          : twimlRedirect(answer.handoff_url),
                               kTwimlType);
  });
}

}  // namespace svc::plugins::sms
