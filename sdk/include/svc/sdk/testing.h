// The test kit for plugin writers (link SvcSdk::testing): run a plugin in the kernel's own
// request pipeline, in process, over a private SQLite database, and call its routes without
// sockets.
//
//   svc::sdk::testing::PluginHarness harness({{{"hello.greeting", "Howdy"}}});
//   harness.load("build/svc_plugin_hello.so");        // the real handshake, as svcd does it
//   harness.start();                                   // configure → migrate → register → start
//   auto answer = harness.call(RequestBuilder::get("/api/hello/?name=agent"));
//   EXPECT_EQ(answer.status, 200);
//   EXPECT_EQ(answer.json()->getValue<std::string>("message"), "Howdy, agent!");
//
// What is real: configuration layers and scoping (a plugin sees only what svcd would show it),
// the ABI handshake (load()), dependency order, migrations, route matching, body rules and the
// contract's error shape, the authentication hook and identity resolution, the service registry
// with its declarations, the durable event log and plugin metrics. What is stubbed: credentials.
// Unless HarnessOptions says otherwise the harness offers an Authenticator that accepts the
// principal a request names with RequestBuilder::as(), and an IdentityDirectory holding the
// identities given to addIdentity(), each only when no plugin under test declares that it offers
// the service itself: with the auth plugin, requests carry the credentials auth issues; with the
// identities plugin, identities are created through its routes. Each harness has its own
// temporary directory (data.dir and the database file), removed when it is destroyed.
#pragma once

#include <svc/sdk/plugin.h>

#include <Poco/JSON/Object.h>

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace svc::sdk::testing {

/// An answer as the kernel gave it.
struct TestResponse {
  int status = 0;                                            ///< HTTP status.
  std::string content_type;                                  ///< Content-Type.
  std::string body;                                          ///< The body bytes.
  std::vector<std::pair<std::string, std::string>> headers;  ///< Headers the kernel set.
  /// @param name a header name, any case. @return its value, or nullopt.
  std::optional<std::string> header(const std::string& name) const;
  /// @return the body as a JSON object. @throws std::runtime_error quoting the body otherwise.
  Poco::JSON::Object::Ptr json() const;
  /// @return the error body's `code`, or empty when the body has none.
  std::string code() const;
};

/// A request to call a route with.
class RequestBuilder {
 public:
  /// @param method GET, POST, ... @param target the path with its query (`/api/x/?a=1`).
  RequestBuilder(std::string method, std::string target);
  static RequestBuilder get(std::string target) { return {"GET", std::move(target)}; }
  static RequestBuilder post(std::string target) { return {"POST", std::move(target)}; }
  static RequestBuilder put(std::string target) { return {"PUT", std::move(target)}; }
  static RequestBuilder patch(std::string target) { return {"PATCH", std::move(target)}; }
  static RequestBuilder del(std::string target) { return {"DELETE", std::move(target)}; }

  /// Sets a header (the name is case-insensitive). @return *this.
  RequestBuilder& header(const std::string& name, std::string value);
  /// A JSON body. @param body the object. @return *this.
  RequestBuilder& json(const Poco::JSON::Object::Ptr& body);
  /// A JSON body given as text (which need not be valid: tests of bad input). @return *this.
  RequestBuilder& json(std::string text);
  /// Any body. @param bytes the body. @param content_type its type. @return *this.
  RequestBuilder& body(std::string bytes, std::string content_type);
  /// Calls as this principal: the harness's stub Authenticator accepts it (call() refuses a
  /// request naming one when a plugin under test offers the Authenticator; send its credential
  /// with header()). @return *this.
  RequestBuilder& as(const Principal& principal);
  /// Names the identity the request targets (the X-Svc-Identity header). @return *this.
  RequestBuilder& identity(std::string uuid);
  /// The client's address (default 127.0.0.1). @return *this.
  RequestBuilder& from(std::string client_address);
  /// How long call() waits for a held response to be answered (default 5 s). @return *this.
  RequestBuilder& waitAtMost(std::chrono::milliseconds wait);

 private:
  friend class PluginHarness;
  std::string method_, target_, body_, client_address_ = "127.0.0.1";
  std::map<std::string, std::string> headers_;
  std::optional<Principal> principal_;
  std::chrono::milliseconds wait_{5000};
};

/// @return a management key's principal for account (the whole account).
Principal managementPrincipal(const std::string& account);
/// @return an identity key's principal, bound to identity of account.
Principal identityPrincipal(const std::string& account, const std::string& identity);
/// @return a signed-in user's principal of account.
Principal userPrincipal(const std::string& account, const std::string& user = "user-1");

/// The events the plugins published, as subscribers see them: committed, in sequence order.
class EventRecorder {
 public:
  virtual ~EventRecorder();
  /// @return every event delivered so far.
  virtual std::vector<Event> all() const = 0;
  /// @param type an event type. @return the events of that type delivered so far.
  virtual std::vector<Event> ofType(const std::string& type) const = 0;
  /// Waits for the next event of type not yet taken by waitFor (events are delivered on the
  /// kernel's event thread, just after the change commits).
  /// @return it, or nullopt when none arrives within timeout.
  virtual std::optional<Event> waitFor(const std::string& type,
                                       std::chrono::milliseconds timeout) = 0;
  /// Forgets what was recorded.
  virtual void clear() = 0;
};

/// Settings for a harness.
struct HarnessOptions {
  /// Configuration, as `--set key=value` would give it (over the plugins' declared defaults).
  std::map<std::string, std::string> config;
  /// Offer the stub Authenticator and IdentityDirectory where no plugin under test offers them.
  bool stub_credentials = true;
};

/// A kernel in a box for one test.
class PluginHarness {
 public:
  explicit PluginHarness(HarnessOptions options = {});
  ~PluginHarness();
  PluginHarness(const PluginHarness&) = delete;
  PluginHarness& operator=(const PluginHarness&) = delete;

  /// Loads a plugin library with svcd's handshake (before start()).
  /// @throws std::runtime_error with svcd's message when it cannot be used.
  PluginHarness& load(const std::string& library_path);
  /// Adds a plugin object linked into the test (before start()).
  PluginHarness& add(std::unique_ptr<Plugin> plugin);
  /// Offers a service on behalf of the test (before start()), for plugins that use one no
  /// plugin under test offers.
  template <typename T, typename Impl>
  PluginHarness& stub(const ServiceKey<T>& key, std::shared_ptr<Impl> service) {
    stubs().offer(key, std::move(service));
    return *this;
  }
  /// Adds an identity the stub IdentityDirectory knows. @param account its account.
  /// @param uuid its id. @param name its display name.
  void addIdentity(const std::string& account, const std::string& uuid, const std::string& name);
  /// Configures, migrates, registers and starts every plugin, in dependency order.
  /// @throws std::runtime_error with svcd's message naming the plugin that refused.
  void start();
  /// Stops the plugins (also done by the destructor).
  void stop();

  /// Serves one request through the kernel's pipeline, as the API listener would. A held
  /// response (long-poll, stream) is waited for: see RequestBuilder::waitAtMost. May be called
  /// from several threads at once (a test that answers a held request from another thread).
  /// @throws std::logic_error when the request names a principal and the stub Authenticator is
  /// not offered.
  TestResponse call(const RequestBuilder& request);
  /// Serves one request on the operator listener's routes, with the operator's token.
  TestResponse callOperator(const RequestBuilder& request);

  /// @return the configuration plugin sees (scoped exactly as svcd scopes it).
  const Poco::Util::AbstractConfiguration& configOf(const std::string& plugin) const;
  /// @return what the plugins published.
  EventRecorder& events();
  /// @return the database (for arranging and checking rows).
  Database& database();
  /// @return the service registry, for finding what the plugins offer (after start()).
  ServiceRegistry& services();
  /// @return the Prometheus text of the plugins' metrics (and the kernel's).
  std::string metrics() const;
  /// @return the harness's data.dir (each plugin's own directory is `<data.dir>/<name>/`).
  std::string dataDir() const;

 private:
  ServiceRegistry& stubs();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace svc::sdk::testing
