#include <svc/sdk/addresses.h>
#include <svc/sdk/http.h>

#include <Poco/Net/DNS.h>
#include <Poco/Net/HostEntry.h>

#include <algorithm>
#include <cctype>
#include <string>

namespace svc::sdk {

bool isValidDomain(std::string_view domain) {
  if (domain.empty() || domain.size() > 253) return false;
  int labels = 0;
  std::size_t start = 0;
  while (start <= domain.size()) {
    std::size_t dot = domain.find('.', start);
    std::string_view label =
        domain.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start);
    if (label.empty() || label.size() > 63 || label.front() == '-' || label.back() == '-')
      return false;
    for (char c : label) {
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-') return false;
    }
    ++labels;
    if (dot == std::string_view::npos) {
      // The top-level label is not all digits (that would be an IP address).
      if (std::all_of(label.begin(), label.end(),
                      [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }))
        return false;
      break;
    }
    start = dot + 1;
  }
  return labels >= 2;
}

bool isDotAtomLocalPart(std::string_view local) {
  if (local.empty() || local.size() > 64) return false;
  if (local.front() == '.' || local.back() == '.' || local.find("..") != std::string_view::npos)
    return false;
  static const std::string atext = "!#$%&'*+-/=?^_`{|}~.";
  for (char c : local) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && atext.find(c) == std::string::npos)
      return false;
  }
  return true;
}

bool isValidEmailAddress(std::string_view address) {
  if (address.size() > 254) return false;
  std::size_t at = address.rfind('@');
  if (at == std::string_view::npos) return false;
  return isDotAtomLocalPart(address.substr(0, at)) && isValidDomain(address.substr(at + 1));
}

std::optional<std::string> normalizeE164(const std::string& text) {
  std::string digits;
  bool plus = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '+' && i == 0) {
      plus = true;
    } else if (c >= '0' && c <= '9') {
      digits += c;
    } else if (c != ' ' && c != '-' && c != '.' && c != '(' && c != ')') {
      return std::nullopt;
    }
  }
  if (!plus || digits.size() < 8 || digits.size() > 15 || digits[0] == '0') return std::nullopt;
  return "+" + digits;
}

bool isInternalAddress(const Poco::Net::IPAddress& a) {
  if (a.isLoopback() || a.isLinkLocal() || a.isSiteLocal() || a.isWildcard() || a.isMulticast() ||
      a.isBroadcast()) {
    return true;
  }
  const auto* bytes = static_cast<const unsigned char*>(a.addr());
  if (a.family() == Poco::Net::IPAddress::IPv4) {
    if (bytes[0] == 0) return true;                               // 0.0.0.0/8
    if (bytes[0] == 100 && (bytes[1] & 0xC0) == 64) return true;  // 100.64.0.0/10
    if (bytes[0] == 169 && bytes[1] == 254) return true;          // link-local
    return false;
  }
  if ((bytes[0] & 0xFE) == 0xFC) return true;  // fc00::/7 unique local
  if (a.isIPv4Mapped() || a.isIPv4Compatible()) {
    return isInternalAddress(Poco::Net::IPAddress(bytes + 12, 4));
  }
  return false;
}

namespace {

std::vector<Poco::Net::IPAddress> resolve(const std::string& host) {
  Poco::Net::IPAddress literal;
  if (Poco::Net::IPAddress::tryParse(host, literal)) return {literal};
  return Poco::Net::DNS::hostByName(host).addresses();
}

}  // namespace

std::vector<Poco::Net::IPAddress> allowedAddresses(const std::string& host, bool allow_private) {
  std::vector<Poco::Net::IPAddress> out;
  for (const auto& a : resolve(host)) {
    if (allow_private || !isInternalAddress(a)) out.push_back(a);
  }
  return out;
}

Poco::URI checkedPublicUrl(const std::string& raw, const std::string& field, bool allow_private,
                           const std::string& allow_key) {
  if (raw.size() > 2048) throw HttpError::invalid(field, "at most 2048 characters");
  const char* const absolute = "must be an absolute http or https URL";
  Poco::URI uri;
  try {
    uri = Poco::URI(raw);
  } catch (const Poco::Exception&) {
    throw HttpError::invalid(field, absolute);
  }
  if ((uri.getScheme() != "http" && uri.getScheme() != "https") || uri.getHost().empty()) {
    throw HttpError::invalid(field, absolute);
  }
  if (!uri.getUserInfo().empty()) throw HttpError::invalid(field, "must not carry credentials");
  if (!uri.getFragment().empty()) throw HttpError::invalid(field, "must not carry a fragment");
  std::vector<Poco::Net::IPAddress> all;
  try {
    all = resolve(uri.getHost());
  } catch (const Poco::Exception&) {
    throw HttpError::invalid(field, "the host name does not resolve");
  }
  if (all.empty()) throw HttpError::invalid(field, "the host name does not resolve");
  // Every address must pass: a name with a public and a private address would reach the private
  // one whenever the resolver put it first.
  for (const auto& a : all) {
    if (!allow_private && isInternalAddress(a)) {
      throw HttpError::invalid(
          field, "must not point at a loopback, private or link-local address" +
                     (allow_key.empty() ? std::string()
                                        : " (an operator may allow such URLs on a test server "
                                          "with " +
                                              allow_key + "=true)"));
    }
  }
  return uri;
}

}  // namespace svc::sdk
