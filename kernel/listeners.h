// The kernel's protocol listeners (sdk/listeners.h), for plugins that serve a TCP protocol of
// their own. Every listener the plugins open shares one epoll set and one pool of workers, as the
// HTTP listener's connections do: a worker takes a connection when its socket is ready, sends what
// its handler queued, reads what came and hands it to the handler, until the socket would block,
// then parks it again. One more thread accepts (listener_acceptor.h: refusing what is over the
// limits) and, once a second, asks the handlers of connections silent past their timeout whether
// to close them.
//
// A handler that answers later (from a thread of its own) wakes its connection; when the
// connection is parked waiting for its client, the answer is sent right there on the calling
// thread, which spares a worker's wake-up per answer; anything more is handed to a worker.
#pragma once

#include <svc/sdk/listeners.h>

#include <Poco/Logger.h>

#include <memory>

namespace svc::kernel {

class ListenerLoop : public sdk::Listeners {
 public:
  /// @param logger where failed connections are logged. The threads start with the first open().
  explicit ListenerLoop(Poco::Logger& logger);
  /// Every listener must have been destroyed before.
  ~ListenerLoop() override;
  ListenerLoop(const ListenerLoop&) = delete;
  ListenerLoop& operator=(const ListenerLoop&) = delete;

  std::unique_ptr<sdk::Listener> open(const sdk::ListenerOptions& options,
                                      sdk::ConnectionProtocol& protocol) override;

  class Impl;

 private:
  std::shared_ptr<Impl> impl_;
};

}  // namespace svc::kernel
