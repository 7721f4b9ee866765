#include "twilio_signature.h"

#include <svc/sdk/util.h>

#include <Poco/URI.h>

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <algorithm>
#include <map>
#include <set>

namespace svc::plugins::sms {

namespace {

// The URL with and without the port of its authority: Twilio's signing is inconsistent about
// it, so twilio-node accepts either. A URL naming no port gets the scheme's default.
std::vector<std::string> portVariants(std::string_view url) {
  std::vector<std::string> out{std::string(url)};
  const auto scheme_end = url.find("://");
  if (scheme_end == std::string_view::npos) return out;
  const auto start = scheme_end + 3;
  const auto end = std::min(url.find_first_of("/?#", start), url.size());
  const std::string_view authority = url.substr(start, end - start);
  // The port follows the last colon, unless that colon is inside an IPv6 literal ([::1]).
  const auto colon = authority.rfind(':');
  const bool has_port =
      colon != std::string_view::npos && authority.find(']', colon) == std::string_view::npos;
  const std::string before(url.substr(0, start));
  const std::string after(url.substr(end));
  if (has_port) {
    out.push_back(before + std::string(authority.substr(0, colon)) + after);
  } else {
    const bool https = url.substr(0, scheme_end) == "https";
    out.push_back(before + std::string(authority) + (https ? ":443" : ":80") + after);
  }
  return out;
}

}  // namespace

FormParams parseForm(const std::string& body) {
  FormParams out;
  for (auto& [name, value] : Poco::URI("/?" + body).getQueryParameters()) {
    out.emplace_back(std::move(name), std::move(value));
  }
  return out;
}

std::string twilioSignature(std::string_view auth_token, std::string_view url,
                            const FormParams& params) {
  // Names sorted; a repeated name's values once each, sorted (twilio-node's toFormUrlEncodedParam).
  std::map<std::string, std::set<std::string>> sorted;
  for (const auto& [name, value] : params) sorted[name].insert(value);
  std::string data(url);
  for (const auto& [name, values] : sorted) {
    for (const auto& value : values) data.append(name).append(value);
  }
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int mac_size = 0;
  HMAC(EVP_sha1(), auth_token.data(), static_cast<int>(auth_token.size()),
       reinterpret_cast<const unsigned char*>(data.data()), data.size(), mac, &mac_size);
  return sdk::base64(std::string_view(reinterpret_cast<const char*>(mac), mac_size));
}

bool verifyTwilioSignature(std::string_view auth_token, std::string_view signature,
                           std::string_view url, const FormParams& params) {
  if (auth_token.empty() || signature.empty()) return false;
  bool valid = false;
  for (const auto& candidate : portVariants(url)) {
    valid |= sdk::constantTimeEquals(twilioSignature(auth_token, candidate, params), signature);
  }
  return valid;
}

}  // namespace svc::plugins::sms
