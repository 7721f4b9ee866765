// Out-of-line destructors and the handlers' defaults (see listeners.h).
#include <svc/sdk/listeners.h>

namespace svc::sdk {

Connection::~Connection() = default;
ConnectionHandler::~ConnectionHandler() = default;
ConnectionProtocol::~ConnectionProtocol() = default;
Listener::~Listener() = default;
Listeners::~Listeners() = default;

void ConnectionHandler::woken(Connection&) {}
void ConnectionHandler::secured(Connection&) {}
bool ConnectionHandler::timedOut(Connection&) {
  return true;
}
void ConnectionHandler::closed() {}

std::string ConnectionProtocol::refused(Refusal, const std::string&) {
  return {};
}

}  // namespace svc::sdk
