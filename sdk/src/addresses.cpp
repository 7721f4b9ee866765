#include <svc/sdk/addresses.h>

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

}  // namespace svc::sdk
