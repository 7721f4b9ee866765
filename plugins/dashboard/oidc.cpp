#include "oidc.h"

#include <svc/sdk/util.h>

#include <Poco/JSON/Array.h>
#include <Poco/JSON/Parser.h>
#include <Poco/Net/Context.h>
#include <Poco/Net/HTTPBasicCredentials.h>
#include <Poco/Net/HTTPClientSession.h>
#include <Poco/Net/HTTPRequest.h>
#include <Poco/Net/HTTPResponse.h>
#include <Poco/Net/HTTPSClientSession.h>
#include <Poco/Net/NetException.h>
#include <Poco/StreamCopier.h>
#include <Poco/URI.h>

#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/param_build.h>
#include <openssl/sha.h>

namespace svc::plugins::dashboard {

namespace {

constexpr std::size_t kMaxProviderAnswer = 1 << 20;
constexpr std::int64_t kSkewUs = 60LL * 1000000;

std::string formEncode(const std::string& s) {
  std::string out;
  Poco::URI::encode(s, "!#$&'()*+,/:;=?@[]~", out);
  return out;
}

Poco::JSON::Object::Ptr parseObject(const std::string& text, const char* what) {
  try {
    auto v = Poco::JSON::Parser().parse(text);
    if (auto o = v.extract<Poco::JSON::Object::Ptr>()) return o;
  } catch (...) {
  }
  throw OidcError(std::string("The sign-in provider's ") + what + " is not a JSON object.");
}

std::string stringMember(const Poco::JSON::Object::Ptr& o, const std::string& name) {
  if (!o->has(name) || !o->get(name).isString()) return "";
  return o->getValue<std::string>(name);
}

BIGNUM* bignum(const std::string& b64) {
  auto bytes = sdk::base64urlDecode(b64);
  if (!bytes || bytes->empty()) return nullptr;
  return BN_bin2bn(reinterpret_cast<const unsigned char*>(bytes->data()),
                   static_cast<int>(bytes->size()), nullptr);
}

// An RSA public key from a JWK's n and e (RFC 7518 §6.3.1).
std::shared_ptr<EVP_PKEY> rsaFromJwk(const std::string& n64, const std::string& e64) {
  BIGNUM* n = bignum(n64);
  BIGNUM* e = bignum(e64);
  EVP_PKEY* key = nullptr;
  OSSL_PARAM_BLD* bld = OSSL_PARAM_BLD_new();
  OSSL_PARAM* params = nullptr;
  EVP_PKEY_CTX* ctx = EVP_PKEY_CTX_new_from_name(nullptr, "RSA", nullptr);
  if (n && e && bld && ctx && OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_N, n) == 1 &&
      OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_E, e) == 1 &&
      (params = OSSL_PARAM_BLD_to_param(bld)) != nullptr && EVP_PKEY_fromdata_init(ctx) == 1) {
    if (EVP_PKEY_fromdata(ctx, &key, EVP_PKEY_PUBLIC_KEY, params) != 1) key = nullptr;
  }
  OSSL_PARAM_free(params);
  EVP_PKEY_CTX_free(ctx);
  OSSL_PARAM_BLD_free(bld);
  BN_free(n);
  BN_free(e);
  if (key && EVP_PKEY_get_bits(key) < 2048) {  // too weak to trust
    EVP_PKEY_free(key);
    key = nullptr;
  }
  return std::shared_ptr<EVP_PKEY>(key, EVP_PKEY_free);
}

bool verifyRs256(EVP_PKEY* key, const std::string& signed_part, const std::string& signature) {
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  bool ok =
      ctx && EVP_DigestVerifyInit(ctx, nullptr, EVP_sha256(), nullptr, key) == 1 &&
      EVP_DigestVerify(ctx, reinterpret_cast<const unsigned char*>(signature.data()),
                       signature.size(), reinterpret_cast<const unsigned char*>(signed_part.data()),
                       signed_part.size()) == 1;
  EVP_MD_CTX_free(ctx);
  return ok;
}

std::int64_t numericDate(const Poco::JSON::Object::Ptr& claims, const std::string& name) {
  if (!claims->has(name)) return -1;
  auto v = claims->get(name);
  if (!v.isNumeric()) return -1;
  return static_cast<std::int64_t>(v.convert<double>());
}

}  // namespace

std::pair<int, std::string> httpExchange(const std::string& method, const std::string& url,
                                         const std::string& body, const std::string& content_type,
                                         const std::string& authorization) {
  try {
    Poco::URI uri(url);
    std::unique_ptr<Poco::Net::HTTPClientSession> session;
    if (uri.getScheme() == "https") {
      static Poco::Net::Context::Ptr context = new Poco::Net::Context(
          Poco::Net::Context::TLS_CLIENT_USE, "", Poco::Net::Context::VERIFY_RELAXED, 9, true);
      session =
          std::make_unique<Poco::Net::HTTPSClientSession>(uri.getHost(), uri.getPort(), context);
    } else if (uri.getScheme() == "http") {
      session = std::make_unique<Poco::Net::HTTPClientSession>(uri.getHost(), uri.getPort());
    } else {
      throw OidcError("The sign-in provider's URL is not http or https: " + url);
    }
    session->setTimeout(Poco::Timespan(10, 0));
    Poco::Net::HTTPRequest request(method, uri.getPathAndQuery(), Poco::Net::HTTPMessage::HTTP_1_1);
    request.set("Accept", "application/json");
    if (!authorization.empty()) request.set("Authorization", authorization);
    if (!content_type.empty()) request.setContentType(content_type);
    if (method == "POST") request.setContentLength(static_cast<std::streamsize>(body.size()));
    std::ostream& out = session->sendRequest(request);
    out << body;
    Poco::Net::HTTPResponse response;
    std::istream& in = session->receiveResponse(response);
    std::string answer;
    char buffer[8192];
    while (in.read(buffer, sizeof buffer) || in.gcount() > 0) {
      answer.append(buffer, static_cast<std::size_t>(in.gcount()));
      if (answer.size() > kMaxProviderAnswer)
        throw OidcError("The sign-in provider's answer is too large.");
    }
    return {static_cast<int>(response.getStatus()), answer};
  } catch (const OidcError&) {
    throw;
  } catch (const Poco::Exception& e) {
    throw OidcError("The sign-in provider cannot be reached (" + e.displayText() + ").");
  }
}

OidcClient::OidcClient(std::string issuer, std::string client_id, std::string client_secret,
                       std::string redirect_uri)
    : issuer_(std::move(issuer)),
      client_id_(std::move(client_id)),
      client_secret_(std::move(client_secret)),
      redirect_uri_(std::move(redirect_uri)) {}

std::string OidcClient::codeChallenge(const std::string& verifier) {
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(verifier.data()), verifier.size(), digest);
  return sdk::base64url(std::string(reinterpret_cast<char*>(digest), sizeof digest));
}

OidcClient::Discovery OidcClient::discovery() {
  {
    std::lock_guard lock(mutex_);
    if (discovery_ && sdk::nowMicros() - discovery_->fetched_us < 3600LL * 1000000) {
      return *discovery_;
    }
  }
  std::string base = issuer_;
  while (!base.empty() && base.back() == '/') base.pop_back();
  auto [status, text] = httpExchange("GET", base + "/.well-known/openid-configuration");
  if (status != 200) {
    throw OidcError("The sign-in provider's discovery document answered " + std::to_string(status) +
                    ".");
  }
  auto doc = parseObject(text, "discovery document");
  // OpenID Connect Discovery §4.3: the issuer in the document must be the one we asked.
  if (stringMember(doc, "issuer") != issuer_) {
    throw OidcError("The sign-in provider's discovery document names another issuer.");
  }
  Discovery d;
  d.authorization_endpoint = stringMember(doc, "authorization_endpoint");
  d.token_endpoint = stringMember(doc, "token_endpoint");
  d.jwks_uri = stringMember(doc, "jwks_uri");
  d.userinfo_endpoint = stringMember(doc, "userinfo_endpoint");
  if (d.authorization_endpoint.empty() || d.token_endpoint.empty() || d.jwks_uri.empty()) {
    throw OidcError("The sign-in provider's discovery document lacks an endpoint.");
  }
  d.fetched_us = sdk::nowMicros();
  std::lock_guard lock(mutex_);
  discovery_ = d;
  return d;
}

std::string OidcClient::authorizationUrl(const std::string& state, const std::string& nonce,
                                         const std::string& code_challenge) {
  Poco::URI uri(discovery().authorization_endpoint);
  uri.addQueryParameter("response_type", "code");
  uri.addQueryParameter("client_id", client_id_);
  uri.addQueryParameter("redirect_uri", redirect_uri_);
  uri.addQueryParameter("scope", "openid email profile");
  uri.addQueryParameter("state", state);
  uri.addQueryParameter("nonce", nonce);
  uri.addQueryParameter("code_challenge", code_challenge);
  uri.addQueryParameter("code_challenge_method", "S256");
  return uri.toString();
}

std::shared_ptr<EVP_PKEY> OidcClient::key(const std::string& kid) {
  std::string jwks_uri;
  {
    std::lock_guard lock(mutex_);
    auto it = keys_.find(kid);
    if (it != keys_.end()) return it->second;
    if (keys_fetched_us_ && sdk::nowMicros() - keys_fetched_us_ < 60LL * 1000000) return nullptr;
  }
  jwks_uri = discovery().jwks_uri;
  auto [status, text] = httpExchange("GET", jwks_uri);
  if (status != 200)
    throw OidcError("The sign-in provider's key set answered " + std::to_string(status) + ".");
  auto doc = parseObject(text, "key set");
  std::map<std::string, std::shared_ptr<EVP_PKEY>> fresh;
  if (auto keys = doc->getArray("keys")) {
    for (std::size_t i = 0; i < keys->size(); ++i) {
      auto k = keys->getObject(static_cast<unsigned>(i));
      if (!k || stringMember(k, "kty") != "RSA") continue;
      std::string use = stringMember(k, "use");
      if (!use.empty() && use != "sig") continue;
      if (auto pkey = rsaFromJwk(stringMember(k, "n"), stringMember(k, "e"))) {
        fresh[stringMember(k, "kid")] = pkey;
      }
    }
  }
  std::lock_guard lock(mutex_);
  keys_ = std::move(fresh);
  keys_fetched_us_ = sdk::nowMicros();
  auto it = keys_.find(kid);
  if (it != keys_.end()) return it->second;
  // A token without kid is fine when the provider has exactly one key.
  if (kid.empty() && keys_.size() == 1) return keys_.begin()->second;
  return nullptr;
}

OidcClaims OidcClient::finish(const std::string& code, const std::string& code_verifier,
                              const std::string& nonce) {
  std::string body = "grant_type=authorization_code&code=" + formEncode(code) +
                     "&redirect_uri=" + formEncode(redirect_uri_) +
                     "&code_verifier=" + formEncode(code_verifier);
  std::string authorization;
  if (client_secret_.empty()) {
    body += "&client_id=" + formEncode(client_id_);
  } else {  // client_secret_basic (RFC 6749 §2.3.1): form-encoded, then HTTP Basic
    Poco::Net::HTTPRequest basic;
    Poco::Net::HTTPBasicCredentials(formEncode(client_id_), formEncode(client_secret_))
        .authenticate(basic);
    authorization = basic.get(Poco::Net::HTTPRequest::AUTHORIZATION);
  }
  auto [status, text] = httpExchange("POST", discovery().token_endpoint, body,
                                     "application/x-www-form-urlencoded", authorization);
  auto answer = parseObject(text, "token answer");
  if (status != 200) {
    std::string error = stringMember(answer, "error");
    throw OidcError("The sign-in provider refused the sign-in (" +
                    (error.empty() ? std::to_string(status) : error) + ").");
  }
  std::string id_token = stringMember(answer, "id_token");
  if (id_token.empty()) throw OidcError("The sign-in provider sent no ID token.");
  OidcClaims claims = verifyIdToken(id_token, nonce);
  // Providers that follow Core §5.4 strictly put email and name only in the UserInfo answer.
  const std::string access_token = stringMember(answer, "access_token");
  const std::string userinfo = discovery().userinfo_endpoint;
  if ((claims.email.empty() || claims.name.empty()) && !access_token.empty() && !userinfo.empty()) {
    auto [info_status, info_text] = httpExchange("GET", userinfo, "", "", "Bearer " + access_token);
    if (info_status == 200) {
      auto info = parseObject(info_text, "UserInfo answer");
      // Core §5.3.2: the answer is about the ID token's subject, or it is not to be used.
      if (stringMember(info, "sub") != claims.subject) {
        throw OidcError("The provider's UserInfo answer is about someone else.");
      }
      if (claims.email.empty()) {
        claims.email = stringMember(info, "email");
        claims.email_verified = info->has("email_verified") &&
                                info->get("email_verified").isBoolean() &&
                                info->getValue<bool>("email_verified");
      }
      if (claims.name.empty()) claims.name = stringMember(info, "name");
    }
  }
  return claims;
}

OidcClaims OidcClient::verifyIdToken(const std::string& id_token, const std::string& nonce) {
  const std::size_t dot1 = id_token.find('.');
  const std::size_t dot2 = dot1 == std::string::npos ? dot1 : id_token.find('.', dot1 + 1);
  if (dot2 == std::string::npos || id_token.find('.', dot2 + 1) != std::string::npos ||
      id_token.size() > 16384) {
    throw OidcError("The ID token is malformed.");
  }
  auto header_json = sdk::base64urlDecode(id_token.substr(0, dot1));
  auto payload_json = sdk::base64urlDecode(id_token.substr(dot1 + 1, dot2 - dot1 - 1));
  auto signature = sdk::base64urlDecode(id_token.substr(dot2 + 1));
  if (!header_json || !payload_json || !signature) throw OidcError("The ID token is malformed.");
  auto header = parseObject(*header_json, "ID token header");
  // Only the algorithm we expect: never "none", never an HMAC keyed with a public key.
  if (stringMember(header, "alg") != "RS256") {
    throw OidcError("The ID token is not signed with RS256.");
  }
  auto pkey = key(stringMember(header, "kid"));
  if (!pkey) throw OidcError("The ID token is signed with a key the provider does not publish.");
  if (!verifyRs256(pkey.get(), id_token.substr(0, dot2), *signature)) {
    throw OidcError("The ID token's signature is wrong.");
  }
  auto claims = parseObject(*payload_json, "ID token");
  if (stringMember(claims, "iss") != issuer_) throw OidcError("The ID token names another issuer.");
  bool audience_ok = false;
  std::size_t audiences = 0;
  if (claims->has("aud") && claims->get("aud").isString()) {
    audiences = 1;
    audience_ok = claims->getValue<std::string>("aud") == client_id_;
  } else if (auto list = claims->getArray("aud")) {
    audiences = list->size();
    for (std::size_t i = 0; i < list->size(); ++i) {
      if (list->get(static_cast<unsigned>(i)).toString() == client_id_) audience_ok = true;
    }
  }
  if (!audience_ok) throw OidcError("The ID token is meant for another client.");
  if (audiences > 1 && stringMember(claims, "azp") != client_id_) {
    throw OidcError("The ID token's authorized party is another client.");
  }
  const std::int64_t now_s = sdk::nowMicros() / 1000000;
  const std::int64_t exp = numericDate(claims, "exp"), iat = numericDate(claims, "iat");
  if (exp < 0 || exp * 1000000 + kSkewUs <= sdk::nowMicros()) {
    throw OidcError("The ID token has expired.");
  }
  if (iat < 0 || iat > now_s + kSkewUs / 1000000)
    throw OidcError("The ID token is from the future.");
  if (nonce.empty() || stringMember(claims, "nonce") != nonce) {
    throw OidcError("The ID token's nonce does not match this sign-in.");
  }
  OidcClaims out;
  out.subject = stringMember(claims, "sub");
  if (out.subject.empty()) throw OidcError("The ID token names no subject.");
  out.email = stringMember(claims, "email");
  out.name = stringMember(claims, "name");
  out.email_verified = claims->has("email_verified") && claims->get("email_verified").isBoolean() &&
                       claims->getValue<bool>("email_verified");
  return out;
}

}  // namespace svc::plugins::dashboard
