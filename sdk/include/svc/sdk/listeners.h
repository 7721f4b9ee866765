// Protocol listeners: a plugin that serves its own TCP protocol (SMTP, say) asks the kernel for a
// listener instead of running an accept loop and threads of its own. The kernel binds, accepts,
// enforces the connection limits and the timeout, reads and writes the non-blocking sockets from
// its event loop (connections wait in epoll, not in threads), and calls the plugin's protocol with
// what arrived; the plugin answers with bytes. A connection waiting for its client costs a socket
// and the plugin's per-connection state, never a thread.
//
// When: open a listener in start() and close it in stop() (the kernel's loop outlives every
// plugin object). Closing it stops accepting and closes its connections: what each had queued is
// sent as far as the socket takes it at once, then its handler's closed() is called and the
// handler destroyed, after any callback still running on it has returned.
//
// Threads: the callbacks of one connection never run at the same time, but they may run on any of
// the kernel's threads, and those of different connections run in parallel. A handler may hand
// slow work (storing a message) to a thread of its own and answer later through its Connection,
// whose methods every thread may call, for as long as it keeps the shared_ptr (after the
// connection has closed they do nothing).
//
// Flow of one connection: ConnectionProtocol::open() (queue a greeting with send()) → received()
// for each read, in order → closed() once, however it ended. The kernel reads no more from a
// client until everything queued for it has been sent (a client that does not read its answers is
// not read either), and reads nothing while the handler has paused reading. Lines, commands and
// their lengths are the protocol's business: received() gets the bytes as they come.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace svc::sdk {

/// One client connection, as its handler sees it. Every method may be called from any thread.
class Connection {
 public:
  virtual ~Connection();
  /// @return the client's IP address.
  virtual const std::string& peer() const = 0;
  /// Queues bytes to send, after everything queued before.
  virtual void send(std::string bytes) = 0;
  /// Closes the connection once everything queued has been sent; later send()s are dropped.
  virtual void close() = 0;
  /// Starts TLS (server side, with the listener's certificate) once everything queued so far has
  /// been sent; nothing is read meanwhile, and bytes queued after this call go out encrypted.
  /// ConnectionHandler::secured() says when it has started. Without a certificate it closes.
  virtual void startTls() = 0;
  /// Stops (true) or resumes (false) reading from the client, for a handler that has more
  /// waiting to be answered than it wants to hold. A client that hangs up is still noticed.
  virtual void pauseReading(bool paused) = 0;
  /// Sets how long the client may be silent from now on (and after each later read) before
  /// ConnectionHandler::timedOut() is called.
  virtual void setTimeout(std::chrono::seconds timeout) = 0;
  /// Asks the kernel to call ConnectionHandler::woken() soon, on its side of the connection (so
  /// in turn with the other callbacks). When the connection is idle that happens at once on the
  /// calling thread, which saves a thread switch: call it holding no lock woken() takes.
  virtual void wake() = 0;
};

/// The plugin's side of one connection; made by ConnectionProtocol::open().
class ConnectionHandler {
 public:
  virtual ~ConnectionHandler();
  /// Bytes the client sent (never empty), in order.
  virtual void received(Connection& connection, std::string_view bytes) = 0;
  /// Called after Connection::wake().
  virtual void woken(Connection& connection);
  /// TLS has started (after Connection::startTls()).
  virtual void secured(Connection& connection);
  /// The client has been silent longer than its timeout. @return true to close the connection
  /// (after sending, as far as the socket takes it at once, what was queued: a last word such
  /// as "421 timeout"); false to give it another timeout (the handler owes it an answer).
  virtual bool timedOut(Connection& connection);
  /// The connection is closed (by either side, a timeout or the listener's end); called once,
  /// last. Work still under way for it may go on; the Connection then ignores what it is told.
  virtual void closed();
};

/// The plugin's protocol: what a listener does with each connection.
class ConnectionProtocol {
 public:
  virtual ~ConnectionProtocol();
  /// A client connected: make its handler; queue a greeting with connection->send(). Keep the
  /// shared_ptr (a weak_ptr is enough for late answers) to talk to the connection from elsewhere.
  /// Throwing closes the connection.
  virtual std::unique_ptr<ConnectionHandler> open(
      const std::shared_ptr<Connection>& connection) = 0;
  /// Why a connection is refused before open().
  enum class Refusal { kTooManyConnections, kTooManyFromAddress };
  /// @return the bytes said to a refused client before it is closed (default: none).
  virtual std::string refused(Refusal why, const std::string& peer);
};

/// What a plugin asks for.
struct ListenerOptions {
  /// host:port to bind (port 0: any free port; Listener::port() says which).
  std::string listen;
  /// Connections at once (0: no limit); one more is refused.
  int max_connections = 1000;
  /// Connections from one client address, an IPv6 /64 counting as one (0: no limit).
  int max_connections_per_address = 20;
  /// Silence allowed from a client before timedOut() (Connection::setTimeout() changes it).
  std::chrono::seconds timeout{30};
  /// PEM certificate and key: both set, Connection::startTls() works.
  std::string tls_cert_file, tls_key_file;
};

/// What a listener has done, for the plugin's metrics; updated without a lock.
struct ListenerCounts {
  std::atomic<std::int64_t> open{0};        ///< connections open now
  std::atomic<std::uint64_t> accepted{0};   ///< connections taken since start
  std::atomic<std::uint64_t> refused{0};    ///< connections refused as too many
  std::atomic<std::uint64_t> timed_out{0};  ///< connections closed by timedOut()
};

/// A listening socket; destroying it closes it.
class Listener {
 public:
  virtual ~Listener();
  /// @return the port it is bound to.
  virtual unsigned short port() const = 0;
  /// @return its figures (valid for the life of this object, across close()).
  virtual const ListenerCounts& counts() const = 0;
  /// Stops accepting and closes its connections (see the file comment); once is enough.
  virtual void close() = 0;
};

/// The kernel's listeners, from PluginContext::listeners().
class Listeners {
 public:
  virtual ~Listeners();
  /// Binds options.listen and starts accepting; `protocol` must outlive the listener.
  /// @throws std::exception when the address cannot be bound or a TLS file cannot be read.
  virtual std::unique_ptr<Listener> open(const ListenerOptions& options,
                                         ConnectionProtocol& protocol) = 0;
};

}  // namespace svc::sdk
