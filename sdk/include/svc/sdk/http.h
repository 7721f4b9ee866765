// Requests, responses and errors as a route handler sees them.
//
// Handlers never touch sockets or threads: they read a parsed Request, return a Response or throw
// HttpError, and the kernel writes the answer in the contract's shape. A handler that must answer
// later (a long-poll) or keep writing (a stream) returns Response::hold(); the kernel then hands
// the connection to its event-driven hub and gives the handler a Stream to finish it with.
#pragma once

#include <Poco/Dynamic/Var.h>
#include <Poco/JSON/Object.h>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace svc::sdk {

/// What kind of caller a principal is.
enum class PrincipalKind {
  kNone,        ///< No credential was presented (or the route needs none).
  kUser,        ///< A signed-in human: a JWT access token or the dashboard's session.
  kManagement,  ///< A management key: the whole account.
  kIdentity,    ///< An identity key: exactly one identity.
};

/// Who is calling, as the registered Authenticator established it.
struct Principal {
  PrincipalKind kind = PrincipalKind::kNone;  ///< kNone when unauthenticated.
  std::string account_id;                     ///< The account the credential belongs to.
  std::string user_id;                        ///< The user (kUser, or who created a key).
  std::string key_id;                         ///< The key's id, for key credentials.
  std::string key_label;                      ///< The key's label, for key credentials.
  std::string key_prefix;                     ///< The key's visible prefix, for key credentials.
  std::string bound_identity;                 ///< For kIdentity: the identity the key is bound to.
  /// What authenticated the request, as the authenticator names it (`key:ID`, `session:HASH`,
  /// `family:ID`): what a Revocation (auth.h) names to end the requests it holds open.
  std::string credential;
  /// @return true when a credential was accepted.
  bool authenticated() const { return kind != PrincipalKind::kNone; }
};

/// The identity a request targets, resolved by the kernel through the IdentityDirectory.
struct IdentityRef {
  std::string uuid;  ///< The identity's id.
  std::string name;  ///< Its display name.
};

/// A parsed request. Header names are stored lower-case.
struct Request {
  std::string method;                             ///< GET, POST, ...
  std::string path;                               ///< The decoded-per-segment path, without query.
  std::string route;                              ///< The matched route pattern.
  std::map<std::string, std::string> params;      ///< Named path parameters, percent-decoded.
  std::multimap<std::string, std::string> query;  ///< Query parameters, decoded, in order.
  std::map<std::string, std::string> headers;     ///< Headers, lower-case names (last value wins).
  std::string body;                               ///< The raw body (already size-checked).
  std::string content_type;                 ///< The media type without parameters, lower-case.
  Poco::JSON::Object::Ptr json;             ///< The body as a JSON object, when it was JSON.
  std::map<std::string, std::string> form;  ///< The body's fields, when it was form-encoded.
  Principal principal;                      ///< Who is calling.
  std::optional<IdentityRef> identity;      ///< The targeted identity, when one was named.
  std::string request_id;                   ///< The X-Request-Id of this request.
  std::string client_address;               ///< The peer's IP address.
  std::string base_url;                     ///< public.base_url, for absolute links.

  /// @param name a query parameter name.
  /// @return its first value, or nullopt when absent.
  std::optional<std::string> queryParam(const std::string& name) const;
  /// @param name a query parameter name. @return its value as a boolean (`true`/`1` or
  /// `false`/`0`, any case), or nullopt when absent. @throws HttpError 400 naming it otherwise.
  std::optional<bool> boolQuery(const std::string& name) const;
  /// @param name a header name, any case.
  /// @return its value, or nullopt when absent.
  std::optional<std::string> header(const std::string& name) const;
  /// @param name a cookie name. @return that cookie's value from the Cookie header, or nullopt.
  std::optional<std::string> cookie(const std::string& name) const;
  /// @param name a field of the body: a member of a JSON body, or a form-encoded field.
  /// @return its text, or nullopt when absent or null.
  /// @throws HttpError 400 `invalid` naming the field when it is not a string.
  std::optional<std::string> stringField(const std::string& name) const;
  /// @param name a field of the body, as stringField reads it. @return its text.
  /// @throws HttpError 400 `invalid` naming the field when it is absent, null or not a string.
  std::string requiredString(const std::string& name) const;
  /// @param name a member of the JSON body. @return a string as a list of one, a list of
  /// strings as it is, nothing when absent or null.
  /// @throws HttpError 400 `invalid` naming the field for anything else.
  std::vector<std::string> stringListField(const std::string& name) const;
  /// @param name a member of the JSON body. @return its value, or nullopt when absent or null.
  /// @throws HttpError 400 `invalid` naming the field when it is not true or false.
  std::optional<bool> boolField(const std::string& name) const;
};

/// @param request a request. @return the identity it is limited to (lower-case): the bound
/// identity of an identity key, or the one a user or management key named; empty when it may see
/// the whole account.
std::string scopeIdentity(const Request& request);
/// @param request a request. @param account a row's account. @param identity the row's identity.
/// @return whether the request may see that row; when not, the route answers 404 (never reveal
/// that it belongs to someone else).
bool visibleTo(const Request& request, const std::string& account, const std::string& identity);

/// @param cookie_header a Cookie header's value (`a=1; b=2`). @param name a cookie name.
/// @return that cookie's value (the first, when repeated), or nullopt.
std::optional<std::string> cookieValue(const std::string& cookie_header, const std::string& name);

/// @param authorization an Authorization header's value.
/// @return the credential after the `Bearer` scheme (RFC 6750), the scheme matched in any case
/// (RFC 9110 section 11.1) and any spaces or tabs around the credential dropped; nullopt for
/// another scheme or an empty credential.
std::optional<std::string> bearerCredential(std::string_view authorization);

/// An error a handler throws; the kernel answers it in the contract's error shape
/// `{"detail", "code", "errors"?}` plus any extra fields and headers.
class HttpError : public std::runtime_error {
 public:
  /// @param status the HTTP status.
  /// @param code the machine code (for example `not_found`).
  /// @param detail a sentence for a human or agent that says what to do next.
  HttpError(int status, std::string code, std::string detail);
  ~HttpError() override;

  /// Adds a validation message for a field (makes the body carry `errors`).
  /// @param field the field name. @param message what is wrong with it. @return *this.
  HttpError& field(const std::string& field, const std::string& message);
  /// Adds a top-level member to the error body. @return *this.
  HttpError& extra(const std::string& name, const Poco::Dynamic::Var& value);
  /// Adds a response header. @return *this.
  HttpError& header(const std::string& name, const std::string& value);

  /// @return the HTTP status.
  int status() const { return status_; }
  /// @return the machine code.
  const std::string& code() const { return code_; }
  /// @return the human sentence.
  const std::string& detail() const { return detail_; }
  /// @return the field errors.
  const std::map<std::string, std::vector<std::string>>& errors() const { return errors_; }
  /// @return the extra members.
  const std::vector<std::pair<std::string, Poco::Dynamic::Var>>& extras() const { return extras_; }
  /// @return the extra headers.
  const std::vector<std::pair<std::string, std::string>>& headers() const { return headers_; }

  /// 400 `invalid` with one field error. @param field the field. @param message the problem.
  static HttpError invalid(const std::string& field, const std::string& message);
  /// 404 `not_found`. @param what the kind of thing that was not found.
  static HttpError notFound(const std::string& what = "resource");
  /// 403 `permission_denied`: an identity key named another identity than its own (the fence
  /// every identity-scoped route keeps, in the kernel and in plugins alike).
  static HttpError otherIdentity();

 private:
  int status_;
  std::string code_;
  std::string detail_;
  std::map<std::string, std::vector<std::string>> errors_;
  std::vector<std::pair<std::string, Poco::Dynamic::Var>> extras_;
  std::vector<std::pair<std::string, std::string>> headers_;
};

/// Validation that names every bad field at once, so a client fixes its request in one round
/// trip instead of one field per 400.
class FieldErrors {
 public:
  /// Notes a problem with a field. @param field the field. @param message what is wrong with it.
  void add(const std::string& field, const std::string& message);
  /// Runs check (which may throw HttpError 400 with field errors, as Request's readers do) and
  /// keeps its field errors instead of stopping there. @param check the check.
  template <class Check>
  void collect(Check&& check) {
    try {
      check();
    } catch (const HttpError& e) {
      if (e.status() != 400 || e.errors().empty()) throw;
      for (const auto& [field, messages] : e.errors()) {
        for (const auto& m : messages) add(field, m);
      }
    }
  }
  /// @return whether no problem was noted.
  bool empty() const { return errors_.empty(); }
  /// @throws HttpError 400 `invalid` naming every field noted, when there is one.
  void throwIfAny() const;

 private:
  std::vector<std::pair<std::string, std::string>> errors_;
};

class Stream;

/// A complete answer, or a request to hold the connection open (see hold()).
struct Response {
  int status = 200;                                          ///< HTTP status.
  std::string content_type = "application/json";             ///< Content-Type.
  std::string body;                                          ///< The body bytes.
  std::vector<std::pair<std::string, std::string>> headers;  ///< Extra headers.
  /// When set, the kernel writes nothing, hands the connection to its hub and calls this with the
  /// Stream that answers it later. status/body are then ignored.
  std::function<void(std::shared_ptr<Stream>)> on_hold;

  /// @param status the status. @param body a JSON value (usually an Object). @return the response.
  static Response json(int status, const Poco::Dynamic::Var& body);
  /// @param status the status. @param body the JSON object. @return the response.
  static Response json(int status, const Poco::JSON::Object::Ptr& body);
  /// @param status the status. @param body the text. @param type its content type.
  /// @return the response.
  static Response text(int status, std::string body,
                       std::string type = "text/plain; charset=utf-8");
  /// @return a 204 with no body.
  static Response noContent();
  /// @param response an answer carrying secrets (passwords, secret values). @return it with
  /// `Cache-Control: no-store` (and `Pragma: no-cache`), so that no browser or
  /// proxy keeps it.
  static Response noStore(Response response);
  /// @param on_hold called with the Stream once the connection belongs to the hub.
  /// @return a response that keeps the connection open without holding a worker thread.
  static Response hold(std::function<void(std::shared_ptr<Stream>)> on_hold);
};

/// A held connection. All methods are thread-safe and never block: writes are queued and the
/// kernel's hub flushes them as the peer reads. A peer that falls behind by more than the
/// configured buffer is disconnected.
class Stream {
 public:
  virtual ~Stream();
  /// Answers the held request with a complete response and closes the connection.
  /// Only valid before begin(). @param response the answer. @return false if already closed.
  virtual bool respond(const Response& response) = 0;
  /// Starts a streamed body: writes the status line and headers (no Content-Length; the body ends
  /// when the stream finishes). @param status the status. @param content_type the type.
  /// @param headers extra headers. @return false if already closed.
  virtual bool begin(int status, const std::string& content_type,
                     const std::vector<std::pair<std::string, std::string>>& headers) = 0;
  /// Queues bytes of a streamed body. @param data the bytes.
  /// @return false when closed, or when the peer is too slow and was disconnected.
  virtual bool write(const std::string& data) = 0;
  /// Flushes what is queued, then closes the connection.
  virtual void finish() = 0;
  /// @return true until the stream is finished, the peer goes away, or it overflowed.
  virtual bool isOpen() const = 0;
  /// Calls fn once when the stream closes for any reason (immediately if already closed).
  /// @param fn the callback; it runs on the hub's thread and must not block.
  virtual void onClose(std::function<void()> fn) = 0;
  /// Calls fn on the hub's thread after the delay unless the stream closed first. A new call
  /// replaces the previous timer. @param delay how long. @param fn the callback.
  virtual void expireAfter(std::chrono::milliseconds delay, std::function<void()> fn) = 0;
  /// @return the X-Request-Id of the request this stream answers.
  virtual const std::string& requestId() const = 0;
  /// @return bytes queued and not yet taken by the peer (for pacing a long replay).
  virtual std::size_t queued() const = 0;
};

}  // namespace svc::sdk
