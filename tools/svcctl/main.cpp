// svcctl: the operator's and agent's command line for svcd.
//
// svcctl [--admin URL] [--admin-token TOKEN | --admin-token-file FILE] [--url URL] [--key KEY]
//        [--json] COMMAND ...
#include "client.h"

#include <Poco/Environment.h>
#include <Poco/File.h>
#include <Poco/FileStream.h>
#include <Poco/JSON/Array.h>
#include <Poco/JSON/Object.h>
#include <Poco/JSON/Parser.h>
#include <Poco/Path.h>
#include <Poco/Process.h>
#include <Poco/URI.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <future>
#include <iomanip>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace {

struct Options {
  std::string admin = Poco::Environment::get("SVC_ADMIN_URL", "http://127.0.0.1:8081");
  std::string admin_token = Poco::Environment::get("SVC_ADMIN_TOKEN", "");
  std::string url = Poco::Environment::get("SVC_URL", "http://127.0.0.1:8080");
  std::string key = Poco::Environment::get("SVC_KEY", "");
  std::string key_file = Poco::Environment::get("SVC_KEY_FILE", "");
  bool json = false;
};

// Where `svcctl login` keeps the management key: --key-file, SVC_KEY_FILE, else
// $XDG_CONFIG_HOME/svc/key (~/.config/svc/key).
std::string keyFile(const Options& o) {
  if (!o.key_file.empty()) return o.key_file;
  std::string config = Poco::Environment::get("XDG_CONFIG_HOME", "");
  if (config.empty()) config = Poco::Environment::get("HOME", "/root") + "/.config";
  return config + "/svc/key";
}

void usage(std::ostream& out) {
  out << "usage: svcctl [options] COMMAND\n\n"
         "options:\n"
         "  --admin URL              operator listener (SVC_ADMIN_URL; default "
         "http://127.0.0.1:8081)\n"
         "  --admin-token TOKEN      operator token (SVC_ADMIN_TOKEN)\n"
         "  --admin-token-file FILE  read the operator token from FILE (e.g. "
         "data.dir/admin.token)\n"
         "  --url URL                public API (SVC_URL; default http://127.0.0.1:8080)\n"
         "  --key KEY                API key (SVC_KEY; else the key file)\n"
         "  --key-file FILE          where login keeps the key (SVC_KEY_FILE; default\n"
         "                           ~/.config/svc/key)\n"
         "  --json                   print the server's JSON as it is\n\n"
         "commands:\n"
         "  plugins                  list loaded plugins: name, version, status, routes\n"
         "  health                   the API's health\n"
         "  metrics                  the operator listener's Prometheus metrics\n"
         "  users add EMAIL --password-stdin [--name NAME]   add a local user\n"
         "  device approve USER_CODE --user EMAIL           approve a device login\n"
         "  device deny USER_CODE                           deny a device login\n"
         "  accounts plan ACCOUNT_ID active|none            set an account's plan\n"
         "  login [--client-id NAME]  sign in by device login; writes the key file (0600)\n"
         "  keys list                 the account's keys\n"
         "  keys create [--label L] [--identity UUID]        create a key (shown once)\n"
         "  keys revoke KEY_ID        revoke a key\n"
         "  identities list           the account's identities and their addresses\n"
         "  identities create NAME [--email LOCAL_PART] [--domain DOMAIN]\n"
         "                            create an identity with its inbox\n"
         "  mail send [--identity UUID] --to ADDR[,ADDR] --subject S [--cc ADDR] [--bcc ADDR]\n"
         "            [--body TEXT] [--attach FILE]...   send (the body from stdin without "
         "--body)\n"
         "  mail inbox [--identity UUID] [--unread]      threads, newest first\n"
         "  mail read ID [--identity UUID]               a thread or a message in full (marks it "
         "read)\n";
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

// Writes the key readable only by its owner, whatever the umask or an older file's mode.
void writeSecret(const std::string& path, const std::string& secret) {
  Poco::File(Poco::Path(path).parent()).createDirectories();
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) throw std::runtime_error("cannot write " + path);
  const std::string line = secret + "\n";
  bool ok = ::fchmod(fd, 0600) == 0 &&
            ::write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size()) &&
            ::fsync(fd) == 0;
  ::close(fd);
  if (!ok) throw std::runtime_error("cannot write " + path);
}

// A QR code of the URL for a phone, when qrencode is installed (run without a shell).
void printQr(const std::string& url) {
  for (const std::string dir : {"/usr/bin/", "/usr/local/bin/", "/bin/"}) {
    if (!Poco::File(dir + "qrencode").exists()) continue;
    try {
      Poco::ProcessHandle h =
          Poco::Process::launch(dir + "qrencode", {"-t", "UTF8", "-m", "1", url});
      h.wait();
    } catch (const Poco::Exception&) {
    }
    return;
  }
}

// RFC 8628 from a terminal: show the code and URL, wait (long-polling) with a countdown, and keep
// the management key in the key file.
int login(const Options& o, const std::vector<std::string>& args) {
  std::string client_id = option(args, "--client-id");
  if (client_id.empty()) {
    char host[256] = {0};
    ::gethostname(host, sizeof host - 1);
    client_id = std::string("svcctl on ") + host;
  }
  Poco::JSON::Object start;
  start.set("client_id", client_id);
  std::ostringstream start_body;
  start.stringify(start_body);
  auto reply = svcctl::call(o.url, "POST", "/api/auth/device/", "", start_body.str());
  if (reply.status != 200) return serverError(reply);
  auto device = parseObject(reply.body);
  const std::string user_code = device->getValue<std::string>("user_code");
  const std::string complete = device->getValue<std::string>("verification_uri_complete");
  const int expires_in = device->getValue<int>("expires_in");
  std::cout << "To sign in, open this page and approve the code " << user_code << ":\n\n  "
            << complete << "\n\n(or open " << device->getValue<std::string>("verification_uri")
            << " and enter " << user_code << ")\n"
            << std::flush;
  printQr(complete);

  Poco::JSON::Object poll;
  poll.set("device_code", device->getValue<std::string>("device_code"));
  poll.set("wait", true);
  std::ostringstream poll_body;
  poll.stringify(poll_body);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(expires_in);
  const bool tty = ::isatty(STDERR_FILENO);
  svcctl::Reply answer;
  while (true) {
    auto pending = std::async(std::launch::async, [&] {
      return svcctl::call(o.url, "POST", "/api/auth/device/token/", "", poll_body.str());
    });
    while (pending.wait_for(std::chrono::seconds(1)) != std::future_status::ready) {
      if (!tty) continue;
      auto left = std::chrono::duration_cast<std::chrono::seconds>(deadline -
                                                                   std::chrono::steady_clock::now())
                      .count();
      if (left < 0) left = 0;
      std::fprintf(stderr, "\rWaiting for approval... %ld:%02ld left ",
                   static_cast<long>(left / 60), static_cast<long>(left % 60));
    }
    answer = pending.get();
    std::string error;
    try {
      error = parseObject(answer.body)->optValue<std::string>("error", "");
    } catch (...) {
    }
    if (answer.status == 400 && (error == "authorization_pending" || error == "slow_down")) {
      std::this_thread::sleep_for(std::chrono::seconds(1));
      continue;
    }
    if (tty) std::fprintf(stderr, "\r%40s\r", "");
    if (answer.status == 200) break;
    if (error == "access_denied") return fail("the code was denied");
    if (error == "expired_token") return fail("the code expired; run svcctl login again");
    return serverError(answer);
  }
  auto tokens = parseObject(answer.body);
  const std::string path = keyFile(o);
  writeSecret(path, tokens->getValue<std::string>("management_key"));
  auto user = tokens->getObject("user");
  std::cout << "Signed in as " << user->getValue<std::string>("email")
            << "; the management key is in " << path << " (readable only by you).\n";
  return 0;
}

std::string currentKey(const Options& o) {
  if (!o.key.empty()) return o.key;
  Poco::File file(keyFile(o));
  if (!file.exists()) {
    throw std::runtime_error("no key: give --key, set SVC_KEY, or run svcctl login");
  }
  Poco::FileInputStream in(file.path());
  std::string key;
  std::getline(in, key);
  return key;
}

int keys(const Options& o, const std::vector<std::string>& args) {
  const std::string sub = args.size() > 1 ? args[1] : "";
  if (sub == "list") {
    auto reply = svcctl::call(o.url, "GET", "/api/auth/keys/?limit=200", currentKey(o));
    if (reply.status != 200) return serverError(reply);
    if (o.json) {
      std::cout << reply.body << "\n";
      return 0;
    }
    auto list = parseObject(reply.body)->getArray("results");
    std::cout << std::left << std::setw(38) << "ID" << std::setw(12) << "KIND" << std::setw(22)
              << "PREFIX" << std::setw(29) << "LAST USED"
              << "LABEL\n";
    for (std::size_t i = 0; i < list->size(); ++i) {
      auto k = list->getObject(static_cast<unsigned>(i));
      std::cout << std::setw(38) << k->getValue<std::string>("id") << std::setw(12)
                << k->getValue<std::string>("kind") << std::setw(22)
                << k->getValue<std::string>("prefix") << std::setw(29)
                << k->optValue<std::string>("last_used_dt", "never")
                << k->getValue<std::string>("label") << "\n";
    }
    return 0;
  }
  if (sub == "create") {
    Poco::JSON::Object body;
    body.set("label", option(args, "--label"));
    std::string identity = option(args, "--identity");
    if (!identity.empty()) body.set("identity", identity);
    std::ostringstream out;
    body.stringify(out);
    auto reply = svcctl::call(o.url, "POST",
                              identity.empty() ? "/api/auth/keys/" : "/api/auth/keys/identity/",
                              currentKey(o), out.str());
    if (reply.status != 201) return serverError(reply);
    if (o.json) {
      std::cout << reply.body << "\n";
    } else {
      std::cout << parseObject(reply.body)->getValue<std::string>("key") << "\n";
    }
    return 0;
  }
  if (sub == "revoke" && args.size() == 3) {
    auto reply = svcctl::call(o.url, "DELETE", "/api/auth/keys/" + args[2] + "/", currentKey(o));
    if (reply.status != 204) return serverError(reply);
    return 0;
  }
  return fail(
      "usage: svcctl keys list | keys create [--label L] [--identity UUID] | keys revoke ID", 2);
}

// Every value of a repeatable option.
std::vector<std::string> options(const std::vector<std::string>& args, const std::string& name) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i + 1 < args.size(); ++i) {
    if (args[i] == name) out.push_back(args[i + 1]);
  }
  return out;
}

// `?identity=UUID` when given (an identity key needs none).
std::string identityQuery(const std::vector<std::string>& args, char sep = '?') {
  std::string identity = option(args, "--identity");
  return identity.empty() ? "" : std::string(1, sep) + "identity=" + identity;
}

Poco::JSON::Array::Ptr splitAddresses(const std::vector<std::string>& values) {
  Poco::JSON::Array::Ptr out = new Poco::JSON::Array;
  for (const auto& v : values) {
    std::stringstream ss(v);
    std::string item;
    while (std::getline(ss, item, ',')) {
      if (!item.empty()) out->add(item);
    }
  }
  return out;
}

std::string stringify(const Poco::JSON::Object& o) {
  std::ostringstream out;
  o.stringify(out);
  return out.str();
}

int identities(const Options& o, const std::vector<std::string>& args) {
  const std::string sub = args.size() > 1 ? args[1] : "";
  if (sub == "list") {
    auto reply = svcctl::call(o.url, "GET", "/api/identities/?limit=200", currentKey(o));
    if (reply.status != 200) return serverError(reply);
    if (o.json) {
      std::cout << reply.body << "\n";
      return 0;
    }
    auto list = parseObject(reply.body)->getArray("results");
    std::cout << std::left << std::setw(38) << "UUID" << std::setw(40) << "EMAIL"
              << "NAME\n";
    for (std::size_t i = 0; i < list->size(); ++i) {
      auto id = list->getObject(static_cast<unsigned>(i));
      auto email = id->getObject("email");
      std::cout << std::setw(38) << id->getValue<std::string>("uuid") << std::setw(40)
                << (email ? email->getValue<std::string>("address") : "-")
                << id->getValue<std::string>("name") << "\n";
    }
    return 0;
  }
  if (sub == "create" && args.size() >= 3 && args[2].rfind("--", 0) != 0) {
    Poco::JSON::Object body;
    body.set("name", args[2]);
    if (auto e = option(args, "--email"); !e.empty()) body.set("email_identifier", e);
    if (auto d = option(args, "--domain"); !d.empty()) body.set("domain", d);
    auto reply = svcctl::call(o.url, "POST", "/api/identities/", currentKey(o), stringify(body));
    if (reply.status != 201) return serverError(reply);
    if (o.json) {
      std::cout << reply.body << "\n";
      return 0;
    }
    auto id = parseObject(reply.body);
    auto email = id->getObject("email");
    std::cout << id->getValue<std::string>("uuid") << " "
              << (email ? email->getValue<std::string>("address") : "-") << "\n";
    return 0;
  }
  return fail(
      "usage: svcctl identities list | identities create NAME [--email LOCAL_PART] "
      "[--domain DOMAIN]",
      2);
}

int mailSend(const Options& o, const std::vector<std::string>& args) {
  auto to = splitAddresses(options(args, "--to"));
  if (to->size() == 0 || !flag(args, "--subject")) {
    return fail(
        "usage: svcctl mail send [--identity UUID] --to ADDR[,ADDR] --subject S "
        "[--cc ADDR] [--bcc ADDR] [--body TEXT] [--attach FILE]...",
        2);
  }
  std::string content = option(args, "--body");
  if (!flag(args, "--body")) {
    std::ostringstream in;
    in << std::cin.rdbuf();
    content = in.str();
  }
  const std::string key = currentKey(o);
  Poco::JSON::Array::Ptr attachments = new Poco::JSON::Array;
  for (const auto& path : options(args, "--attach")) {
    Poco::FileInputStream in(path);
    std::ostringstream bytes;
    bytes << in.rdbuf();
    std::string name = Poco::Path(path).getFileName();
    std::string encoded;
    Poco::URI::encode(name, "&=?#+/", encoded);
    auto reply = svcctl::call(
        o.url, "POST", "/api/email-attachments/?filename=" + encoded + identityQuery(args, '&'),
        key, bytes.str(), "application/octet-stream");
    if (reply.status != 201) return serverError(reply);
    attachments->add(parseObject(reply.body)->getValue<std::string>("uuid"));
  }
  Poco::JSON::Object body;
  body.set("to_email", to);
  body.set("subject", option(args, "--subject"));
  body.set("content", content);
  if (auto cc = splitAddresses(options(args, "--cc")); cc->size() > 0) body.set("cc", cc);
  if (auto bcc = splitAddresses(options(args, "--bcc")); bcc->size() > 0) body.set("bcc", bcc);
  if (attachments->size() > 0) body.set("attachment_uuids", attachments);
  auto reply = svcctl::call(o.url, "POST", "/api/email-messages/compose/" + identityQuery(args),
                            key, stringify(body));
  if (reply.status != 201) return serverError(reply);
  if (o.json) {
    std::cout << reply.body << "\n";
    return 0;
  }
  auto m = parseObject(reply.body);
  std::cout << m->getValue<std::string>("id") << " " << m->getValue<std::string>("status") << "\n";
  return 0;
}

int mailInbox(const Options& o, const std::vector<std::string>& args) {
  std::string query = "?limit=200" + identityQuery(args, '&');
  if (flag(args, "--unread")) query += "&has_unread=true";
  auto reply = svcctl::call(o.url, "GET", "/api/email-inbox/" + query, currentKey(o));
  if (reply.status != 200) return serverError(reply);
  if (o.json) {
    std::cout << reply.body << "\n";
    return 0;
  }
  auto list = parseObject(reply.body)->getArray("results");
  std::cout << std::left << std::setw(38) << "THREAD" << std::setw(21) << "LATEST" << std::setw(9)
            << "UNREAD" << std::setw(30) << "WITH"
            << "SUBJECT\n";
  for (std::size_t i = 0; i < list->size(); ++i) {
    auto t = list->getObject(static_cast<unsigned>(i));
    auto people = t->getArray("participants");
    std::string with = people->size() > 0 ? people->getElement<std::string>(0) : "";
    if (people->size() > 1) with += " +" + std::to_string(people->size() - 1);
    std::cout << std::setw(38) << t->getValue<std::string>("thread_id") << std::setw(21)
              << t->getValue<std::string>("latest_dt").substr(0, 19) << std::setw(9)
              << (std::to_string(t->getValue<int>("unread_count")) + "/" +
                  std::to_string(t->getValue<int>("message_count")))
              << std::setw(30) << with << t->getValue<std::string>("subject") << "\n";
  }
  return 0;
}

void printMessage(const Poco::JSON::Object::Ptr& m) {
  auto join = [](const Poco::JSON::Array::Ptr& a) {
    std::string out;
    for (std::size_t i = 0; a && i < a->size(); ++i) {
      out += (i ? ", " : "") + a->getElement<std::string>(static_cast<unsigned>(i));
    }
    return out;
  };
  std::cout << "Message: " << m->getValue<std::string>("id") << "\n"
            << "Date:    " << m->getValue<std::string>("created_dt") << "\n"
            << "From:    " << m->getValue<std::string>("from_email") << "\n"
            << "To:      " << join(m->getArray("to_email")) << "\n";
  if (m->getArray("cc")->size() > 0) std::cout << "Cc:      " << join(m->getArray("cc")) << "\n";
  std::cout << "Subject: " << m->getValue<std::string>("subject") << "\n";
  auto attachments = m->getArray("attachments");
  for (std::size_t i = 0; attachments && i < attachments->size(); ++i) {
    auto a = attachments->getObject(static_cast<unsigned>(i));
    std::cout << "Attached: " << a->getValue<std::string>("filename") << " ("
              << a->getValue<long>("size") << " bytes, " << a->getValue<std::string>("uuid")
              << ")\n";
  }
  std::cout << "\n" << m->getValue<std::string>("content") << "\n";
}

int mailRead(const Options& o, const std::vector<std::string>& args) {
  if (args.size() < 3) return fail("usage: svcctl mail read ID [--identity UUID]", 2);
  const std::string key = currentKey(o);
  const std::string id = args[2];
  std::vector<Poco::JSON::Object::Ptr> messages;
  auto reply =
      svcctl::call(o.url, "GET", "/api/email-messages/" + id + "/" + identityQuery(args), key);
  std::string raw = reply.body;
  if (reply.status == 200) {
    messages.push_back(parseObject(reply.body));
  } else if (reply.status == 404) {  // not a message: a thread?
    reply = svcctl::call(o.url, "GET", "/api/email-inbox/" + id + "/" + identityQuery(args), key);
    if (reply.status != 200) return serverError(reply);
    raw = reply.body;
    auto list = parseObject(reply.body)->getArray("messages");
    for (std::size_t i = 0; i < list->size(); ++i) {
      messages.push_back(list->getObject(static_cast<unsigned>(i)));
    }
  } else {
    return serverError(reply);
  }
  if (o.json) {
    std::cout << raw << "\n";
  } else {
    for (std::size_t i = 0; i < messages.size(); ++i) {
      if (i) std::cout << "\n" << std::string(72, '-') << "\n";
      printMessage(messages[i]);
    }
  }
  // Read, as a mail client would mark it.
  for (const auto& m : messages) {
    if (m->getValue<bool>("is_read")) continue;
    svcctl::call(
        o.url, "PATCH",
        "/api/email-messages/" + m->getValue<std::string>("id") + "/" + identityQuery(args), key,
        R"({"is_read":true})");
  }
  return 0;
}

int mail(const Options& o, const std::vector<std::string>& args) {
  const std::string sub = args.size() > 1 ? args[1] : "";
  if (sub == "send") return mailSend(o, args);
  if (sub == "inbox") return mailInbox(o, args);
  if (sub == "read") return mailRead(o, args);
  return fail(
      "usage: svcctl mail send ... | mail inbox [--identity UUID] [--unread] | mail read ID", 2);
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
      } else if (a == "--key-file") {
        o.key_file = value(a);
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
    if (command == "login") return login(o, rest);
    if (command == "keys") return keys(o, rest);
    if (command == "identities") return identities(o, rest);
    if (command == "mail") return mail(o, rest);
    usage(std::cerr);
    return fail("unknown command '" + command + "'", 2);
  } catch (const std::exception& e) {
    return fail(e.what());
  }
}
