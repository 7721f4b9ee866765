#include "jwt_issuer.h"

#include "key_format.h"

#include <svc/sdk/util.h>

#include <Poco/JSON/Array.h>
#include <Poco/JWT/Signer.h>
#include <Poco/JWT/Token.h>

#include <algorithm>
#include <sstream>

using namespace Poco::Data::Keywords;

namespace svc::plugins::auth {

namespace {
std::string asBytes(const std::vector<unsigned char>& v) {
  return std::string(v.begin(), v.end());
}
}  // namespace

bool isCanonicalCompactJws(std::string_view jwt) {
  if (std::count(jwt.begin(), jwt.end(), '.') != 2) return false;
  for (std::size_t from = 0;;) {
    const std::size_t dot = jwt.find('.', from);
    const std::string_view part =
        jwt.substr(from, dot == std::string_view::npos ? dot : dot - from);
    if (part.empty() || part.find('=') != std::string_view::npos) return false;
    // Re-encoding gives the part back only when its unused low bits are zero.
    auto bytes = sdk::base64urlDecode(part);
    if (!bytes || sdk::base64url(*bytes) != part) return false;
    if (dot == std::string_view::npos) return true;
    from = dot + 1;
  }
}

JwtIssuer::JwtIssuer(sdk::Database& db, std::string issuer) : db_(db), issuer_(std::move(issuer)) {}

const Poco::SharedPtr<Poco::Crypto::RSAKey>& JwtIssuer::key() const {
  std::call_once(loaded_, [this] {
    sdk::Database& db = db_;
    auto load = [&] {
      Poco::Data::Session s = db.session();
      std::vector<std::string> kids, pems;
      s << "SELECT kid, private_pem FROM auth_signing_keys ORDER BY created_us, kid", into(kids),
          into(pems), now;
      if (kids.empty()) return false;
      kid_ = kids.front();
      std::istringstream pem(pems.front());
      key_ = new Poco::Crypto::RSAKey(nullptr, &pem, "");
      return true;
    };
    if (load()) return;
    // First start: make a key. Two processes starting at once both insert; everyone then uses the
    // oldest, so they agree.
    Poco::Crypto::RSAKey fresh(Poco::Crypto::RSAKey::KL_2048, Poco::Crypto::RSAKey::EXP_LARGE);
    std::ostringstream pub, priv;
    fresh.save(&pub, &priv, "");
    std::string kid = sdk::newUuid(), pem = priv.str();
    Poco::Int64 at = sdk::nowMicros();
    db.transaction([&](Poco::Data::Session& s) {
      s << "INSERT INTO auth_signing_keys (kid, private_pem, created_us) VALUES (?, ?, ?)",
          use(kid), use(pem), use(at), now;
    });
    load();
  });
  return key_;
}

std::string JwtIssuer::issue(const std::string& user_id, const std::string& account_id,
                             const std::string& family, int lifetime_seconds) const {
  Poco::JWT::Token token;
  token.setType("JWT");
  const auto& signing_key = key();
  token.header().set("kid", kid_);
  token.setIssuer(issuer_);
  token.setSubject(user_id);
  token.payload().set("acct", account_id);
  token.payload().set("sid", family);
  // NumericDate as whole seconds: some clients reject fractional ones.
  const Poco::Int64 now = sdk::nowMicros() / 1000000;
  token.payload().set("iat", now);
  token.payload().set("exp", now + lifetime_seconds);
  token.setId(sdk::newUuid());
  Poco::JWT::Signer signer(signing_key);
  return signer.sign(token, Poco::JWT::Signer::ALGO_RS256);
}

std::optional<AccessClaims> JwtIssuer::verify(const std::string& jwt, bool& expired) const {
  expired = false;
  // Poco reads the first three parts and ignores what follows: `<jwt>.junk` would pass.
  if (!isCanonicalCompactJws(jwt)) return std::nullopt;
  Poco::JWT::Token token;
  try {
    Poco::JWT::Signer signer(key());
    signer.setAlgorithms({Poco::JWT::Signer::ALGO_RS256});
    if (!signer.tryVerify(jwt, token)) return std::nullopt;
  } catch (...) {
    return std::nullopt;
  }
  if (token.getIssuer() != issuer_ || token.getSubject().empty()) return std::nullopt;
  AccessClaims claims;
  claims.user_id = token.getSubject();
  claims.account_id = token.payload().optValue<std::string>("acct", "");
  claims.jti = token.getId();
  claims.family = token.payload().optValue<std::string>("sid", "");
  claims.expires_us = token.getExpiration().epochMicroseconds();
  if (claims.expires_us <= sdk::nowMicros()) {
    expired = true;
    return std::nullopt;
  }
  return claims;
}

Poco::JSON::Object::Ptr JwtIssuer::jwks() const {
  const auto& rsa = key();
  Poco::JSON::Object::Ptr key = new Poco::JSON::Object;
  key->set("kty", "RSA");
  key->set("use", "sig");
  key->set("alg", "RS256");
  key->set("kid", kid_);
  key->set("n", sdk::base64url(asBytes(rsa->modulus())));
  key->set("e", sdk::base64url(asBytes(rsa->encryptionExponent())));
  Poco::JSON::Array::Ptr keys = new Poco::JSON::Array;
  keys->add(key);
  Poco::JSON::Object::Ptr doc = new Poco::JSON::Object;
  doc->set("keys", keys);
  return doc;
}

}  // namespace svc::plugins::auth
