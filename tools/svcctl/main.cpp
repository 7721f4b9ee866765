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

#include <algorithm>
#include <cstdio>
#include <iomanip>
#include <iostream>
#include <map>
#include <sstream>
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
         "  metrics                  the operator listener's Prometheus metrics\n"
         "  users add EMAIL --password-stdin [--name NAME]   add a local user\n"
         "  device approve USER_CODE --user EMAIL           approve a device login\n"
         "  device deny USER_CODE                           deny a device login\n"
         "  accounts plan ACCOUNT_ID active|none            set an account's plan\n";
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

// Posts to an operator route and prints the answer. @return the exit code.
int operatorPost(const Options& o, const std::string& path, Poco::JSON::Object& body) {
  if (o.admin_token.empty()) {
    return fail(
        "the operator token is needed: --admin-token, --admin-token-file or SVC_ADMIN_TOKEN");
  }
  std::ostringstream out;
  body.stringify(out);
  auto reply = svcctl::call(o.admin, "POST", path, o.admin_token, out.str());
  if (reply.status >= 300) return serverError(reply);
  std::cout << reply.body << "\n";
  return 0;
}

// Finds "--name VALUE" in args. @return VALUE, or "" when absent.
std::string option(const std::vector<std::string>& args, const std::string& name) {
  for (std::size_t i = 0; i + 1 < args.size(); ++i) {
    if (args[i] == name) return args[i + 1];
  }
  return "";
}

bool flag(const std::vector<std::string>& args, const std::string& name) {
  return std::find(args.begin(), args.end(), name) != args.end();
}

int users(const Options& o, const std::vector<std::string>& args) {
  if (args.size() < 3 || args[1] != "add")
    return fail("usage: svcctl users add EMAIL --password-stdin", 2);
  Poco::JSON::Object body;
  body.set("email", args[2]);
  if (!flag(args, "--password-stdin"))
    return fail("give the password on standard input: --password-stdin", 2);
  std::string password;
  std::getline(std::cin, password);
  body.set("password", password);
  std::string name = option(args, "--name");
  if (!name.empty()) body.set("name", name);
  return operatorPost(o, "/admin/auth/users/", body);
}

int device(const Options& o, const std::vector<std::string>& args) {
  if (args.size() < 3 || (args[1] != "approve" && args[1] != "deny")) {
    return fail("usage: svcctl device approve USER_CODE --user EMAIL | device deny USER_CODE", 2);
  }
  Poco::JSON::Object body;
  body.set("user_code", args[2]);
  if (args[1] == "approve") {
    std::string user = option(args, "--user");
    if (user.empty()) return fail("svcctl device approve needs --user EMAIL", 2);
    body.set("user", user);
  }
  return operatorPost(o, "/admin/auth/device/" + args[1] + "/", body);
}

int accounts(const Options& o, const std::vector<std::string>& args) {
  if (args.size() != 4 || args[1] != "plan")
    return fail("usage: svcctl accounts plan ACCOUNT_ID active|none", 2);
  Poco::JSON::Object body;
  body.set("plan", args[3]);
  return operatorPost(o, "/admin/auth/accounts/" + args[2] + "/plan/", body);
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
    if (command == "users") return users(o, rest);
    if (command == "device") return device(o, rest);
    if (command == "accounts") return accounts(o, rest);
    usage(std::cerr);
    return fail("unknown command '" + command + "'", 2);
  } catch (const std::exception& e) {
    return fail(e.what());
  }
}
