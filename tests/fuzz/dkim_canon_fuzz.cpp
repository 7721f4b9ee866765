// Fuzzes the email plugin's DKIM code: relaxed body and header canonicalization (RFC 6376
// section 3.4), each against a reference written from the RFC's text, and signing of the input
// as a message with a test key generated at startup, whose signature is then verified the way a
// receiver verifies it.
//
// Input: byte 0 picks what the rest is (0-85: a body, 86-170: a header value, 171-255: a
// message to sign), so one corpus reaches all three.
#include "dkim.h"
#include "fuzz_check.h"

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>

#include <unistd.h>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

using namespace svc::plugins::email;

namespace {

bool isWsp(char c) {
  return c == ' ' || c == '\t';
}

// RFC 6376 3.4.4, step by step: lines end at CRLF; WSP at a line's end goes; runs of WSP become
// one SP; empty lines at the end go; every line ends with CRLF (one is added to a last line).
std::string referenceRelaxedBody(const std::string& body) {
  std::vector<std::string> lines;
  std::string line;
  for (std::size_t i = 0; i < body.size(); ++i) {
    if (body[i] == '\r' && i + 1 < body.size() && body[i + 1] == '\n') {
      lines.push_back(line);
      line.clear();
      ++i;
    } else {
      line += body[i];
    }
  }
  if (!line.empty()) lines.push_back(line);
  std::string out;
  std::vector<std::string> canonical;
  for (const auto& l : lines) {
    std::string c;
    for (char ch : l) {
      if (isWsp(ch)) {
        if (c.empty() || c.back() != ' ') c += ' ';
      } else {
        c += ch;
      }
    }
    while (!c.empty() && c.back() == ' ') c.pop_back();
    canonical.push_back(c);
  }
  while (!canonical.empty() && canonical.back().empty()) canonical.pop_back();
  for (const auto& c : canonical) out += c + "\r\n";
  return out;
}

// RFC 6376 3.4.2 for the value: unfold (CRLF followed by WSP), runs of WSP to one SP, no WSP at
// either end.
std::string referenceRelaxedValue(const std::string& value) {
  std::string unfolded;
  for (std::size_t i = 0; i < value.size(); ++i) {
    if (value[i] == '\r' && i + 2 < value.size() && value[i + 1] == '\n' && isWsp(value[i + 2])) {
      ++i;
      continue;
    }
    unfolded += value[i];
  }
  std::string out;
  for (char c : unfolded) {
    if (isWsp(c)) {
      if (!out.empty() && out.back() != ' ') out += ' ';
    } else {
      out += c;
    }
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

// A value as sign() can see one: lines joined by CRLF, every continuation starting with WSP.
bool foldedLikeAField(const std::string& value) {
  for (std::size_t i = value.find("\r\n"); i != std::string::npos; i = value.find("\r\n", i + 2)) {
    if (i + 2 >= value.size() || !isWsp(value[i + 2])) return false;
  }
  return true;
}

EVP_PKEY* testKey() {
  // 1024 bits: fast enough to sign on every run, and a real RSA key as in production.
  static EVP_PKEY* key = EVP_RSA_gen(1024);
  FUZZ_CHECK(key != nullptr, "generating the test key");
  return key;
}

const DkimSigner& signer() {
  static DkimSigner* s = [] {
    char path[] = "/tmp/svc-dkim-fuzz-XXXXXX";
    int fd = mkstemp(path);
    FUZZ_CHECK(fd >= 0, "a temporary key file");
    FILE* f = fdopen(fd, "w");
    FUZZ_CHECK(PEM_write_PrivateKey(f, testKey(), nullptr, nullptr, 0, nullptr, nullptr) == 1,
               "writing the test key");
    std::fclose(f);
    auto* made = new DkimSigner("fuzz", path);
    unlink(path);
    return made;
  }();
  return *s;
}

std::string base64Decode(const std::string& text) {
  std::string clean;
  for (char c : text) {
    if (!isWsp(c) && c != '\r' && c != '\n') clean += c;
  }
  std::string out(clean.size(), '\0');
  int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                          reinterpret_cast<const unsigned char*>(clean.data()),
                          static_cast<int>(clean.size()));
  FUZZ_CHECK(n >= 0, "b= is not base64");
  std::size_t pad = 0;
  while (pad < clean.size() && clean[clean.size() - 1 - pad] == '=') ++pad;
  out.resize(static_cast<std::size_t>(n) - pad);
  return out;
}

std::string sha256Base64(const std::string& text) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(text.data(), text.size(), digest, &len, EVP_sha256(), nullptr);
  std::string out(4 * ((len + 2) / 3) + 1, '\0');
  int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()), digest, len);
  out.resize(static_cast<std::size_t>(n));
  return out;
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

struct Field {
  std::string name, value;
};

// Header fields as a receiver reads them (RFC 5322 2.2): a field runs until a CRLF not followed
// by WSP. @return false when the head is not plain "name: value" fields.
bool readFields(const std::string& head, std::vector<Field>& fields) {
  std::size_t pos = 0;
  while (pos < head.size()) {
    std::size_t end = pos;
    for (;;) {
      end = head.find("\r\n", end);
      if (end == std::string::npos) return false;
      if (end + 2 < head.size() && isWsp(head[end + 2])) {
        end += 2;
        continue;
      }
      break;
    }
    std::string field = head.substr(pos, end - pos);
    std::size_t colon = field.find(':');
    if (colon == std::string::npos || colon == 0) return false;
    std::string name = field.substr(0, colon);
    for (unsigned char c : name) {
      if (c <= 0x20 || c >= 0x7f) return false;  // ftext only
    }
    for (std::size_t i = 0; i < field.size(); ++i) {
      const auto c = static_cast<unsigned char>(field[i]);
      // CR and LF only as the CRLF of a fold; no other control characters.
      if (c == '\r' && (i + 1 >= field.size() || field[i + 1] != '\n')) return false;
      if (c == '\n' && (i == 0 || field[i - 1] != '\r')) return false;
      if (c < 0x20 && c != '\t' && c != '\r' && c != '\n') return false;
    }
    fields.push_back({name, field.substr(colon + 1)});
    pos = end + 2;
  }
  return true;
}

// Verifies the signature sign() put first, as a receiver does (RFC 6376 section 6.1.3): the
// body hash over the canonical body, and for each name in h= the last not yet used instance of
// that field, bottom-up, then the DKIM-Signature itself with b= empty.
void verify(const std::string& message, const std::string& signed_message) {
  FUZZ_CHECK(signed_message.rfind("DKIM-Signature:", 0) == 0, "no DKIM-Signature first");
  FUZZ_CHECK(signed_message.size() > message.size() &&
                 signed_message.compare(signed_message.size() - message.size(), message.size(),
                                        message) == 0,
             "signing changed the message");
  std::string sig_field = signed_message.substr(0, signed_message.size() - message.size());
  FUZZ_CHECK(sig_field.size() >= 2 && sig_field.compare(sig_field.size() - 2, 2, "\r\n") == 0,
             "the signature field does not end with CRLF");
  sig_field.resize(sig_field.size() - 2);

  std::size_t split = message.find("\r\n\r\n");
  if (split == std::string::npos) return;  // no body: not a message a receiver would verify
  std::string head = message.substr(0, split + 2);
  std::string body = message.substr(split + 4);
  std::vector<Field> fields;
  if (!readFields(head, fields)) return;  // malformed heads are read differently by everyone

  std::string value = sig_field.substr(std::string("DKIM-Signature:").size());
  auto tag = [&](const std::string& name) {
    std::string flat = referenceRelaxedValue(value);
    std::size_t at = flat.find(" " + name + "=");
    if (at == std::string::npos) at = flat.find(";" + name + "=");
    FUZZ_CHECK(at != std::string::npos, "a tag is missing from the signature");
    at = flat.find('=', at) + 1;
    std::string v = flat.substr(at, flat.find(';', at) - at);
    return v;
  };
  FUZZ_CHECK(tag("bh") == sha256Base64(referenceRelaxedBody(body)), "bh= is not the body's hash");

  std::vector<std::string> names;
  std::string h = tag("h");
  for (std::size_t start = 0; start <= h.size();) {
    std::size_t colon = h.find(':', start);
    if (colon == std::string::npos) colon = h.size();
    std::string n = h.substr(start, colon - start);
    if (!n.empty()) names.push_back(lower(n));
    start = colon + 1;
  }
  std::vector<bool> used(fields.size(), false);
  std::string hashed;
  for (const auto& name : names) {
    for (std::size_t i = fields.size(); i-- > 0;) {
      if (used[i] || lower(fields[i].name) != name) continue;
      used[i] = true;
      std::string trimmed = fields[i].name;
      hashed += lower(trimmed) + ":" + referenceRelaxedValue(fields[i].value) + "\r\n";
      break;
    }
  }
  // b= is the last tag, on a line of its own ("bh=" comes before it; "b=" may end the base64).
  std::size_t b = value.find("\r\n\tb=");
  FUZZ_CHECK(b != std::string::npos, "no b= tag");
  b += 3;
  std::string signature = base64Decode(value.substr(b + 2));
  std::string unsigned_value = value.substr(0, b + 2);
  hashed += "dkim-signature:" + referenceRelaxedValue(unsigned_value);

  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  bool ok = ctx && EVP_DigestVerifyInit(ctx, nullptr, EVP_sha256(), nullptr, testKey()) == 1 &&
            EVP_DigestVerify(
                ctx, reinterpret_cast<const unsigned char*>(signature.data()), signature.size(),
                reinterpret_cast<const unsigned char*>(hashed.data()), hashed.size()) == 1;
  EVP_MD_CTX_free(ctx);
  if (!ok) {
    std::fprintf(stderr, "hashed as a receiver:\n%s\n", hashed.c_str());
    FUZZ_CHECK(false, "a receiver cannot verify the signature");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::uint8_t mode = data[0];
  std::string in(reinterpret_cast<const char*>(data + 1), size - 1);
  if (mode <= 85) {
    std::string canonical = relaxedBody(in);
    if (canonical != referenceRelaxedBody(in)) {
      FUZZ_CHECK(false, "relaxedBody differs from RFC 6376 3.4.4");
    }
    FUZZ_CHECK(relaxedBody(canonical) == canonical, "relaxedBody is not idempotent");
  } else if (mode <= 170) {
    std::string name = "Subject";
    std::string canonical = relaxedHeader(name, in);
    FUZZ_CHECK(canonical.rfind("subject:", 0) == 0, "the name is not lower-cased");
    if (foldedLikeAField(in)) {
      FUZZ_CHECK(canonical.substr(8) == referenceRelaxedValue(in),
                 "relaxedHeader differs from RFC 6376 3.4.2");
    }
  } else {
    std::string signed_message = signer().sign(in, "example.org", 1700000000);
    verify(in, signed_message);
  }
  return 0;
}
