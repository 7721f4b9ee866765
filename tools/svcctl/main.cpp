// svcctl: the operator's and agent's command line for svcd.
//
// svcctl [--admin URL] [--admin-token TOKEN | --admin-token-file FILE] [--url URL] [--key KEY]
//        [--json] COMMAND ...
#include "client.h"

#include <Poco/Environment.h>
#include <Poco/FileStream.h>
#include <Poco/JSON/Array.h>
#include <Poco/JSON/Object.h>
#include <Poco/JSON/Parser.h>

#include <cstdio>
#include <iomanip>
#include <iostream>
#include <map>
#include <string>
#include <vector>

namespace {

struct Options {
  std::string admin = Poco::Environment::get("SVC_ADMIN_URL", "http://127.0.0.1:8081");
  std::string admin_token = Poco::Environment::get("SVC_ADMIN_TOKEN", "");
  std::string url = Poco::Environment::get("SVC_URL", "http://127.0.0.1:8080");
  std::string key = Poco::Environment::get("SVC_KEY", "");
  bool json = false;
};

void usage(std::ostream& out) {
  out << "usage: svcctl [options] COMMAND\n\n"
         "options:\n"
         "  --admin URL              operator listener (SVC_ADMIN_URL; default "
         "http://127.0.0.1:8081)\n"
         "  --admin-token TOKEN      operator token (SVC_ADMIN_TOKEN)\n"
         "  --admin-token-file FILE  read the operator token from FILE (e.g. "
         "data.dir/admin.token)\n"
         "  --url URL                public API (SVC_URL; default http://127.0.0.1:8080)\n"
         "  --key KEY                API key (SVC_KEY)\n"
         "  --json                   print the server's JSON as it is\n\n"
         "commands:\n"
         "  plugins                  list loaded plugins: name, version, status, routes\n"
         "  health                   the API's health\n"
         "  metrics                  the operator listener's Prometheus metrics\n";
}

int fail(const std::string& message, int code = 1) {
  std::cerr << "svcctl: " << message << "\n";
  return code;
}

// Prints an error reply in the contract's shape.
int serverError(const svcctl::Reply& reply) {
  try {
    auto obj = Poco::JSON::Parser().parse(reply.body).extract<Poco::JSON::Object::Ptr>();
    return fail(std::to_string(reply.status) + " " + obj->optValue<std::string>("code", "") + ": " +
                obj->optValue<std::string>("detail", ""));
  } catch (...) {
    return fail("HTTP " + std::to_string(reply.status) + ": " + reply.body);
  }
}

Poco::JSON::Object::Ptr parseObject(const std::string& body) {
  return Poco::JSON::Parser().parse(body).extract<Poco::JSON::Object::Ptr>();
}

int plugins(const Options& o) {
  if (o.admin_token.empty()) {
    return fail(
        "the operator token is needed: --admin-token, --admin-token-file or SVC_ADMIN_TOKEN");
  }
  auto reply = svcctl::call(o.admin, "GET", "/admin/plugins", o.admin_token);
  if (reply.status != 200) return serverError(reply);
  if (o.json) {
    std::cout << reply.body << "\n";
    return 0;
  }
  auto list = parseObject(reply.body)->getArray("plugins");
  std::cout << std::left << std::setw(16) << "NAME" << std::setw(10) << "VERSION" << std::setw(12)
            << "STATUS"
            << "ROUTES\n";
  for (std::size_t i = 0; i < list->size(); ++i) {
    auto p = list->getObject(static_cast<unsigned>(i));
    auto routes = p->getArray("routes");
    std::cout << std::setw(16) << p->getValue<std::string>("name") << std::setw(10)
              << p->getValue<std::string>("version") << std::setw(12)
              << p->getValue<std::string>("status") << routes->size() << "\n";
    for (std::size_t r = 0; r < routes->size(); ++r) {
      std::cout << "    " << routes->getElement<std::string>(static_cast<unsigned>(r)) << "\n";
    }
  }
  return 0;
}

int health(const Options& o) {
  auto reply = svcctl::call(o.url, "GET", "/api/health/", "");
  std::cout << reply.body << "\n";
  return reply.status == 200 ? 0 : 1;
}

int metrics(const Options& o) {
  auto reply = svcctl::call(o.admin, "GET", "/metrics", o.admin_token);
  if (reply.status != 200) return serverError(reply);
  std::cout << reply.body;
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  std::vector<std::string> rest;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&](const std::string& name) -> std::string {
      if (i + 1 >= argc) throw std::runtime_error(name + " needs a value");
      return argv[++i];
    };
    try {
      if (a == "--admin") {
        o.admin = value(a);
      } else if (a == "--admin-token") {
        o.admin_token = value(a);
      } else if (a == "--admin-token-file") {
        Poco::FileInputStream in(value(a));
        std::getline(in, o.admin_token);
      } else if (a == "--url") {
        o.url = value(a);
      } else if (a == "--key") {
        o.key = value(a);
      } else if (a == "--json") {
        o.json = true;
      } else if (a == "--help" || a == "-h") {
        usage(std::cout);
        return 0;
      } else {
        rest.push_back(a);
      }
    } catch (const std::exception& e) {
      return fail(e.what(), 2);
    }
  }
  if (rest.empty()) {
    usage(std::cerr);
    return 2;
  }
  try {
    const std::string& command = rest[0];
    if (command == "plugins") return plugins(o);
    if (command == "health") return health(o);
    if (command == "metrics") return metrics(o);
    usage(std::cerr);
    return fail("unknown command '" + command + "'", 2);
  } catch (const std::exception& e) {
    return fail(e.what());
  }
}
