// End-to-end encryption in svcctl against a real svcd (issue 18): `vault init` sealing what was
// stored before, `vault unlock` with a wrong and a right passphrase, passwords and secrets sealed
// and opened transparently (the server answering only `e2e::` values, its database holding no
// plaintext), `vault change-passphrase` cut off at its last call and then run again, and
// values sealed by node's libsodium (examples/e2e-node) opening in svcctl and the other way round.
//
// svcctl runs under `setsid`, without a controlling terminal: it can never wait on a prompt, and a
// command that needs the passphrase without being given it must say so. Each Argon2id run costs
// about half a second, so the tests derive a key only where a command must.
#include "harness.h"

#include <Poco/File.h>
#include <Poco/JSON/Array.h>
#include <Poco/JSON/Parser.h>

#include <gtest/gtest.h>

#include <svc/sdk/e2e_cli.h>
#include <svc/sdk/util.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <thread>
#include <vector>

namespace svc::testing {
namespace {

bool sealed(const std::string& value) {
  return value.rfind("e2e::", 0) == 0;
}

class SvcctlE2e : public ::testing::Test {
 protected:
  void SetUp() override {
    Svcd::Options o;
    o.plugins = {"auth", "identities", "vault", "passwords", "secrets"};
    svcd_ = std::make_unique<Svcd>(o);
    ASSERT_TRUE(svcd_->start()) << svcd_->log();
    key_ = operatorLogin(*svcd_, "e2e@example.com")->optValue<std::string>("management_key", "");
    ASSERT_FALSE(key_.empty());
    auto r = call("POST", "/api/identities/", R"({"name":"Ann"})");
    ASSERT_EQ(r.status, 201) << r.body;
    ann_ = r.json()->getValue<std::string>("uuid");
    right_ = file("right", "correct horse battery staple\n");
    wrong_ = file("wrong", "correct horse battery stapler\n");
    next_ = file("next", "a whole new passphrase\n");
  }

  HttpReply call(const std::string& method, const std::string& path, const std::string& body = "") {
    return http(svcd_->port(), method, path, body, bearer(key_));
  }
  // A file beside svcd's data directory holding `text`. @return its path.
  std::string file(const std::string& name, const std::string& text) {
    const std::string path = svcd_->dataDir() + "/../" + name + ".txt";
    std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
    return path;
  }
  std::string svcctl() const {
    return "'" + binDir() + "/svcctl' --url http://127.0.0.1:" + std::to_string(svcd_->port()) +
           " --key " + key_ + " ";
  }
  // Runs svcctl ARGS with `input` on stdin, no terminal and no passphrase from the environment
  // unless `env` sets it. @return its exit code and everything it printed.
  std::pair<int, std::string> ctl(const std::string& args, const std::string& input = "",
                                  const std::string& env = "", bool stdout_only = false) {
    const std::string in = file("stdin", input);
    return runCommand("(env -u SVC_VAULT_PASSPHRASE_FILE " + env + " setsid -w " + svcctl() + args +
                      " < '" + in + "'" + (stdout_only ? " 2>/dev/null)" : ")"));
  }
  // svcctl's stdout alone, as a script would read it.
  std::string stdoutOf(const std::string& args, const std::string& input = "") {
    auto [rc, out] = ctl(args, input, "", true);
    EXPECT_EQ(rc, 0) << args;
    return out;
  }
  Poco::JSON::Object::Ptr json(const std::string& args) {
    const std::string out = stdoutOf("--json " + args);
    try {
      return Poco::JSON::Parser().parse(out).extract<Poco::JSON::Object::Ptr>();
    } catch (const Poco::Exception&) {
      ADD_FAILURE() << args << " printed no JSON object: " << out;
      return new Poco::JSON::Object;
    }
  }
  std::string pass(const std::string& file) const { return " --passphrase-file '" + file + "'"; }
  std::string id() const { return " --identity " + ann_; }

  // Every protected value the server answers is a sealed box (an empty one is no value): what it
  // stored is what it answers.
  void expectOnlySealedValues() {
    auto secrets = call("GET", "/api/secrets/?identity=" + ann_).json()->getArray("results");
    auto passwords = call("GET", "/api/passwords/?identity=" + ann_).json()->getArray("results");
    ASSERT_TRUE(secrets && passwords);
    for (std::size_t i = 0; i < secrets->size(); ++i) {
      auto s = secrets->getObject(static_cast<unsigned>(i));
      EXPECT_TRUE(sealed(s->getValue<std::string>("value"))) << s->getValue<std::string>("key");
    }
    for (std::size_t i = 0; i < passwords->size(); ++i) {
      auto p = passwords->getObject(static_cast<unsigned>(i));
      for (const char* field : {"username", "password", "notes"}) {
        const std::string value = p->optValue<std::string>(field, "");
        EXPECT_TRUE(value.empty() || sealed(value)) << field << ": " << value;
      }
    }
  }

  std::unique_ptr<Svcd> svcd_;
  std::string key_, ann_, right_, wrong_, next_;
};

TEST_F(SvcctlE2e, InitSealsWhatWasStoredThenCommandsSealAndOpen) {
  // Before: values pass as given; a password is not printed into a pipe without --reveal.
  ASSERT_EQ(ctl("secrets set OLD_TOKEN" + id(), "old-plain-5e1d\n").first, 0);
  auto [old_rc, old] =
      ctl("passwords add before.example --username old-user-77 --password-stdin" + id(),
          "old-pass-9a0c\n");
  ASSERT_EQ(old_rc, 0) << old;
  EXPECT_NE(old.find("password: (hidden: --reveal prints it)"), std::string::npos) << old;
  EXPECT_EQ(old.find("old-pass-9a0c"), std::string::npos) << old;

  // A passphrase given to an account the server says has no end-to-end encryption: nothing is
  // sent unsealed (a server must not get plaintext by saying "not set up").
  auto [unsealed_rc, unsealed] =
      ctl("secrets set EXPECTED_SEALED" + id() + pass(right_), "must-not-leak-3c1f\n");
  EXPECT_EQ(unsealed_rc, 1) << unsealed;
  EXPECT_NE(unsealed.find("nothing was sent"), std::string::npos) << unsealed;
  EXPECT_EQ(call("GET", "/api/secrets/?identity=" + ann_ + "&key=EXPECTED_SEALED")
                .json()
                ->getValue<int>("count"),
            0);

  auto [init_rc, init] = ctl("vault init" + pass(right_));
  ASSERT_EQ(init_rc, 0) << init;
  EXPECT_EQ(init, "end-to-end encryption set up: 3 stored values sealed\n");
  expectOnlySealedValues();
  auto [again_rc, again] = ctl("vault init" + pass(right_));
  EXPECT_EQ(again_rc, 1);
  EXPECT_NE(again.find("already set up"), std::string::npos) << again;

  auto [wrong_rc, wrong] = ctl("vault unlock" + pass(wrong_));
  EXPECT_EQ(wrong_rc, 1);
  EXPECT_EQ(wrong, "svcctl: wrong passphrase: it does not open this account's vault\n");
  auto [right_rc, right] = ctl("vault unlock", "", "SVC_VAULT_PASSPHRASE_FILE='" + right_ + "'");
  EXPECT_EQ(right_rc, 0) << right;
  EXPECT_EQ(right, "the passphrase opens this account's vault\n");
  auto [tty_rc, tty] = ctl("vault unlock");
  EXPECT_EQ(tty_rc, 1);
  EXPECT_NE(tty.find("no terminal to ask it on: give it in a file (--passphrase-file FILE or "
                     "SVC_VAULT_PASSPHRASE_FILE)\n"),
            std::string::npos)
      << tty;
  // Reading a value names the ways to give the passphrase it needs, and nothing about a new one.
  auto [get_rc, get] = ctl("secrets get OLD_TOKEN --reveal" + id());
  EXPECT_EQ(get_rc, 1);
  EXPECT_EQ(get,
            "svcctl: a vault passphrase is needed and there is no terminal to ask it on: give it "
            "in a file (--passphrase-file FILE or SVC_VAULT_PASSPHRASE_FILE)\n");
  // A change needs the new one too: without a terminal, its own option says how.
  auto [new_rc, new_tty] = ctl("vault change-passphrase" + pass(right_));
  EXPECT_EQ(new_rc, 1);
  EXPECT_NE(new_tty.find("a new vault passphrase is needed and there is no terminal to ask it on: "
                         "give it in a file (--new-passphrase-file FILE)"),
            std::string::npos)
      << new_tty;

  // What init sealed opens; what svcctl sets is sealed here.
  EXPECT_EQ(stdoutOf("secrets get OLD_TOKEN --reveal" + id() + pass(right_)), "old-plain-5e1d\n");
  auto [set_rc, set] = ctl("secrets set API_KEY" + id() + pass(right_), "sk-live-e2e-31f7\n");
  ASSERT_EQ(set_rc, 0) << set;
  auto stored = call("GET", "/api/secrets/?key=API_KEY&identity=" + ann_).json();
  const std::string value =
      stored->getArray("results")->getObject(0)->getValue<std::string>("value");
  EXPECT_TRUE(sealed(value)) << value;
  EXPECT_EQ(
      json("secrets get API_KEY --reveal" + id() + pass(right_))->getValue<std::string>("value"),
      "sk-live-e2e-31f7");
  EXPECT_FALSE(json("secrets get API_KEY" + id())->has("value")) << "no --reveal, no value";
  auto [refused_rc, refused] = ctl("secrets set OTHER" + id() + pass(wrong_), "never-stored\n");
  EXPECT_EQ(refused_rc, 1);
  EXPECT_NE(refused.find("wrong passphrase"), std::string::npos) << refused;

  // Passwords: the server must not make one; add, get and edit seal and open here.
  auto [gen_rc, gen] = ctl("passwords add generated.example" + id() + pass(right_));
  EXPECT_EQ(gen_rc, 1);
  EXPECT_NE(gen.find("--password-stdin"), std::string::npos) << gen;
  auto [add_rc, added] =
      ctl("passwords add site.example --username ann-e2e --notes 'note e2e' "
          "--password-stdin --reveal" +
              id() + pass(right_),
          "pw-e2e-4b8d\n");
  ASSERT_EQ(add_rc, 0) << added;
  EXPECT_NE(added.find("username: ann-e2e\npassword: pw-e2e-4b8d\n"), std::string::npos) << added;
  const std::string uuid = added.substr(added.find("uuid:") + 10, 36);
  auto [hidden_rc, hidden] = ctl("passwords get " + uuid);
  EXPECT_EQ(hidden_rc, 0) << hidden;
  EXPECT_NE(hidden.find("password: (hidden: --reveal prints it)"), std::string::npos) << hidden;
  EXPECT_EQ(hidden.find("e2e::"), std::string::npos) << hidden;
  auto entry = json("passwords get " + uuid + " --reveal" + pass(right_));
  EXPECT_EQ(entry->getValue<std::string>("password"), "pw-e2e-4b8d");
  EXPECT_EQ(entry->getValue<std::string>("notes"), "note e2e");
  EXPECT_FALSE(json("passwords get " + uuid)->has("password")) << "--json needs --reveal";
  auto [edit_rc, edit] =
      ctl("passwords edit " + uuid + " --password-stdin" + pass(right_), "pw-new-c3d2\n");
  ASSERT_EQ(edit_rc, 0) << edit;
  EXPECT_EQ(
      json("passwords get " + uuid + " --reveal" + pass(right_))->getValue<std::string>("password"),
      "pw-new-c3d2");
  // On a terminal (script(1) gives svcctl one) the entry is shown opened without --reveal.
  auto [term_rc, on_terminal] = runCommand("script -qec \"" + svcctl() + "passwords get " + uuid +
                                           pass(right_) + "\" /dev/null < /dev/null");
  EXPECT_EQ(term_rc, 0) << on_terminal;
  EXPECT_NE(on_terminal.find("password: pw-new-c3d2\r\n"), std::string::npos) << on_terminal;
  auto [list_rc, listed] = ctl("passwords list" + id());
  EXPECT_NE(listed.find("(sealed)"), std::string::npos) << listed;
  expectOnlySealedValues();

  ASSERT_EQ(svcd_->terminate(), 0);
  const std::string bytes = databaseBytes(svcd_->dbUrl());
  ASSERT_NE(bytes.find("site.example"), std::string::npos) << "the right database";
  for (const char* plain : {"old-plain-5e1d", "old-pass-9a0c", "sk-live-e2e-31f7", "pw-e2e-4b8d",
                            "pw-new-c3d2", "note e2e", "never-stored", "correct horse"}) {
    EXPECT_EQ(bytes.find(plain), std::string::npos) << plain;
  }
}

// Forwards connections on a port of its own to svcd, one request a connection (as svcctl sends
// them), noting when each request line arrived; a request whose line starts with `cut` is never
// forwarded: its connection is closed, as a network that fails at the worst moment would.
class CuttingForwarder {
 public:
  CuttingForwarder(int target, std::string cut) : target_(target), cut_(std::move(cut)) {
    listener_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (::bind(listener_, reinterpret_cast<sockaddr*>(&a), len) != 0 ||
        ::listen(listener_, 16) != 0 ||
        ::getsockname(listener_, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
      throw std::runtime_error("forwarder: cannot listen");
    }
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this] { run(); });
  }
  ~CuttingForwarder() {
    ::shutdown(listener_, SHUT_RDWR);
    ::close(listener_);
    thread_.join();
  }
  int port() const { return port_; }
  /// @return each request line and the steady-clock time it arrived.
  std::vector<std::pair<std::string, std::chrono::steady_clock::time_point>> seen() {
    std::lock_guard lock(mutex_);
    return seen_;
  }

 private:
  void run() {
    for (;;) {
      const int client = ::accept(listener_, nullptr, nullptr);
      if (client < 0) return;
      serve(client);  // one at a time: svcctl sends one request after another
      ::close(client);
    }
  }
  void serve(int client) {
    std::string head;
    char buf[65536];
    while (head.find("\r\n\r\n") == std::string::npos) {
      const ssize_t n = ::recv(client, buf, sizeof buf, 0);
      if (n <= 0) return;
      head.append(buf, static_cast<std::size_t>(n));
    }
    {
      std::lock_guard lock(mutex_);
      seen_.emplace_back(head.substr(0, head.find("\r\n")), std::chrono::steady_clock::now());
    }
    if (head.rfind(cut_, 0) == 0) return;
    const int server = connectFrom("127.0.0.1", target_);
    if (server < 0) return;
    ::send(server, head.data(), head.size(), MSG_NOSIGNAL);
    pollfd fds[2] = {{client, POLLIN, 0}, {server, POLLIN, 0}};
    while (::poll(fds, 2, 10000) > 0) {
      const bool from_client = fds[0].revents != 0;
      const ssize_t n = ::recv(from_client ? client : server, buf, sizeof buf, 0);
      if (n <= 0) break;
      ::send(from_client ? server : client, buf, static_cast<std::size_t>(n), MSG_NOSIGNAL);
    }
    ::close(server);
  }

  int target_;
  std::string cut_;
  int listener_ = -1;
  int port_ = 0;
  std::thread thread_;
  std::mutex mutex_;
  std::vector<std::pair<std::string, std::chrono::steady_clock::time_point>> seen_;
};

// The change's last call is cut off before it reaches svcd: svcctl says it may have been applied
// (not that it failed), the old passphrase keeps working and writes wait for the lease, and a
// second change takes the lease over and completes. The account's key derivation is raised
// (t 8): svcctl says so, and derives the new key before it takes the lease, so that the lease is
// held for the re-sealing alone, not for a slow Argon2id.
TEST_F(SvcctlE2e, AChangeCutOffAtItsLastCallLeavesTheOldPassphraseThenSucceeds) {
  // Set up by hand with t 8, as a client that chose slower derivation would.
  {
    const std::string salt(16, 's');
    auto keys = sdk::e2e::KeyPair::derive("correct horse battery staple", salt, {8, 65536, 1});
    sdk::e2e::Metadata m;
    m.salt = salt;
    m.public_key = keys.publicKey();
    m.verifier = sdk::e2e::makeVerifier(keys.publicKey());
    m.kdf = {8, 65536, 1};
    auto set = call("PUT", "/api/encryption/", sdk::jsonText(*m.toJson()));
    ASSERT_EQ(set.status, 200) << set.body;
  }
  auto [set_rc, set_out] = ctl("secrets set API_KEY" + id() + pass(right_), "sk-kept-8d21\n");
  ASSERT_EQ(set_rc, 0) << set_out;
  EXPECT_NE(set_out.find("raised above the contract's defaults (t 8, m 65536 KiB"),
            std::string::npos)
      << set_out;
  auto [add_rc, added] =
      ctl("passwords add site.example --password-stdin" + id() + pass(right_), "pw-kept-2f90\n");
  ASSERT_EQ(add_rc, 0) << added;
  const std::string uuid = added.substr(added.find("uuid:") + 10, 36);
  const std::string before = call("GET", "/api/encryption/").json()->getValue<std::string>("salt");

  CuttingForwarder cut(svcd_->port(), "PUT /api/encryption/ ");
  const std::string via = " --url http://127.0.0.1:" + std::to_string(cut.port()) + " ";
  auto [cut_rc, cut_out] = ctl(via + "vault change-passphrase" + pass(right_) +
                               " --new-passphrase-file '" + next_ + "'");
  EXPECT_EQ(cut_rc, 1) << cut_out;
  EXPECT_NE(cut_out.find("it may have been applied"), std::string::npos) << cut_out;
  // Its calls, as the forwarder saw them: the vault's metadata read, then (after both keys are
  // derived) the lease taken, then the commit.
  std::optional<std::chrono::steady_clock::time_point> read, leased, committing;
  for (const auto& [line, at] : cut.seen()) {
    if (line.rfind("GET /api/encryption/ ", 0) == 0 && !leased) read = at;
    if (line.rfind("POST /api/encryption/rekey/ ", 0) == 0) leased = at;
    if (line.rfind("PUT /api/encryption/ ", 0) == 0) committing = at;
    EXPECT_NE(line.rfind("DELETE ", 0), 0u) << "a change whose answer may come gives no lease up";
  }
  ASSERT_TRUE(read && leased && committing) << "the change never reached its last call";
  // Two derivations (the current passphrase checked, the new key made) come before the lease,
  // none while it is held: held for the re-sealing alone, it is far shorter than the time before
  // it (were the new key derived under the lease, the two would be about the same). Both are
  // measured in the same run, so a slow machine slows both.
  EXPECT_LT(*committing - *leased, (*leased - *read) / 2)
      << "the lease was held while the new key was derived";

  // Nothing changed: the old passphrase opens everything; writes wait for the lease.
  auto m = call("GET", "/api/encryption/").json();
  EXPECT_EQ(m->getValue<std::string>("salt"), before);
  EXPECT_FALSE(m->isNull("rekey"));
  auto [lease_rc, lease] = ctl("vault status");
  EXPECT_EQ(lease_rc, 0) << lease;
  EXPECT_NE(lease.find("a passphrase change holds the vault until "), std::string::npos) << lease;
  EXPECT_EQ(stdoutOf("secrets get API_KEY --reveal" + id() + pass(right_)), "sk-kept-8d21\n");
  auto [held_rc, held] = ctl("secrets set API_KEY" + id() + pass(right_), "during\n");
  EXPECT_EQ(held_rc, 1);
  EXPECT_NE(held.find("409 vault_rekeying"), std::string::npos) << held;

  // A second change takes the lease over and completes.
  auto [change_rc, changed] =
      ctl("vault change-passphrase" + pass(right_) + " --new-passphrase-file '" + next_ + "'");
  ASSERT_EQ(change_rc, 0) << changed;
  EXPECT_NE(changed.find("passphrase changed: 2 values sealed to the new key\n"), std::string::npos)
      << changed;
  EXPECT_TRUE(call("GET", "/api/encryption/").json()->isNull("rekey"));
  auto [old_rc, old] = ctl("vault unlock" + pass(right_));
  EXPECT_EQ(old_rc, 1);
  EXPECT_NE(old.find("wrong passphrase"), std::string::npos) << old;
  EXPECT_EQ(stdoutOf("secrets get API_KEY --reveal" + id() + pass(next_)), "sk-kept-8d21\n");
  EXPECT_EQ(
      json("passwords get " + uuid + " --reveal" + pass(next_))->getValue<std::string>("password"),
      "pw-kept-2f90");
  expectOnlySealedValues();
}

// svcctl names the key it sealed to: a value sealed before a passphrase change elsewhere is
// refused by the server, not stored sealed to a key the new passphrase does not make.
TEST_F(SvcctlE2e, AValueSealedToTheOldKeyIsRefused) {
  ASSERT_EQ(ctl("vault init" + pass(right_)).first, 0);
  auto meta = call("GET", "/api/encryption/").json();
  const std::string old_key = meta->getValue<std::string>("public_key");
  ASSERT_EQ(ctl("vault change-passphrase" + pass(right_) + " --new-passphrase-file '" + next_ + "'")
                .first,
            0);
  // What a client unlocked before the change would send: sealed to the old key, saying so.
  const std::string body = "{\"key\":\"LATE\",\"value\":\"" +
                           sdk::e2e::seal("late", *sdk::base64Decode(old_key)) + "\"}";
  auto late = http(svcd_->port(), "POST", "/api/secrets/?identity=" + ann_, body,
                   {{"Authorization", "Bearer " + key_},
                    {"Content-Type", "application/json"},
                    {"X-Svc-E2e-Public-Key", old_key}});
  EXPECT_EQ(late.status, 409) << late.body;
  EXPECT_EQ(late.code(), "e2e_key_changed");
  // svcctl, unlocked with the current passphrase, names the current key.
  auto [rc, out] = ctl("secrets set LATE" + id() + pass(next_), "on time\n");
  EXPECT_EQ(rc, 0) << out;
  EXPECT_EQ(stdoutOf("secrets get LATE --reveal" + id() + pass(next_)), "on time\n");
}

// examples/e2e-node, on node's libsodium (libsodium-wrappers-sumo), is the independent
// implementation: its metadata unlocks in svcctl, and each opens what the other sealed.
TEST_F(SvcctlE2e, NodesLibsodiumAndSvcctlOpenWhatTheOtherSealed) {
  const std::string example = SVC_TEST_E2E_NODE_EXAMPLE;
  ASSERT_TRUE(Poco::File(example + "/node_modules/libsodium-wrappers-sumo").exists())
      << "examples/e2e-node/node_modules is missing: run tools/test.sh (it runs npm ci there)";
  auto node = [&](const std::string& args, const std::string& input = "") {
    const std::string in = file("node-stdin", input);
    return runCommand("SVC_URL=http://127.0.0.1:" + std::to_string(svcd_->port()) +
                      " SVC_KEY=" + key_ + " SVC_VAULT_PASSPHRASE_FILE='" + right_ + "' node '" +
                      example + "/vault.mjs' " + args + " < '" + in + "'");
  };
  auto [init_rc, init] = node("init");
  ASSERT_EQ(init_rc, 0) << init;
  auto [unlock_rc, unlocked] = ctl("vault unlock" + pass(right_));
  EXPECT_EQ(unlock_rc, 0) << unlocked;

  ASSERT_EQ(
      ctl("secrets set FROM_SVCCTL" + id() + pass(right_), "made by svcctl \xE2\x9C\x93\n").first,
      0);
  auto [get_rc, got] = node("get FROM_SVCCTL --identity " + ann_);
  EXPECT_EQ(get_rc, 0) << got;
  EXPECT_EQ(got, "made by svcctl \xE2\x9C\x93\n");

  auto [set_rc, set] = node("set FROM_NODE --identity " + ann_, "made by node\nsecond line\n");
  ASSERT_EQ(set_rc, 0) << set;
  EXPECT_EQ(stdoutOf("secrets get FROM_NODE --reveal" + id() + pass(right_)),
            "made by node\nsecond line\n");
  expectOnlySealedValues();
}

}  // namespace
}  // namespace svc::testing
