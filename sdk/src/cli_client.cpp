// svcctl's way to svcd: the HTTP client, the key file, and printing resources (cli.h).
#include <svc/sdk/cli.h>

#include <Poco/Environment.h>
#include <Poco/File.h>
#include <Poco/FileStream.h>
#include <Poco/JSON/Parser.h>
#include <Poco/Net/HTTPClientSession.h>
#include <Poco/Net/HTTPRequest.h>
#include <Poco/Net/HTTPResponse.h>
#include <Poco/Net/HTTPSClientSession.h>
#include <Poco/Path.h>
#include <Poco/StreamCopier.h>
#include <Poco/URI.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <iostream>
#include <memory>

namespace svc::sdk {

Poco::JSON::Object::Ptr CliReply::json() const {
  try {
    auto object = Poco::JSON::Parser().parse(body).extract<Poco::JSON::Object::Ptr>();
    if (object) return object;
  } catch (const Poco::Exception&) {  // not JSON, or not an object
  }
  throw CliError("HTTP " + std::to_string(status) + ": not a JSON object: " + body.substr(0, 200),
                 1, "unexpected_response");
}

CliReply cliHttpCall(const std::string& base, const std::string& method, const std::string& path,
                     const std::string& token, const std::string& body,
                     const std::string& content_type, const CliHeaders& headers) {
  CliReply reply;
  try {
    Poco::URI uri(base);
    std::unique_ptr<Poco::Net::HTTPClientSession> session;
    if (uri.getScheme() == "https") {
      session = std::make_unique<Poco::Net::HTTPSClientSession>(uri.getHost(), uri.getPort());
    } else {
      session = std::make_unique<Poco::Net::HTTPClientSession>(uri.getHost(), uri.getPort());
    }
    // Long enough for the device login's long-poll.
    session->setTimeout(Poco::Timespan(150, 0));
    Poco::Net::HTTPRequest request(method, path, Poco::Net::HTTPMessage::HTTP_1_1);
    if (!token.empty()) request.set("Authorization", "Bearer " + token);
    for (const auto& [name, value] : headers) request.set(name, value);
    if (!body.empty()) {
      request.setContentType(content_type);
      request.setContentLength(static_cast<std::streamsize>(body.size()));
    }
    std::ostream& out = session->sendRequest(request);
    out << body;
    Poco::Net::HTTPResponse response;
    std::istream& in = session->receiveResponse(response);
    Poco::StreamCopier::copyToString(in, reply.body);
    reply.status = response.getStatus();
    reply.content_type = response.getContentType();
  } catch (const Poco::Exception& e) {
    throw CliError("cannot reach " + base + ": " + e.displayText(), 1, "unreachable");
  }
  return reply;
}

CliContext::CliContext(CliOptions options, std::ostream& out, std::ostream& err, std::istream& in)
    : options_(std::move(options)), out_(out), err_(err), in_(in) {}

CliReply CliContext::api(const std::string& method, const std::string& path,
                         const std::string& body, const std::string& content_type,
                         const CliHeaders& headers) const {
  return cliHttpCall(options_.url, method, path, key(), body, content_type, headers);
}

CliReply CliContext::anonymous(const std::string& method, const std::string& path,
                               const std::string& body) const {
  return cliHttpCall(options_.url, method, path, "", body);
}

CliReply CliContext::admin(const std::string& method, const std::string& path,
                           const std::string& body) const {
  if (options_.admin_token.empty()) {
    throw CliError(
        "the operator token is needed: --admin-token, --admin-token-file or SVC_ADMIN_TOKEN");
  }
  return cliHttpCall(options_.admin, method, path, options_.admin_token, body);
}

std::string CliContext::keyFile() const {
  if (!options_.key_file.empty()) return options_.key_file;
  std::string config = Poco::Environment::get("XDG_CONFIG_HOME", "");
  if (config.empty()) config = Poco::Environment::get("HOME", "/root") + "/.config";
  return config + "/svc/key";
}

std::string CliContext::key() const {
  if (!options_.key.empty()) return options_.key;
  Poco::File file(keyFile());
  if (!file.exists()) throw CliError("no key: give --key, set SVC_KEY, or run svcctl login");
  Poco::FileInputStream in(file.path());
  std::string key;
  std::getline(in, key);
  return key;
}

void CliContext::saveKey(const std::string& key) const {
  const std::string path = keyFile();
  Poco::File(Poco::Path(path).parent()).createDirectories();
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) throw CliError("cannot write " + path);
  const std::string line = key + "\n";
  bool ok = ::fchmod(fd, 0600) == 0 &&
            ::write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size()) &&
            ::fsync(fd) == 0;
  ::close(fd);
  if (!ok) throw CliError("cannot write " + path);
}

void CliContext::expect(const CliReply& reply, int status) {
  if (status == 0 ? reply.status >= 200 && reply.status < 300 : reply.status == status) return;
  try {
    auto error = Poco::JSON::Parser().parse(reply.body).extract<Poco::JSON::Object::Ptr>();
    if (error && error->has("code")) {
      throw CliError(std::to_string(reply.status) + " " + error->optValue<std::string>("code", "") +
                         ": " + error->optValue<std::string>("detail", ""),
                     1, error->optValue<std::string>("code", ""), reply.body);
    }
  } catch (const Poco::Exception&) {  // not JSON
  }
  // Not the contract's error shape (a 2xx other than the one expected, a proxy's page).
  throw CliError("HTTP " + std::to_string(reply.status) + ": " + reply.body.substr(0, 500), 1,
                 "unexpected_response");
}

void CliContext::print(const CliReply& reply,
                       const std::function<void(const Poco::JSON::Object&)>& human) const {
  if (json()) {
    out_ << reply.body << "\n";
  } else {
    human(*reply.json());
  }
}

}  // namespace svc::sdk
