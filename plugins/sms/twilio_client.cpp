#include "twilio_client.h"

#include <Poco/Exception.h>
#include <Poco/JSON/Array.h>
#include <Poco/JSON/Parser.h>
#include <Poco/Net/Context.h>
#include <Poco/Net/HTTPBasicCredentials.h>
#include <Poco/Net/HTTPClientSession.h>
#include <Poco/Net/HTTPRequest.h>
#include <Poco/Net/HTTPResponse.h>
#include <Poco/Net/HTTPSClientSession.h>
#include <Poco/URI.h>

#include <memory>

namespace svc::plugins::sms {

namespace {

constexpr std::size_t kMaxAnswerBytes = 1 << 20;

std::string encode(const std::string& text) {
  std::string out;
  Poco::URI::encode(text, "!#$&'()*+,/:;=?@[]~", out);
  return out;
}

std::string formEncode(const FormParams& params) {
  std::string out;
  for (const auto& [name, value] : params) {
    if (!out.empty()) out += '&';
    out += encode(name) + '=' + encode(value);
  }
  return out;
}

std::string member(const Poco::JSON::Object::Ptr& o, const std::string& name) {
  if (!o || !o->has(name) || o->get(name).isEmpty()) return "";
  const auto value = o->get(name);
  return value.isString() || value.isNumeric() ? value.convert<std::string>() : "";
}

Poco::JSON::Object::Ptr parseObject(const std::string& text) {
  if (text.empty()) return nullptr;
  try {
    auto value = Poco::JSON::Parser().parse(text);
    if (value.type() == typeid(Poco::JSON::Object::Ptr)) {
      return value.extract<Poco::JSON::Object::Ptr>();
    }
  } catch (const Poco::Exception&) {
  }
  throw ProviderError("Twilio's answer is not a JSON object.");
}

std::unique_ptr<Poco::Net::HTTPClientSession> sessionFor(const Poco::URI& uri) {
  if (uri.getScheme() == "https") {
    // Certificates checked against the system's CAs.
    static const Poco::Net::Context::Ptr context = new Poco::Net::Context(
        Poco::Net::Context::TLS_CLIENT_USE, "", Poco::Net::Context::VERIFY_RELAXED, 9, true);
    return std::make_unique<Poco::Net::HTTPSClientSession>(uri.getHost(), uri.getPort(), context);
  }
  return std::make_unique<Poco::Net::HTTPClientSession>(uri.getHost(), uri.getPort());
}

}  // namespace

std::string deliveryStatus(const std::string& s) {
  if (s == "queued" || s == "accepted" || s == "scheduled" || s == "sending") return "queued";
  if (s == "sent" || s == "delivered" || s == "undelivered" || s == "failed") return s;
  if (s == "read") return "delivered";
  if (s == "canceled") return "failed";
  return "";
}

TwilioApiError::TwilioApiError(int http_status, std::string code, const std::string& message)
    : ProviderError(message), http_status_(http_status), code_(std::move(code)) {}

TwilioClient::TwilioClient(TwilioConfig config) : config_(std::move(config)) {}

TwilioClient::Answer TwilioClient::call(const std::string& method, const std::string& resource,
                                        const FormParams& query, const FormParams& form) {
  std::string target =
      config_.api_base + "/2010-04-01/Accounts/" + encode(config_.account_sid) + "/" + resource;
  if (!query.empty()) target += "?" + formEncode(query);
  const std::string body = formEncode(form);
  Answer answer;
  std::string text;
  try {
    Poco::URI uri(target);
    auto session = sessionFor(uri);
    session->setTimeout(Poco::Timespan(config_.timeout_seconds, 0));
    Poco::Net::HTTPRequest request(method, uri.getPathAndQuery(), Poco::Net::HTTPMessage::HTTP_1_1);
    request.set("Accept", "application/json");
    Poco::Net::HTTPBasicCredentials(config_.account_sid, config_.auth_token).authenticate(request);
    if (method == "POST") {
      request.setContentType("application/x-www-form-urlencoded");
      request.setContentLength(static_cast<std::streamsize>(body.size()));
    }
    session->sendRequest(request) << body;
    Poco::Net::HTTPResponse response;
    std::istream& in = session->receiveResponse(response);
    char buffer[8192];
    while (in.read(buffer, sizeof buffer) || in.gcount() > 0) {
      text.append(buffer, static_cast<std::size_t>(in.gcount()));
      if (text.size() > kMaxAnswerBytes) throw ProviderError("Twilio's answer is too large.");
    }
    answer.status = static_cast<int>(response.getStatus());
  } catch (const Poco::TimeoutException&) {
    throw ProviderError("Twilio did not answer within " + std::to_string(config_.timeout_seconds) +
                        " seconds.");
  } catch (const Poco::Exception& e) {
    throw ProviderError("Twilio cannot be reached (" + e.displayText() + ").");
  }
  if (answer.status >= 400) {
    Poco::JSON::Object::Ptr error;
    try {
      error = parseObject(text);
    } catch (const ProviderError&) {
    }
    std::string message = member(error, "message");
    if (message.empty()) message = "Twilio answered " + std::to_string(answer.status) + ".";
    throw TwilioApiError(answer.status, member(error, "code"), message);
  }
  answer.json = parseObject(text);
  return answer;
}

std::vector<std::string> TwilioClient::availableNumbers(const std::string& country) {
  auto answer = call("GET", "AvailablePhoneNumbers/" + encode(country) + "/Local.json",
                     {{"SmsEnabled", "true"}});
  std::vector<std::string> out;
  auto list = answer.json ? answer.json->getArray("available_phone_numbers") : nullptr;
  if (!list) throw ProviderError("Twilio's list of available numbers is missing.");
  for (std::size_t i = 0; i < list->size(); ++i) {
    std::string number = member(list->getObject(static_cast<unsigned>(i)), "phone_number");
    if (!number.empty()) out.push_back(number);
  }
  return out;
}

Number TwilioClient::buy(const std::string& e164, const std::string& sms_url,
                         const std::string& voice_url) {
  auto answer = call("POST", "IncomingPhoneNumbers.json", {},
                     {{"PhoneNumber", e164},
                      {"SmsUrl", sms_url},
                      {"SmsMethod", "POST"},
                      {"VoiceUrl", voice_url},
                      {"VoiceMethod", "POST"}});
  Number number{member(answer.json, "phone_number"), member(answer.json, "sid")};
  if (number.e164.empty() || number.ref.empty()) {
    throw ProviderError("Twilio's answer to buying " + e164 + " lacks its number or sid.");
  }
  return number;
}

void TwilioClient::release(const std::string& sid) {
  call("DELETE", "IncomingPhoneNumbers/" + encode(sid) + ".json");
}

SentMessage TwilioClient::send(const std::string& from, const std::string& to,
                               const std::string& body, const std::string& status_callback) {
  auto answer =
      call("POST", "Messages.json", {},
           {{"From", from}, {"To", to}, {"Body", body}, {"StatusCallback", status_callback}});
  SentMessage sent{member(answer.json, "sid"), member(answer.json, "status"),
                   member(answer.json, "error_code"), member(answer.json, "error_message")};
  if (sent.sid.empty()) throw ProviderError("Twilio's answer to a message lacks its sid.");
  return sent;
}

}  // namespace svc::plugins::sms
