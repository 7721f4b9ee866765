#include "pipeline.h"

#include "database.h"
#include "response_check.h"

#include <svc/sdk/accounts.h>
#include <svc/sdk/auth.h>
#include <svc/sdk/util.h>

#include <Poco/Exception.h>
#include <Poco/JSON/Parser.h>

#include <Poco/String.h>
#include <Poco/URI.h>

#include <chrono>
#include <cstdio>
#include <random>
#include <sstream>

namespace svc::kernel {

namespace {

using Clock = std::chrono::steady_clock;

// No error message a person should read is longer than this.
constexpr std::size_t kMaxMessage = 1000;

sdk::HttpError invalidBody(const std::string& detail) {
  sdk::HttpError e(400, "invalid", detail);
  e.field("body", detail);
  return e;
}

std::string mediaType(const std::string& content_type) {
  std::string type = content_type.substr(0, content_type.find(';'));
  return Poco::toLower(Poco::trim(type));
}

// Metrics label for a method: the usual ones as they are, anything else as OTHER, so a client
// inventing methods cannot grow the metrics without bound.
std::string metricMethod(const std::string& method) {
  for (const char* m : {"GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"}) {
    if (method == m) return method;
  }
  return "OTHER";
}

std::string methodList(const std::vector<std::string>& methods) {
  std::string out;
  for (const auto& m : methods) out += (out.empty() ? "" : ", ") + m;
  return out;
}

}  // namespace

std::string errorBody(const sdk::HttpError& e, const std::string& request_id) {
  // The last line of defence for handlers that echo input unquoted: Poco writes invalid UTF-8
  // through into the JSON, which clients then cannot parse. Sites quote their input shorter.
  auto safe = [](const std::string& text) { return sdk::quoteForDetail(text, kMaxMessage); };
  Poco::JSON::Object body;
  body.set("detail", safe(e.detail()));
  body.set("code", e.code());
  if (!e.errors().empty()) {
    Poco::JSON::Object::Ptr errors = new Poco::JSON::Object;
    for (auto& [field, messages] : e.errors()) {
      Poco::JSON::Array::Ptr list = new Poco::JSON::Array;
      for (auto& m : messages) list->add(safe(m));
      errors->set(safe(field), list);
    }
    body.set("errors", errors);
  }
  for (auto& [name, value] : e.extras()) body.set(name, value);
  if (e.status() >= 500 && !body.has("request_id")) body.set("request_id", request_id);
  std::ostringstream out;
  body.stringify(out);
  return out.str();
}

sdk::Response errorResponse(const sdk::HttpError& e, const std::string& request_id) {
  sdk::Response r;
  r.status = e.status();
  r.body = errorBody(e, request_id);
  r.headers = e.headers();
  return r;
}

std::string chooseRequestId(const std::string& client) {
  if (!client.empty() && client.size() <= 64) {
    bool safe = true;
    for (char c : client) {
      safe = safe && (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' ||
                      c == '.' || c == ':');
    }
    if (safe) return client;
  }
  // Request ids need to be unique, not secret: a per-thread generator seeded from the system's
  // randomness, formatted as a version 4 UUID, costs no lock and no system call.
  thread_local std::mt19937_64 generator = [] {
    std::random_device device;
    std::seed_seq seed{device(), device(), device(), device()};
    return std::mt19937_64(seed);
  }();
  std::uint64_t hi = generator(), lo = generator();
  hi = (hi & 0xffffffffffff0fffULL) | 0x0000000000004000ULL;  // version 4
  lo = (lo & 0x3fffffffffffffffULL) | 0x8000000000000000ULL;  // RFC 4122 variant
  char buf[40];
  std::snprintf(buf, sizeof buf, "%08x-%04x-%04x-%04x-%012llx", static_cast<unsigned>(hi >> 32),
                static_cast<unsigned>((hi >> 16) & 0xffff), static_cast<unsigned>(hi & 0xffff),
                static_cast<unsigned>(lo >> 48),
                static_cast<unsigned long long>(lo & 0xffffffffffffULL));
  return buf;
}

sdk::Response Pipeline::dispatch(sdk::Request& req, std::string& route_out) {
  try {
    RouteMatch match = rt_.router->match(req.method, req.path);
    if (match.status == RouteMatch::Status::kFound) route_out = match.entry->route.pattern;
    return dispatchMatched(match, req);
  } catch (const sdk::HttpError& e) {
    return errorResponse(e, req.request_id);
  }
}

sdk::Response Pipeline::dispatchMatched(const RouteMatch& match, sdk::Request& req) {
  try {
    switch (match.status) {
      case RouteMatch::Status::kNotFound:
        for (const auto& [prefix, plugin] : rt_.dormant_paths) {
          if (req.path.rfind(prefix, 0) == 0 || req.path + "/" == prefix) {
            throw sdk::HttpError(404, "feature_not_enabled",
                                 "This server has the '" + plugin + "' plugin, which serves " +
                                     prefix +
                                     ", but has not enabled it; its operator can add it "
                                     "to plugins.enabled.");
          }
        }
        throw sdk::HttpError(404, "not_found",
                             "No route matches " + sdk::quoteForDetail(req.path) + ".");
      case RouteMatch::Status::kBadPath: {
        sdk::HttpError e(400, "invalid", "The path is invalid: " + match.problem + ".");
        e.field("path", match.problem);
        throw e;
      }
      case RouteMatch::Status::kMethodNotAllowed: {
        sdk::HttpError e(405, "method_not_allowed",
                         "Method " + sdk::quoteForDetail(req.method, 20) +
                             " is not allowed here; use " + methodList(match.allowed) + ".");
        e.header("Allow", methodList(match.allowed));
        throw e;
      }
      case RouteMatch::Status::kFound:
        break;
    }
    const RouteEntry& entry = *match.entry;
    req.route = entry.route.pattern;
    req.params = match.params;
    for (auto& [name, value] : req.headers) {
      if (sdk::hasControlCharacter(value, /*allow_tab=*/true)) {
        const std::string quoted = sdk::quoteForDetail(name);
        sdk::HttpError e(400, "invalid", "Header " + quoted + " contains control characters.");
        e.field(quoted, "contains control characters");
        throw e;
      }
    }
    for (auto& [name, value] : req.query) {
      if (!sdk::isValidUtf8(value) || !sdk::isValidUtf8(name)) {
        throw sdk::HttpError::invalid(sdk::isValidUtf8(name) ? sdk::quoteForDetail(name) : "query",
                                      "must be valid UTF-8");
      }
    }
    parseBody(entry, req);
    const auto authenticated_at = Clock::now();
    authenticate(entry, req);
    checkShapes(entry, req);
    sdk::Response answer = entry.route.handler(req);
    if (answer.on_hold && rt_.access && req.principal.authenticated()) {
      // A held request lives no longer than its access: a revocation ends it (access_watch.h).
      answer.on_hold =
          [access = rt_.access, authenticated_at, inner = std::move(answer.on_hold),
           holder = Holder{req.principal.account_id, req.principal.credential,
                           req.identity ? req.identity->uuid : "",
                           req.principal.bound_identity}](std::shared_ptr<sdk::Stream> stream) {
            inner(stream);
            if (stream->isOpen()) access->track(stream, holder, authenticated_at);
          };
    }
    if (rt_.check_responses) {
      if (auto mismatch = responseMismatch(entry.route, answer)) {
        if (rt_.error_log) {
          rt_.error_log->error("request " + req.request_id + " " + req.method + " " + req.path +
                               ": response_mismatch: " + errorBody(*mismatch, req.request_id));
        }
        return errorResponse(*mismatch, req.request_id);
      }
    }
    return answer;
  } catch (const sdk::HttpError& e) {
    return errorResponse(e, req.request_id);
  } catch (const std::exception& e) {
    const std::string why = databaseErrorText(e);  // Poco's displayText(), else what()
    // A transaction whose COMMIT lost its connection may have been applied: not a 503, which
    // promises that nothing was (a client or load balancer may send a 503's request again).
    const bool commit_unknown = dynamic_cast<const CommitOutcomeUnknown*>(&e) != nullptr;
    if (commit_unknown) {
      if (rt_.error_log) {
        rt_.error_log->error("request " + req.request_id + " " + req.method + " " + req.path +
                             " failed: " + why);
      }
      return errorResponse(sdk::HttpError(500, "server_error",
                                          "The connection to the database broke while this "
                                          "request's change was committed: it may have been "
                                          "applied or not. Check before repeating it."),
                           req.request_id);
    }
    // Nothing of the request was kept, and the same request will most likely succeed: a
    // transaction the database gave up for another's sake (as often as svcd retried it), or a
    // database out of reach.
    const bool conflict = isTransientDatabaseError(why);
    if (conflict || isDatabaseUnreachableError(why)) {
      if (rt_.error_log) {
        rt_.error_log->warning("request " + req.request_id + " " + req.method + " " + req.path +
                               (conflict ? " met a passing database conflict (503): "
                                         : " could not reach the database (503): ") +
                               why);
      }
      return errorResponse(
          sdk::HttpError(503, "service_unavailable",
                         conflict ? "A conflicting change held the data this request needed; "
                                    "nothing was changed. Retry the request."
                                  : "This server cannot reach its database; nothing was "
                                    "changed. Retry the request, here or on another server.")
              .header("Retry-After", "1"),
          req.request_id);
    }
    if (rt_.error_log) {
      rt_.error_log->error("request " + req.request_id + " " + req.method + " " + req.path +
                           " failed: " + why);
    }
  } catch (...) {
    if (rt_.error_log) {
      rt_.error_log->error("request " + req.request_id + " " + req.method + " " + req.path +
                           " failed with a non-standard exception");
    }
  }
  return errorResponse(sdk::HttpError(500, "server_error",
                                      "The server failed to answer this request; it has been "
                                      "logged with the request id."),
                       req.request_id);
}

void Pipeline::parseBody(const RouteEntry& entry, sdk::Request& req) {
  req.json = new Poco::JSON::Object;
  if (req.body.empty()) return;
  const std::string& type = req.content_type;
  bool json = type == "application/json" || Poco::endsWith(type, std::string("+json"));
  bool form = type == "application/x-www-form-urlencoded";
  switch (entry.route.body) {
    case sdk::BodyKind::kAny:
      return;  // the handler's bytes, whatever they are (a JSON file uploaded is not parsed)
    case sdk::BodyKind::kJsonOrForm:
      if (form) {
        Poco::URI::QueryParameters fields;
        try {
          fields = Poco::URI("/?" + req.body).getQueryParameters();
        } catch (const Poco::Exception&) {
          throw invalidBody("The form-encoded body is malformed.");
        }
        // Checked decoded, as a JSON body's strings are: UTF-8, and no NUL.
        for (auto& [k, v] : fields) {
          if (!sdk::isValidUtf8(k) || !sdk::isValidUtf8(v)) {
            throw invalidBody("The body is not valid UTF-8.");
          }
          if (k.find('\0') != std::string::npos || v.find('\0') != std::string::npos) {
            throw invalidBody("The body holds a NUL character.");
          }
          req.form[k] = v;
        }
        return;
      }
      [[fallthrough]];
    case sdk::BodyKind::kJson:
      if (!json) {
        throw sdk::HttpError(
            415, "unsupported_media_type",
            "Content-Type " + (type.empty() ? std::string("(none)") : sdk::quoteForDetail(type)) +
                " is not supported here; send application/json.");
      }
      break;
  }
  if (!sdk::isValidUtf8(req.body)) throw invalidBody("The body is not valid UTF-8.");
  try {
    Poco::JSON::Parser parser;
    parser.setDepth(64);
    Poco::Dynamic::Var parsed = parser.parse(req.body);
    if (parsed.type() != typeid(Poco::JSON::Object::Ptr)) {
      throw invalidBody("The body must be a JSON object.");
    }
    req.json = parsed.extract<Poco::JSON::Object::Ptr>();
  } catch (const Poco::Exception& e) {
    // Poco's messages quote the offending text whole (a number of any length, for one).
    throw invalidBody("The body is not valid JSON: " + sdk::quoteForDetail(e.message()));
  }
}

void Pipeline::checkShapes(const RouteEntry& entry, const sdk::Request& req) {
  const sdk::Route& route = entry.route;
  if (!route.query && !route.request) return;
  sdk::FieldErrors errors;
  if (route.query) {
    // `identity` is the kernel's own on every route that reads a credential (authenticate()).
    const bool kernels = route.auth != sdk::AuthNeed::kNone &&
                         route.auth != sdk::AuthNeed::kOperator && req.query.count("identity");
    if (kernels) {
      auto rest = req.query;
      rest.erase("identity");
      sdk::validateQuery(*route.query, rest, errors);
    } else {
      sdk::validateQuery(*route.query, req.query, errors);
    }
  }
  // A form-encoded body is the handler's (OAuth's token endpoint).
  if (route.request && req.form.empty() && route.body != sdk::BodyKind::kAny) {
    route.request->validate(req.json, "", errors);  // kAny: the handler's bytes, never parsed
  }
  errors.throwIfAny();
}

void Pipeline::authenticate(const RouteEntry& entry, sdk::Request& req) {
  const sdk::AuthNeed need = entry.route.auth;
  if (need == sdk::AuthNeed::kNone) return;
  if (need == sdk::AuthNeed::kOperator) {
    const auto token = sdk::bearerCredential(req.header("authorization").value_or(""));
    if (!token) {
      throw sdk::HttpError(401, "not_authenticated",
                           "The operator API needs Authorization: Bearer <admin.token>.");
    }
    if (rt_.operator_token.empty() || !sdk::constantTimeEquals(*token, rt_.operator_token)) {
      throw sdk::HttpError(401, "authentication_failed", "The operator token is wrong.");
    }
    return;
  }
  sdk::Credentials creds;
  creds.authorization = req.header("authorization").value_or("");
  creds.cookie = req.header("cookie").value_or("");
  creds.client_address = req.client_address;
  creds.method = req.method;
  creds.csrf = req.header(sdk::kSessionCsrfHeader).value_or("");
  if (creds.authorization.empty() && creds.cookie.empty()) {
    throw sdk::HttpError(401, "not_authenticated",
                         "Authentication credentials were not provided; send Authorization: "
                         "Bearer <key or token>.")
        .header("WWW-Authenticate", "Bearer");
  }
  auto authenticator = rt_.services->find(sdk::kAuthenticatorService);
  if (!authenticator) {
    throw sdk::HttpError(503, "service_unavailable",
                         "No authentication plugin is enabled on this server.");
  }
  auto principal = authenticator->authenticate(creds);
  if (!principal || !principal->authenticated()) {
    throw sdk::HttpError(401, "not_authenticated",
                         "Authentication credentials were not provided; send Authorization: "
                         "Bearer <key or token>.")
        .header("WWW-Authenticate", "Bearer");
  }
  req.principal = *principal;
  const sdk::PrincipalKind kind = req.principal.kind;
  if (need == sdk::AuthNeed::kUser && kind != sdk::PrincipalKind::kUser) {
    throw sdk::HttpError(403, "permission_denied", "This route needs a signed-in user.");
  }
  if (need == sdk::AuthNeed::kAccount && kind == sdk::PrincipalKind::kIdentity) {
    throw sdk::HttpError(403, "permission_denied",
                         "An identity key cannot call this route; use a management key.");
  }

  auto from_query = req.queryParam("identity");
  auto from_header = req.header("x-svc-identity");
  if (from_query && from_header && Poco::toLower(*from_query) != Poco::toLower(*from_header)) {
    throw sdk::HttpError::invalid(
        "identity", "the identity query parameter and the X-Svc-Identity header disagree");
  }
  std::string named = Poco::toLower(from_query ? *from_query : from_header.value_or(""));
  std::string target;
  if (kind == sdk::PrincipalKind::kIdentity) {
    if (!named.empty() && named != Poco::toLower(req.principal.bound_identity)) {
      throw sdk::HttpError::otherIdentity();
    }
    target = req.principal.bound_identity;
  } else {
    target = named;
  }
  if (target.empty()) {
    if (need == sdk::AuthNeed::kIdentity) {
      throw sdk::HttpError(400, "identity_required",
                           "Name the identity with ?identity=<uuid> or the X-Svc-Identity "
                           "header, or use an identity key.");
    }
    return;
  }
  if (!sdk::isUuid(target)) throw sdk::HttpError::notFound("identity");
  auto directory = rt_.services->find(sdk::kIdentityDirectoryService);
  std::optional<sdk::IdentityRef> found;
  if (directory) found = directory->find(req.principal.account_id, target);
  if (!found) throw sdk::HttpError::notFound("identity");
  req.identity = *found;
}

std::size_t Pipeline::bodyLimit(const http::RequestHead& head) const {
  std::size_t limit = rt_.limits.max_body_bytes;
  const std::string path = head.target.substr(0, head.target.find_first_of("?#"));
  RouteMatch match = rt_.router->match(head.method == "HEAD" ? "GET" : head.method, path);
  if (match.status == RouteMatch::Status::kFound && match.entry->route.max_body_bytes) {
    limit = match.entry->route.max_body_bytes;
  }
  return limit;
}

sdk::Response Pipeline::dispatchInner(sdk::Request& req, std::function<void(int)>& record) {
  const auto started = Clock::now();
  std::string route_name = "unmatched";
  sdk::Response out;
  try {
    RouteMatch match = rt_.router->match(req.method, req.path);
    if (match.status == RouteMatch::Status::kFound) {
      route_name = match.entry->route.pattern;
      const std::size_t limit = match.entry->route.max_body_bytes
                                    ? match.entry->route.max_body_bytes
                                    : rt_.limits.max_body_bytes;
      if (req.body.size() > limit) {
        throw sdk::HttpError(
            413, "payload_too_large",
            "The body is larger than this route accepts (" + std::to_string(limit) + " bytes).");
      }
    }
    out = dispatchMatched(match, req);
  } catch (const sdk::HttpError& e) {
    out = errorResponse(e, req.request_id);
  }
  RouteStats* stats =
      rt_.metrics ? &rt_.metrics->stats(metricMethod(req.method), route_name) : nullptr;
  // Called later for a held answer, when this Pipeline (a temporary) is gone: it holds what it
  // needs, never `this`.
  record = [access_log = rt_.access_log, started, stats, method = req.method, path = req.path,
            rid = req.request_id, client = req.client_address](int status) {
    const double seconds = std::chrono::duration<double>(Clock::now() - started).count();
    if (stats) stats->observe(status, seconds);
    if (access_log) access_log->record(method, path, status, seconds * 1000.0, rid, client);
  };
  if (!out.on_hold) record(out.status);
  return out;
}

sdk::Response Pipeline::refusal(int status, const std::string& code, const std::string& detail,
                                const std::string& client_address) {
  const std::string rid = chooseRequestId("");
  sdk::Response out = errorResponse(sdk::HttpError(status, code, detail), rid);
  out.headers.insert(out.headers.begin(), {"X-Request-Id", rid});
  if (rt_.metrics) rt_.metrics->observe("?", "malformed", status, 0);
  if (rt_.access_log) rt_.access_log->record("?", "?", status, 0, rid, client_address);
  return out;
}

void readTarget(const std::string& target, sdk::Request& req) {
  if (target.empty() || target.front() != '/') {
    throw sdk::HttpError(400, "invalid", "The request target must be an absolute path.");
  }
  std::size_t cut = target.find_first_of("?#");
  req.path = target.substr(0, cut);
  if (cut != std::string::npos && target[cut] == '?') {
    std::string raw_query = target.substr(cut + 1, target.find('#', cut) - cut - 1);
    try {
      Poco::URI parsed("/?" + raw_query);
      for (auto& [k, v] : parsed.getQueryParameters()) req.query.emplace(k, v);
    } catch (const Poco::Exception&) {
      throw sdk::HttpError::invalid("query", "malformed query string");
    }
  }
  auto content_type = req.headers.find("content-type");
  req.content_type = mediaType(content_type == req.headers.end() ? "" : content_type->second);
  // HEAD is GET without the body: handlers see GET, and the connection leaves the body out.
  if (req.method == "HEAD") req.method = "GET";
}

Served Pipeline::serve(IncomingRequest& in) {
  const auto started = Clock::now();
  const http::RequestHead& head = in.head;
  sdk::Request req;
  const std::string* client_id = head.field("x-request-id");
  req.request_id = chooseRequestId(client_id ? *client_id : "");
  req.method = head.method;
  req.base_url = rt_.base_url;
  req.client_address = in.client_address;
  req.body = std::move(in.body);
  std::string route_name = "unmatched";
  const RouteEntry* matched_entry = nullptr;
  Served served;
  sdk::Response& out = served.response;
  try {
    for (auto& [name, value] : head.fields) req.headers[Poco::toLower(name)] = value;
    readTarget(head.target, req);

    RouteMatch match = rt_.router->match(req.method, req.path);
    if (match.status == RouteMatch::Status::kFound) {
      route_name = match.entry->route.pattern;
      matched_entry = match.entry;
    }
    out = dispatchMatched(match, req);
  } catch (const sdk::HttpError& e) {
    out = errorResponse(e, req.request_id);
  }

  RouteStats* stats = nullptr;
  if (rt_.metrics) {
    const RouteEntry* entry = matched_entry;
    stats = entry ? entry->stats.load(std::memory_order_acquire) : nullptr;
    if (!stats) {
      stats = &rt_.metrics->stats(metricMethod(req.method), route_name);
      if (entry) entry->stats.store(stats, std::memory_order_release);
    }
  }
  auto finish = [this, started, stats, method = head.method, path = req.path, rid = req.request_id,
                 client = req.client_address](int status) {
    double seconds = std::chrono::duration<double>(Clock::now() - started).count();
    if (stats) stats->observe(status, seconds);
    if (rt_.access_log) rt_.access_log->record(method, path, status, seconds * 1000.0, rid, client);
  };

  if (out.on_hold) {
    if (rt_.hub && in.detach) {
      auto stream =
          rt_.hub->adopt(in.detach(), req.request_id, [finish, released = in.released](int status) {
            finish(status);
            if (released) released();
          });
      try {
        out.on_hold(stream);
      } catch (const std::exception& e) {
        if (rt_.error_log) rt_.error_log->error("request " + req.request_id + ": " + e.what());
        stream->respond(errorResponse(
            sdk::HttpError(500, "server_error", "The server failed to answer this request."),
            req.request_id));
      }
      served.held = true;
      return served;
    }
    out = errorResponse(sdk::HttpError(500, "server_error", "Held responses are unavailable."),
                        req.request_id);
  }
  out.headers.insert(out.headers.begin(), {"X-Request-Id", req.request_id});
  finish(out.status);
  return served;
}

}  // namespace svc::kernel
