#include "phone_text.h"

#include <Poco/UTF8Encoding.h>
#include <Poco/UTF8String.h>

#include <vector>

namespace svc::plugins::sms {

namespace {

// GSM 03.38: the basic alphabet (one septet) and the extension table (escape plus one).
const std::u32string& gsmBasic() {
  static const std::u32string chars =
      U"@£$¥èéùìòÇ\nØø\rÅåΔ_ΦΓΛΩΠΨΣΘΞÆæßÉ !\"#¤%&'()*+,-./0123456789:;<=>?"
      U"¡ABCDEFGHIJKLMNOPQRSTUVWXYZÄÖÑÜ§¿abcdefghijklmnopqrstuvwxyzäöñüà";
  return chars;
}
const std::u32string& gsmExtension() {
  static const std::u32string chars = U"\f^{}\\[~]|€";
  return chars;
}

std::vector<char32_t> codePoints(const std::string& body) {
  std::vector<char32_t> out;
  Poco::UTF8Encoding utf8;
  const auto* p = reinterpret_cast<const unsigned char*>(body.data());
  const auto* end = p + body.size();
  while (p < end) {
    int n = utf8.sequenceLength(p, static_cast<int>(end - p));
    if (n <= 0 || p + n > end) {  // not UTF-8 (the route refuses it first): one unit each
      out.push_back(0xFFFD);
      ++p;
      continue;
    }
    int c = utf8.queryConvert(p, n);
    out.push_back(c < 0 ? 0xFFFD : static_cast<char32_t>(c));
    p += n;
  }
  return out;
}

// Packs units (each 1 or 2 wide) into segments of `per` without splitting one.
int pack(const std::vector<int>& widths, int single, int per) {
  int total = 0;
  for (int w : widths) total += w;
  if (total <= single) return 1;
  int segments = 1, used = 0;
  for (int w : widths) {
    if (used + w > per) {
      ++segments;
      used = 0;
    }
    used += w;
  }
  return segments;
}

}  // namespace

bool isCountryCode(const std::string& text) {
  auto letter = [](char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z'); };
  return text.size() == 2 && letter(text[0]) && letter(text[1]);
}

Segments countSegments(const std::string& body) {
  const auto points = codePoints(body);
  std::vector<int> widths;
  widths.reserve(points.size());
  bool gsm = true;
  for (char32_t c : points) {
    if (gsmBasic().find(c) != std::u32string::npos) {
      widths.push_back(1);
    } else if (gsmExtension().find(c) != std::u32string::npos) {
      widths.push_back(2);
    } else {
      gsm = false;
      break;
    }
  }
  if (gsm) return {"GSM-7", pack(widths, 160, 153)};
  widths.clear();
  for (char32_t c : points) widths.push_back(c > 0xFFFF ? 2 : 1);
  return {"UCS-2", pack(widths, 70, 67)};
}

std::size_t characterCount(const std::string& body) {
  return codePoints(body).size();
}

}  // namespace svc::plugins::sms
