// The HTTP pipeline: one request in, one response out, in the contract's shape.
//
// Order: request id → route match (404/405/400 bad path) → header checks → body (413, 408, 415,
// 400 malformed JSON / invalid UTF-8) → authentication hook (401/403) → identity resolution
// (400/403/404) → handler (HttpError, or 500 with the request id) → response → access log and
// metrics. Handlers that hold their response are handed to the StreamHub.
#pragma once

#include "http_framing.h"
#include "runtime.h"

#include <svc/sdk/http.h>

#include <Poco/Net/StreamSocket.h>

#include <functional>
#include <string>

namespace svc::kernel {

/// The JSON error body for an HttpError. @param e the error. @param request_id added for 500s.
std::string errorBody(const sdk::HttpError& e, const std::string& request_id);
/// @return the error as a complete Response (headers included).
sdk::Response errorResponse(const sdk::HttpError& e, const std::string& request_id);
/// @param client the client's X-Request-Id or empty. @return it when it is a short safe token,
/// else a new UUID.
std::string chooseRequestId(const std::string& client);

/// Reads a request target (`/path?query`) and the content type from req.headers into req; HEAD
/// becomes GET. @throws sdk::HttpError 400 for a target that is not an absolute path or a
/// malformed query.
void readTarget(const std::string& target, sdk::Request& req);

/// A request as its connection read it: the head and the whole body.
struct IncomingRequest {
  const http::RequestHead& head;
  std::string body;
  std::string client_address;
  /// Gives up the connection's socket, for a held response.
  std::function<Poco::Net::StreamSocket()> detach;
  /// Called once a held connection has closed (the listener counts it until then).
  std::function<void()> released;
};

/// What became of a request: an answer to write, or a connection the hub now holds.
struct Served {
  sdk::Response response;  ///< with X-Request-Id among its headers
  bool held = false;
};

class Pipeline {
 public:
  explicit Pipeline(Runtime& runtime) : rt_(runtime) {}
  /// Serves one request; never throws.
  Served serve(IncomingRequest& request);
  /// @return the largest body the route a head names accepts (the server's limit by default).
  std::size_t bodyLimit(const http::RequestHead& head) const;
  /// A request refused before it reached a route (framing, size, time), counted and logged.
  /// @return the error answer with a new request id.
  sdk::Response refusal(int status, const std::string& code, const std::string& detail,
                        const std::string& client_address);
  /// Runs a parsed request through matching, auth and the handler (no socket involved): the
  /// in-process round trip that the benchmarks and unit tests drive.
  /// @param req the request; method, path, query, headers, body and content_type filled in.
  /// @param route_out the matched route pattern, for logs and metrics.
  /// @return the response, or the error it became.
  sdk::Response dispatch(sdk::Request& req, std::string& route_out);
  /// Runs a request made in-process on a client's behalf (an MCP tool call) as serve() runs one
  /// from a socket: its body held to the route's limit (413), then dispatch(), and recorded in
  /// the access log and metrics under its own route when answered.
  /// @param record set to what records the answer: called here unless the answer is held, else
  /// the caller calls it with the held answer's status.
  sdk::Response dispatchInner(sdk::Request& req, std::function<void(int status)>& record);

 private:
  sdk::Response dispatchMatched(const RouteMatch& match, sdk::Request& req);
  void authenticate(const RouteEntry& entry, sdk::Request& req);
  void parseBody(const RouteEntry& entry, sdk::Request& req);
  /// Checks the query and body against the route's declared shapes: 400 naming every problem.
  void checkShapes(const RouteEntry& entry, const sdk::Request& req);
  Runtime& rt_;
};

}  // namespace svc::kernel
