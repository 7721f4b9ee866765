#include "client.h"

#include <Poco/Net/HTTPClientSession.h>
#include <Poco/Net/HTTPRequest.h>
#include <Poco/Net/HTTPResponse.h>
#include <Poco/Net/HTTPSClientSession.h>
#include <Poco/StreamCopier.h>
#include <Poco/URI.h>

#include <memory>
#include <stdexcept>

namespace svcctl {

Reply call(const std::string& base, const std::string& method, const std::string& path,
           const std::string& token, const std::string& body, const std::string& content_type) {
  Poco::URI uri(base);
  std::unique_ptr<Poco::Net::HTTPClientSession> session;
  if (uri.getScheme() == "https") {
    session = std::make_unique<Poco::Net::HTTPSClientSession>(uri.getHost(), uri.getPort());
  } else {
    session = std::make_unique<Poco::Net::HTTPClientSession>(uri.getHost(), uri.getPort());
  }
  session->setTimeout(Poco::Timespan(150, 0));
  Poco::Net::HTTPRequest request(method, path, Poco::Net::HTTPMessage::HTTP_1_1);
  if (!token.empty()) request.set("Authorization", "Bearer " + token);
  if (!body.empty()) {
    request.setContentType(content_type);
    request.setContentLength(static_cast<std::streamsize>(body.size()));
  }
  Reply reply;
  try {
    std::ostream& out = session->sendRequest(request);
    out << body;
    Poco::Net::HTTPResponse response;
    std::istream& in = session->receiveResponse(response);
    Poco::StreamCopier::copyToString(in, reply.body);
    reply.status = response.getStatus();
    reply.content_type = response.getContentType();
  } catch (const Poco::Exception& e) {
    throw std::runtime_error("cannot reach " + base + ": " + e.displayText());
  }
  return reply;
}

}  // namespace svcctl
