#include "dkim.h"

#include <svc/sdk/util.h>

#include <Poco/Ascii.h>
#include <Poco/String.h>

#include <openssl/evp.h>
#include <openssl/pem.h>

#include <cstdio>
#include <stdexcept>
#include <vector>

namespace svc::plugins::email {

namespace {

std::string sha256(const std::string& text) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(text.data(), text.size(), digest, &len, EVP_sha256(), nullptr);
  return std::string(reinterpret_cast<char*>(digest), len);
}

bool isWsp(char c) {
  return c == ' ' || c == '\t';
}

// A line the relaxed body canonicalization leaves as it is (most lines of most mail): something
// in it, no tab, no two spaces in a row, no space at its end.
bool canonicalLine(std::string_view line) {
  if (line.empty() || line.back() == ' ') return false;
  char previous = 0;
  for (char c : line) {
    if (c == '\t' || (c == ' ' && previous == ' ')) return false;
    previous = c;
  }
  return true;
}

struct Field {
  std::string name, value;  // value as received after the colon, folding included
};

}  // namespace

struct DkimSigner::Key {
  EVP_PKEY* pkey = nullptr;
  ~Key() { EVP_PKEY_free(pkey); }
};

std::string relaxedBody(std::string_view body) {
  // One pass, written straight into the result a line (or a run of non-blanks) at a time: a body
  // of millions of empty lines costs its own size.
  std::string out;
  out.reserve(body.size() + 2);
  std::size_t empty_lines = 0;  // seen but not written: those at the end go
  std::size_t pos = 0;
  while (pos < body.size()) {
    const std::size_t eol = body.find("\r\n", pos);
    const std::size_t end = eol == std::string_view::npos ? body.size() : eol;
    // A line of whitespace alone is empty; empty lines are written once a line follows them.
    std::size_t i = pos;
    while (i < end && isWsp(body[i])) ++i;
    if (i == end) {
      ++empty_lines;
    } else {
      for (; empty_lines > 0; --empty_lines) out += "\r\n";
      if (canonicalLine(body.substr(pos, end - pos))) {
        out.append(body, pos, end - pos);
        i = end;
      } else if (i > pos) {
        out += ' ';  // inner runs of whitespace become one space
      }
      // Whitespace at the end of a line goes.
      while (i < end) {
        std::size_t after = i;
        while (after < end && !isWsp(body[after])) ++after;
        out.append(body, i, after - i);
        i = after;
        while (i < end && isWsp(body[i])) ++i;
        if (i < end && i > after) out += ' ';
      }
      out += "\r\n";
    }
    if (eol == std::string_view::npos) break;
    pos = eol + 2;
  }
  return out;
}

std::string relaxedHeader(std::string_view name, std::string_view value) {
  // The name lower-cased without the whitespace around it, a colon, then the value unfolded,
  // its runs of whitespace one space, none at either end.
  std::size_t first = 0, last = name.size();
  while (first < last && Poco::Ascii::isSpace(name[first])) ++first;
  while (last > first && Poco::Ascii::isSpace(name[last - 1])) --last;
  std::string out;
  out.reserve(last - first + 1 + value.size());
  for (std::size_t i = first; i < last; ++i) out += Poco::Ascii::toLower(name[i]);
  out += ':';
  const std::size_t start = out.size();
  bool space = false;
  for (std::size_t i = 0; i < value.size(); ++i) {
    const char c = value[i];
    if (c == '\r' && i + 1 < value.size() && value[i + 1] == '\n') {
      ++i;
      continue;
    }
    if (isWsp(c)) {
      space = true;
      continue;
    }
    if (space && out.size() > start) out += ' ';
    space = false;
    out += c;
  }
  return out;
}

DkimSigner::DkimSigner(std::string selector, const std::string& pem_key_file)
    : selector_(std::move(selector)), key_(std::make_unique<Key>()) {
  FILE* f = std::fopen(pem_key_file.c_str(), "r");
  if (!f) throw std::runtime_error("email.dkim.key_file: cannot open " + pem_key_file);
  key_->pkey = PEM_read_PrivateKey(f, nullptr, nullptr, nullptr);
  std::fclose(f);
  if (!key_->pkey || EVP_PKEY_base_id(key_->pkey) != EVP_PKEY_RSA) {
    throw std::runtime_error("email.dkim.key_file: " + pem_key_file +
                             " holds no RSA private key in PEM");
  }
}

DkimSigner::~DkimSigner() = default;

std::string DkimSigner::sign(const std::string& message, const std::string& domain,
                             std::int64_t time_s) const {
  std::size_t split = message.find("\r\n\r\n");
  std::string head = split == std::string::npos ? message : message.substr(0, split + 2);
  std::string body = split == std::string::npos ? std::string() : message.substr(split + 4);
  std::vector<Field> fields;
  std::size_t pos = 0;
  while (pos < head.size()) {
    std::size_t eol = head.find("\r\n", pos);
    if (eol == std::string::npos) break;
    std::string line = head.substr(pos, eol - pos);
    if ((line[0] == ' ' || line[0] == '\t') && !fields.empty()) {
      fields.back().value += "\r\n" + line;
    } else {
      std::size_t colon = line.find(':');
      if (colon != std::string::npos)
        fields.push_back({line.substr(0, colon), line.substr(colon + 1)});
    }
    pos = eol + 2;
  }
  static const char* wanted[] = {"from",
                                 "to",
                                 "cc",
                                 "subject",
                                 "date",
                                 "message-id",
                                 "in-reply-to",
                                 "references",
                                 "mime-version",
                                 "content-type",
                                 "content-transfer-encoding"};
  // Every instance of a repeated field is signed, each naming it once more in h=, from the last
  // up: a verifier takes instances bottom-up (RFC 6376 section 5.4.2), so signing only the
  // first of two To: lines would make the signature fail wherever it is checked.
  std::string signed_names, hashed;
  for (const char* name : wanted) {
    for (auto f = fields.rbegin(); f != fields.rend(); ++f) {
      if (Poco::icompare(f->name, name) != 0) continue;
      hashed += relaxedHeader(f->name, f->value) + "\r\n";
      signed_names += (signed_names.empty() ? "" : ":") + std::string(name);
    }
  }
  const std::string bh = sdk::base64(sha256(relaxedBody(body)));
  std::string value = " v=1; a=rsa-sha256; c=relaxed/relaxed; d=" + domain + "; s=" + selector_ +
                      ";\r\n\tt=" + std::to_string(time_s) + "; h=" + signed_names +
                      ";\r\n\tbh=" + bh + ";\r\n\tb=";
  hashed += relaxedHeader("DKIM-Signature", value);

  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  std::size_t sig_len = 0;
  std::vector<unsigned char> sig;
  bool ok = ctx && EVP_DigestSignInit(ctx, nullptr, EVP_sha256(), nullptr, key_->pkey) == 1 &&
            EVP_DigestSignUpdate(ctx, hashed.data(), hashed.size()) == 1 &&
            EVP_DigestSignFinal(ctx, nullptr, &sig_len) == 1;
  if (ok) {
    sig.resize(sig_len);
    ok = EVP_DigestSignFinal(ctx, sig.data(), &sig_len) == 1;
  }
  EVP_MD_CTX_free(ctx);
  if (!ok) throw std::runtime_error("DKIM signing failed");
  std::string b = sdk::base64(std::string_view(reinterpret_cast<const char*>(sig.data()), sig_len));
  // Fold the signature into lines of at most 76 characters.
  std::string folded;
  for (std::size_t i = 0; i < b.size(); i += 70) folded += (i ? "\r\n\t " : "") + b.substr(i, 70);
  return "DKIM-Signature:" + value + folded + "\r\n" + message;
}

}  // namespace svc::plugins::email
