#include "auth/dkim_verify.h"

#include "auth/dkim_message.h"
#include "auth/dkim_tags.h"

#include <openssl/evp.h>

#include <algorithm>
#include <cctype>
#include <memory>
#include <optional>
#include <string_view>
#include <unordered_map>

namespace svc::plugins::email {

namespace {

// libopendkim's allowance for clocks that disagree (t= ahead, x= just passed).
constexpr std::int64_t kClockDrift = 300;

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::optional<std::int64_t> number(const std::string& s) {
  if (s.empty() || s.size() > 15) return std::nullopt;
  std::int64_t n = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    n = n * 10 + (c - '0');
  }
  return n;
}

bool inDomain(const std::string& sub, const std::string& domain) {
  return sub == domain || (sub.size() > domain.size() &&
                           sub.compare(sub.size() - domain.size(), domain.size(), domain) == 0 &&
                           sub[sub.size() - domain.size() - 1] == '.');
}

// The field's value with b='s value taken out (RFC 6376 3.7), everything else as it was.
std::string withoutSignature(std::string_view value) {
  std::string out;
  std::size_t at = 0;
  while (at <= value.size()) {
    std::size_t end = value.find(';', at);
    if (end == std::string_view::npos) end = value.size();
    std::string_view spec = value.substr(at, end - at);
    const std::size_t eq = spec.find('=');
    if (eq != std::string_view::npos) {
      std::string name;
      for (char c : spec.substr(0, eq)) {
        if (c != ' ' && c != '\t' && c != '\r' && c != '\n') name += c;
      }
      if (name == "b") spec = spec.substr(0, eq + 1);
    }
    out += spec;
    if (end < value.size()) out += ';';
    at = end + 1;
  }
  return out;
}

bool verifySignature(const DkimKey& key, bool ed25519, const std::string& data,
                     const std::string& signature) {
  // Both sign the SHA-256 of the canonical data: rsa-sha256 in a PKCS #1 DigestInfo, ed25519 as
  // its message (RFC 8463 section 3, "PureEdDSA").
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (EVP_Digest(data.data(), data.size(), digest, &len, dkimSha256(), nullptr) != 1) return false;
  if (!ed25519) return key.verifiesSha256(digest, len, signature);
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  return ctx && EVP_DigestVerifyInit(ctx.get(), nullptr, nullptr, nullptr, key.pkey) == 1 &&
         EVP_DigestVerify(ctx.get(), reinterpret_cast<const unsigned char*>(signature.data()),
                          signature.size(), digest, len) == 1;
}

// @return the SHA-256 of the canonical body's first `length` bytes (all without l=); "" when
// OpenSSL failed.
std::string bodyHash(const std::string& canonical, std::optional<std::int64_t> length) {
  const std::size_t n = length ? static_cast<std::size_t>(*length) : canonical.size();
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (EVP_Digest(canonical.data(), n, digest, &len, dkimSha256(), nullptr) != 1) return "";
  return std::string(reinterpret_cast<const char*>(digest), len);
}

// A DNS name's labels as a signature may name them (RFC 6376 3.1, 3.5: d= a domain, s= labels of
// a selector): 1 to 63 letters, digits, hyphens or underscores each. A name no resolver can ask
// must not turn into a DNS error (temperror), which DMARC would not hold against the sender.
bool isDnsName(std::string_view name) {
  if (name.empty() || name.size() > 253) return false;
  std::size_t label = 0;
  for (char c : name) {
    if (c == '.') {
      if (label == 0) return false;
      label = 0;
      continue;
    }
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_') return false;
    if (++label > 63) return false;
  }
  return label > 0;
}

// The name of a signature's key record. @param domain d=, lower-cased.
std::string keyName(const std::string& selector, const std::string& domain) {
  return lower(selector) + "._domainkey." + domain;
}

// Larger fields are no signature a signer writes: refused before they are parsed.
constexpr std::size_t kMaxSignatureBytes = 16 * 1024;
constexpr std::size_t kMaxSignedNames = 256;

class SignatureCheck {
 public:
  SignatureCheck(DkimMessage& message, const DkimMessage::Field& field, DkimVerdict& verdict)
      : message_(message), field_(field), v_(verdict) {}

  void run(const DkimKeyLookup& lookup, DkimKeyCache& keys, std::int64_t now) {
    v_.result = "permerror";
    if (field_.value.size() > kMaxSignatureBytes) return why("the field is over 16 KiB");
    const auto tags = DkimTags::parse(field_.value);
    if (!tags) return why("the field is not a tag list");
    if (const auto* d = tags->find("d")) v_.domain = lower(*d);
    if (const auto* s = tags->find("s")) v_.selector = *s;
    if (header(*tags, now) && fetchKey(lookup, keys) && keyFits() && body()) {
      signature();
    }
  }

 private:
  void why(std::string text) { v_.why = std::move(text); }
  bool stop(const char* result, std::string text) {
    v_.result = result;
    why(std::move(text));
    return false;
  }

  bool header(const DkimTags& tags, std::int64_t now) {
    for (const char* t : {"v", "a", "b", "bh", "d", "h", "s"}) {
      if (tags.find(t) == nullptr) return stop("permerror", std::string("no ") + t + "=");
    }
    if (*tags.find("v") != "1") return stop("permerror", "v= is not 1");
    if (v_.domain.empty() || v_.selector.empty()) return stop("permerror", "empty d= or s=");
    if (!isDnsName(v_.domain) || !isDnsName(v_.selector) ||
        v_.selector.size() + v_.domain.size() + 12 > 253) {
      return stop("permerror", "d= or s= is no DNS name");
    }
    if (const auto* i = tags.find("i")) {
      const std::size_t at = i->rfind('@');
      if (at == std::string::npos) return stop("permerror", "i= has no @");
      identity_domain_ = lower(i->substr(at + 1));
      if (!inDomain(identity_domain_, v_.domain)) return stop("permerror", "i= is not in d=");
    } else {
      identity_domain_ = v_.domain;
    }
    std::optional<std::int64_t> t, x;
    if (const auto* s = tags.find("t"); s && !(t = number(*s))) return stop("permerror", "bad t=");
    if (const auto* s = tags.find("x"); s && !(x = number(*s))) return stop("permerror", "bad x=");
    if (x && now >= *x + kClockDrift) return stop("fail", "expired (x=)");
    if (t && now < *t - kClockDrift) return stop("fail", "signed in the future (t=)");
    if (t && x && *t >= *x) return stop("permerror", "x= is not after t=");
    const std::string c = tags.find("c") ? *tags.find("c") : "simple/simple";
    const std::size_t slash = c.find('/');
    const std::string hc = c.substr(0, slash);
    const std::string bc = slash == std::string::npos ? "simple" : c.substr(slash + 1);
    if ((hc != "simple" && hc != "relaxed") || (bc != "simple" && bc != "relaxed")) {
      return stop("permerror", "unknown c=");
    }
    relaxed_header_ = hc == "relaxed";
    relaxed_body_ = bc == "relaxed";
    const std::string& a = *tags.find("a");
    if (a == "rsa-sha1") return stop("permerror", "rsa-sha1 is not accepted (RFC 8301)");
    if (a != "rsa-sha256" && a != "ed25519-sha256") return stop("permerror", "unknown a=");
    ed25519_ = a == "ed25519-sha256";
    names_ = splitDkimList(*tags.find("h"));
    if (names_.size() > kMaxSignedNames) return stop("permerror", "h= names over 256 fields");
    if (std::find(names_.begin(), names_.end(), "from") == names_.end()) {
      return stop("permerror", "h= does not name From");
    }
    if (const auto* l = tags.find("l"); l && !(length_ = number(*l))) {
      return stop("permerror", "bad l=");
    }
    if (const auto* q = tags.find("q")) {
      const auto methods = splitDkimList(*q);
      if (std::find(methods.begin(), methods.end(), "dns/txt") == methods.end()) {
        return stop("permerror", "q= names no dns/txt");
      }
    }
    const auto bh = decodeDkimBase64(*tags.find("bh"));
    const auto b = decodeDkimBase64(*tags.find("b"));
    if (!bh || !b || b->empty()) return stop("permerror", "b= or bh= is not base64");
    if (bh->size() != 32) return stop("permerror", "bh= is no SHA-256 hash");
    body_hash_ = *bh;
    signature_ = *b;
    return true;
  }

  bool fetchKey(const DkimKeyLookup& lookup, DkimKeyCache& keys) {
    const DkimKeyAnswer a = lookup(keyName(v_.selector, v_.domain));
    if (a.status == DkimKeyAnswer::Status::kFailed) return stop("temperror", "key lookup failed");
    if (a.status != DkimKeyAnswer::Status::kOk) return stop("permerror", "no key record");
    key_ = keys.get(a.record);
    if (key_->state == DkimKey::State::kRevoked) return stop("fail", key_->problem);
    if (key_->state != DkimKey::State::kUsable) return stop("permerror", key_->problem);
    return true;
  }

  bool keyFits() {
    if ((key_->type == "ed25519") != ed25519_) return stop("permerror", "k= does not fit a=");
    if (!key_->allowsHash("sha256")) return stop("permerror", "the key's h= excludes sha256");
    if (key_->strict && identity_domain_ != v_.domain) {
      return stop("permerror", "t=s key, i= in a subdomain of d=");
    }
    return true;
  }

  bool body() {
    const std::string& canonical = message_.canonicalBody(relaxed_body_);
    if (length_ && static_cast<std::size_t>(*length_) > canonical.size()) {
      return stop("permerror", "l= is longer than the body");
    }
    const std::string hash = bodyHash(canonical, length_);
    if (hash.empty()) return stop("temperror", "the body could not be hashed");
    if (hash != body_hash_) return stop("fail", "body hash mismatch");
    partial_ = length_ && static_cast<std::size_t>(*length_) < canonical.size();
    return true;
  }

  void signature() {
    // For each name in h=, the last field of that name not yet taken, bottom-up; a name with no
    // field left (over-signing) adds nothing (RFC 6376 5.4.2).
    // Indices by name, top to bottom, so each pick is the back of a list: a long h= over a long
    // header costs their sum, not their product.
    const auto& fields = message_.fields();
    std::unordered_map<std::string_view, std::vector<std::size_t>> by_name;
    for (std::size_t i = 0; i < fields.size(); ++i) by_name[fields[i].key].push_back(i);
    std::string data;
    for (const auto& name : names_) {
      const auto it = by_name.find(name);
      if (it == by_name.end() || it->second.empty()) continue;
      const auto& f = fields[it->second.back()];
      it->second.pop_back();
      data += DkimMessage::canonicalField(f, f.value, relaxed_header_);
    }
    data += DkimMessage::canonicalField(field_, withoutSignature(field_.value), relaxed_header_);
    data.resize(data.size() - 2);  // the signature field is hashed without its CRLF
    if (!verifySignature(*key_, ed25519_, data, signature_)) {
      v_.result = "fail";
      return why("signature mismatch");
    }
    if (partial_) {
      // Whatever follows the signed length (a part, a link) is shown but vouched for by no one:
      // such a signature passes nothing, DMARC included.
      v_.result = "neutral";
      return why("l= leaves part of the body unsigned");
    }
    v_.result = "pass";
    v_.why.clear();
  }

  DkimMessage& message_;
  const DkimMessage::Field& field_;
  DkimVerdict& v_;
  std::string identity_domain_, body_hash_, signature_;
  std::vector<std::string> names_;
  bool relaxed_header_ = false, relaxed_body_ = false, ed25519_ = false, partial_ = false;
  std::optional<std::int64_t> length_;
  std::shared_ptr<const DkimKey> key_;
};

}  // namespace

namespace {

// @return why none of the message's signatures is checked, or "" when they are.
std::string uncheckable(const DkimMessage& parsed, const DkimVerifyOptions& options) {
  // Past the fields the views read, a verifier could pass a From they do not show.
  if (parsed.tooManyFields()) return "the header holds over 1,000 fields";
  const auto signatures =
      std::count_if(parsed.fields().begin(), parsed.fields().end(),
                    [](const DkimMessage::Field& f) { return f.key == "dkim-signature"; });
  if (static_cast<std::size_t>(signatures) > options.max_signature_fields) {
    return "the header holds over " + std::to_string(options.max_signature_fields) +
           " DKIM-Signature fields";
  }
  return "";
}

}  // namespace

std::vector<std::string> dkimKeyNames(std::string_view message, const DkimVerifyOptions& options) {
  DkimMessage parsed(message);
  std::vector<std::string> names;
  if (!uncheckable(parsed, options).empty()) return names;
  std::size_t seen = 0;
  for (const auto& field : parsed.fields()) {
    if (field.key != "dkim-signature") continue;
    if (seen++ >= options.max_signatures) break;
    if (field.value.size() > kMaxSignatureBytes) continue;
    // Only d= and s=: what else the field holds is read when it is checked.
    const auto d = DkimTags::peek(field.value, "d");
    const auto s = d ? DkimTags::peek(field.value, "s") : std::nullopt;
    if (!d || !s) continue;
    const std::string domain = lower(*d);
    if (!isDnsName(domain) || !isDnsName(*s) || s->size() + domain.size() + 12 > 253) continue;
    names.push_back(keyName(*s, domain));
  }
  return names;
}

std::vector<DkimVerdict> verifyDkim(std::string_view message, const DkimKeyLookup& lookup,
                                    DkimKeyCache& keys, const DkimVerifyOptions& options) {
  DkimMessage parsed(message);
  std::vector<DkimVerdict> out;
  if (std::string why = uncheckable(parsed, options); !why.empty()) {
    out.push_back({"permerror", "", "", std::move(why)});
    return out;
  }
  for (const auto& field : parsed.fields()) {
    if (field.key != "dkim-signature") continue;
    if (out.size() >= options.max_signatures) break;
    out.emplace_back();
    SignatureCheck(parsed, field, out.back()).run(lookup, keys, options.now);
  }
  return out;
}

}  // namespace svc::plugins::email
