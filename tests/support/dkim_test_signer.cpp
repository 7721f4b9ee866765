#include "dkim_test_signer.h"

#include "dkim.h"

#include <svc/sdk/util.h>

#include <openssl/rsa.h>
#include <openssl/x509.h>

#include <cctype>
#include <stdexcept>
#include <vector>

namespace svc::plugins::email::testing {

EVP_PKEY* sharedRsaKey() {
  static EVP_PKEY* key = EVP_RSA_gen(2048);
  return key;
}

namespace {

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string digest(const std::string& data, const EVP_MD* md) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(data.data(), data.size(), out, &len, md, nullptr);
  return std::string(reinterpret_cast<const char*>(out), len);
}

struct Field {
  std::string name, value;
};

// RFC 6376 3.4.3: trailing empty lines go, one CRLF ends the body.
std::string simpleBody(std::string body) {
  while (body.size() >= 2 && body.compare(body.size() - 2, 2, "\r\n") == 0)
    body.resize(body.size() - 2);
  return body + "\r\n";
}

std::string canonField(const std::string& name, const std::string& value, bool relaxed) {
  return relaxed ? relaxedHeader(name, value) : name + ":" + value;
}

std::string sign(const std::string& data, const TestSignature& sig) {
  const bool ed = sig.a == "ed25519-sha256";
  const EVP_MD* md = sig.a == "rsa-sha1" ? EVP_sha1() : EVP_sha256();
  std::string input = ed ? digest(data, EVP_sha256()) : data;
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  std::size_t len = 0;
  std::vector<unsigned char> out;
  bool ok = EVP_DigestSignInit(ctx, nullptr, ed ? nullptr : md, nullptr, sig.key) == 1 &&
            EVP_DigestSign(ctx, nullptr, &len, reinterpret_cast<const unsigned char*>(input.data()),
                           input.size()) == 1;
  if (ok) {
    out.resize(len);
    ok = EVP_DigestSign(ctx, out.data(), &len, reinterpret_cast<const unsigned char*>(input.data()),
                        input.size()) == 1;
  }
  EVP_MD_CTX_free(ctx);
  if (!ok) throw std::runtime_error("test signing failed");
  return sdk::base64(std::string_view(reinterpret_cast<const char*>(out.data()), len));
}

}  // namespace

std::string signForTest(const std::string& message, const TestSignature& sig) {
  const std::size_t split = message.find("\r\n\r\n");
  const std::string head = split == std::string::npos ? message : message.substr(0, split + 2);
  const std::string body = split == std::string::npos ? "" : message.substr(split + 4);
  const std::size_t slash = sig.c.find('/');
  const bool relaxed_head = sig.c.substr(0, slash) == "relaxed";
  const bool relaxed_body = slash != std::string::npos && sig.c.substr(slash + 1) == "relaxed";
  std::string canonical = relaxed_body ? relaxedBody(body) : simpleBody(body);
  if (sig.l) canonical.resize(std::min(*sig.l, canonical.size()));
  const EVP_MD* md = sig.a == "rsa-sha1" ? EVP_sha1() : EVP_sha256();
  const std::string bh = sdk::base64(digest(canonical, md));

  std::vector<Field> fields;
  for (std::size_t pos = 0; pos < head.size();) {
    const std::size_t eol = head.find("\r\n", pos);
    const std::string line = head.substr(pos, eol - pos);
    if ((line[0] == ' ' || line[0] == '\t') && !fields.empty()) {
      fields.back().value += "\r\n" + line;
    } else {
      const std::size_t colon = line.find(':');
      fields.push_back({line.substr(0, colon), line.substr(colon + 1)});
    }
    pos = eol + 2;
  }
  std::string data;
  std::vector<bool> used(fields.size(), false);
  for (std::size_t at = 0; at <= sig.h.size();) {
    std::size_t end = sig.h.find(':', at);
    if (end == std::string::npos) end = sig.h.size();
    std::string name;
    for (char c : sig.h.substr(at, end - at)) {
      if (c != ' ' && c != '\t') name += c;
    }
    name = lower(name);
    at = end + 1;
    for (std::size_t i = fields.size(); i-- > 0;) {
      if (used[i] || lower(fields[i].name) != name) continue;
      used[i] = true;
      data += canonField(fields[i].name, fields[i].value, relaxed_head) + "\r\n";
      break;
    }
  }
  const std::string& sp = sig.separator;
  std::string value = " v=1;" + sp + "a=" + sig.a + ";" + sp + "c=" + sig.c + ";" + sp +
                      "d=" + sig.d + ";" + sp + "s=" + sig.s + ";" + sp + sig.extra +
                      (sig.l ? "l=" + std::to_string(*sig.l) + ";" + sp : "") + "h=" + sig.h + ";" +
                      sp + "bh=" + bh + ";" + sp + "b=";
  data += canonField(sig.field_name, value, relaxed_head);
  return sig.field_name + ":" + value + sign(data, sig) + "\r\n" + message;
}

std::string keyRecord(EVP_PKEY* key, const std::string& extra) {
  if (EVP_PKEY_get_base_id(key) == EVP_PKEY_ED25519) {
    unsigned char raw[32];
    std::size_t len = sizeof raw;
    EVP_PKEY_get_raw_public_key(key, raw, &len);
    return "v=DKIM1; k=ed25519; " + extra +
           "p=" + sdk::base64(std::string_view(reinterpret_cast<const char*>(raw), len));
  }
  unsigned char* der = nullptr;
  const int len = i2d_PUBKEY(key, &der);
  std::string p = sdk::base64(std::string_view(reinterpret_cast<const char*>(der), len));
  OPENSSL_free(der);
  return "v=DKIM1; k=rsa; " + extra + "p=" + p;
}

}  // namespace svc::plugins::email::testing
