// The plugin writers' test kit (svc/sdk/testing.h) against a small plugin defined here, and
// against fixture libraries loaded with the real handshake.
#include <svc/sdk/testing.h>

#include <Poco/Data/Session.h>

#include <gtest/gtest.h>

#include <thread>

namespace svc::sdk::testing {
namespace {

using namespace Poco::Data::Keywords;

constexpr const char* kAccount = "aaaaaaaa-0000-4000-8000-000000000000";
constexpr const char* kOther = "bbbbbbbb-0000-4000-8000-000000000000";
constexpr const char* kIdentity = "a1a1a1a1-0000-4000-8000-000000000001";

// A plugin that uses every part of the context: a key, a migration, routes of several kinds, an
// event type, a metric and a held response.
class NotesPlugin : public Plugin {
 public:
  NotesPlugin() {
    info_.name = "notes";
    info_.version = "1.0.0";
    info_.description = "test kit subject";
    info_.config = {{"notes.prefix", "note", "what titles start with", false, false},
                    {"notes.api_secret", "s3cret", "a secret of its own", true, false}};
    info_.events = {{"note.created", "A note was created; object: the note.", {}}};
  }
  const PluginInfo& info() const override { return info_; }
  void configure(PluginContext& context) override {
    context_ = &context;
    prefix_ = context.config().getString("notes.prefix");
    created_ = context.metrics().counter("svc_notes_created_total", "notes created");
  }
  std::vector<Migration> migrations() const override {
    return {Migration::portable(
        1, "notes",
        {"CREATE TABLE notes (id CHAR(36) PRIMARY KEY, account CHAR(36), title TEXT)"})};
  }
  void registerRoutes(RouteRegistry& routes) override {
    Route create;
    create.method = "POST";
    create.pattern = "/api/notes/";
    create.handler = [this](Request& r) {
      auto title = r.stringField("title");
      if (!title) throw HttpError::invalid("title", "This field is required.");
      Poco::JSON::Object::Ptr note = new Poco::JSON::Object;
      std::string id = newUuidForTest();
      std::string full = prefix_ + ": " + *title;
      note->set("id", id);
      note->set("title", full);
      context_->database().transaction([&](Poco::Data::Session& s) {
        std::string account = r.principal.account_id;
        s << "INSERT INTO notes (id, account, title) VALUES (?, ?, ?)", use(id), use(account),
            use(full), now;
        context_->events().publish("note.created", account, "", note, &s);
      });
      created_->increment();
      return Response::json(201, note);
    };
    routes.add(create);
    Route mine;
    mine.method = "GET";
    mine.pattern = "/api/notes/mine/";
    mine.auth = AuthNeed::kIdentity;
    mine.handler = [](Request& r) {
      Poco::JSON::Object::Ptr o = new Poco::JSON::Object;
      o->set("identity", r.identity->uuid);
      o->set("name", r.identity->name);
      return Response::json(200, o);
    };
    routes.add(mine);
    Route later;
    later.method = "GET";
    later.pattern = "/api/notes/later/";
    later.auth = AuthNeed::kNone;
    later.handler = [](Request&) {
      return Response::hold([](std::shared_ptr<Stream> stream) {
        stream->expireAfter(std::chrono::milliseconds(20),
                            [stream] { stream->respond(Response::noContent()); });
      });
    };
    routes.add(later);
    Route count;
    count.method = "GET";
    count.pattern = "/admin/notes/count/";
    count.auth = AuthNeed::kOperator;
    count.handler = [this](Request&) {
      int n = 0;
      auto s = context_->database().session();
      s << "SELECT COUNT(*) FROM notes", into(n), now;
      Poco::JSON::Object::Ptr o = new Poco::JSON::Object;
      o->set("count", n);
      return Response::json(200, o);
    };
    routes.add(count);
  }
  void registerServices(ServiceRegistry&) override {}
  void start() override {}
  void stop() override {}

 private:
  static std::string newUuidForTest() {
    static std::atomic<int> n{0};
    char buf[37];
    std::snprintf(buf, sizeof buf, "00000000-0000-4000-8000-%012d", ++n);
    return buf;
  }
  PluginInfo info_;
  PluginContext* context_ = nullptr;
  std::string prefix_;
  std::shared_ptr<Counter> created_;
};

class TestKitTest : public ::testing::Test {
 protected:
  void SetUp() override {
    harness_.add(std::make_unique<NotesPlugin>());
    harness_.addIdentity(kAccount, kIdentity, "ada");
    harness_.start();
  }
  PluginHarness harness_{HarnessOptions{{{"notes.prefix", "memo"}}}};
};

TEST_F(TestKitTest, CallsRoutesThroughTheKernelPipeline) {
  auto body = Poco::JSON::Object::Ptr(new Poco::JSON::Object);
  body->set("title", "hello");
  auto created = harness_.call(
      RequestBuilder::post("/api/notes/").as(managementPrincipal(kAccount)).json(body));
  ASSERT_EQ(created.status, 201) << created.body;
  EXPECT_EQ(created.json()->getValue<std::string>("title"), "memo: hello");
  EXPECT_EQ(created.header("x-request-id").value_or("").size(), 36u);
  // The kernel's own answers: no credential, a bad body, a validation error in the shape.
  auto anonymous = harness_.call(RequestBuilder::post("/api/notes/").json(body));
  EXPECT_EQ(anonymous.status, 401);
  auto malformed = harness_.call(
      RequestBuilder::post("/api/notes/").as(managementPrincipal(kAccount)).json("{\"title\":"));
  EXPECT_EQ(malformed.status, 400);
  auto missing = harness_.call(
      RequestBuilder::post("/api/notes/").as(managementPrincipal(kAccount)).json("{}"));
  EXPECT_EQ(missing.status, 400);
  EXPECT_EQ(missing.code(), "invalid");
  EXPECT_TRUE(missing.json()->getObject("errors")->has("title"));
  EXPECT_EQ(harness_.call(RequestBuilder::get("/api/nothing/")).status, 404);
  EXPECT_EQ(harness_.call(RequestBuilder::del("/api/notes/")).status, 405);
}

TEST_F(TestKitTest, ResolvesIdentitiesThroughTheStubDirectory) {
  auto mine = harness_.call(RequestBuilder::get("/api/notes/mine/")
                                .as(managementPrincipal(kAccount))
                                .identity(kIdentity));
  ASSERT_EQ(mine.status, 200) << mine.body;
  EXPECT_EQ(mine.json()->getValue<std::string>("name"), "ada");
  auto bound = harness_.call(
      RequestBuilder::get("/api/notes/mine/").as(identityPrincipal(kAccount, kIdentity)));
  EXPECT_EQ(bound.status, 200) << bound.body;
  // Another account's principal does not reach this account's identity.
  auto foreign = harness_.call(
      RequestBuilder::get("/api/notes/mine/").as(managementPrincipal(kOther)).identity(kIdentity));
  EXPECT_EQ(foreign.status, 404);
  auto unnamed =
      harness_.call(RequestBuilder::get("/api/notes/mine/").as(managementPrincipal(kAccount)));
  EXPECT_EQ(unnamed.code(), "identity_required");
}

TEST_F(TestKitTest, RecordsCommittedEventsAndServesMetricsAndTheDatabase) {
  harness_.call(RequestBuilder::post("/api/notes/")
                    .as(managementPrincipal(kAccount))
                    .json("{\"title\":\"one\"}"));
  auto event = harness_.events().waitFor("note.created", std::chrono::seconds(30));
  ASSERT_TRUE(event);
  EXPECT_EQ(event->account, kAccount);
  EXPECT_EQ(event->object->getValue<std::string>("title"), "memo: one");
  EXPECT_EQ(harness_.events().ofType("note.created").size(), 1u);
  EXPECT_NE(harness_.metrics().find("svc_notes_created_total 1"), std::string::npos);
  int rows = 0;
  auto session = harness_.database().session();
  session << "SELECT COUNT(*) FROM notes", into(rows), now;
  EXPECT_EQ(rows, 1);
  auto count = harness_.callOperator(RequestBuilder::get("/admin/notes/count/"));
  ASSERT_EQ(count.status, 200) << count.body;
  EXPECT_EQ(count.json()->getValue<int>("count"), 1);
  // Operator routes are not on the API listener.
  EXPECT_EQ(harness_.call(RequestBuilder::get("/admin/notes/count/")).status, 404);
}

TEST_F(TestKitTest, WaitsForHeldResponses) {
  auto answer = harness_.call(RequestBuilder::get("/api/notes/later/"));
  EXPECT_EQ(answer.status, 204);
}

TEST_F(TestKitTest, ScopesConfigurationAsSvcdDoes) {
  const auto& config = harness_.configOf("notes");
  EXPECT_EQ(config.getString("notes.prefix"), "memo");
  EXPECT_EQ(config.getString("notes.api_secret"), "s3cret");  // its own secret
  EXPECT_TRUE(config.has("data.dir"));
  EXPECT_FALSE(config.has("admin.token"));
  EXPECT_FALSE(config.has("db.url"));
}

// Offers the credential services itself, as the auth and identities plugins do: one key for
// kAccount, one identity of it.
class GatekeeperPlugin : public Plugin {
 public:
  GatekeeperPlugin(bool authenticator, bool directory)
      : authenticator_(authenticator), directory_(directory) {
    info_.name = "gatekeeper";
    info_.version = "1.0.0";
    info_.description = "offers credentials";
    if (authenticator) info_.offers_services.push_back(kAuthenticatorService.name);
    if (directory) info_.offers_services.push_back(kIdentityDirectoryService.name);
  }
  const PluginInfo& info() const override { return info_; }
  void configure(PluginContext&) override {}
  std::vector<Migration> migrations() const override { return {}; }
  void registerRoutes(RouteRegistry&) override {}
  void registerServices(ServiceRegistry& services) override {
    if (authenticator_) services.offer(kAuthenticatorService, std::make_shared<Keys>());
    if (directory_) services.offer(kIdentityDirectoryService, std::make_shared<Directory>());
  }
  void start() override {}
  void stop() override {}

 private:
  struct Keys : Authenticator {
    std::optional<Principal> authenticate(const Credentials& c) override {
      if (bearerCredential(c.authorization) != std::optional<std::string>("open-sesame")) {
        return std::nullopt;
      }
      return managementPrincipal(kAccount);
    }
  };
  struct Directory : IdentityDirectory {
    std::optional<IdentityRef> find(const std::string& account, const std::string& uuid) override {
      if (account != kAccount || uuid != kIdentity) return std::nullopt;
      return IdentityRef{kIdentity, "grace"};
    }
  };
  PluginInfo info_;
  bool authenticator_, directory_;
};

TEST(TestKit, APluginOfferingTheAuthenticatorReplacesOnlyThatStub) {
  PluginHarness harness;
  harness.add(std::make_unique<NotesPlugin>());
  harness.add(std::make_unique<GatekeeperPlugin>(true, false));
  harness.addIdentity(kAccount, kIdentity, "ada");  // the stub directory is still there
  harness.start();
  auto mine = harness.call(RequestBuilder::get("/api/notes/mine/")
                               .header("Authorization", "Bearer open-sesame")
                               .identity(kIdentity));
  ASSERT_EQ(mine.status, 200) << mine.body;
  EXPECT_EQ(mine.json()->getValue<std::string>("name"), "ada");
  auto wrong = harness.call(RequestBuilder::get("/api/notes/mine/")
                                .header("Authorization", "Bearer closed")
                                .identity(kIdentity));
  EXPECT_EQ(wrong.status, 401);
  // A stub principal would only meet the plugin's refusal: the kit says why instead.
  EXPECT_THROW(
      harness.call(RequestBuilder::get("/api/notes/mine/").as(managementPrincipal(kAccount))),
      std::logic_error);
}

TEST(TestKit, APluginOfferingTheIdentityDirectoryReplacesOnlyThatStub) {
  PluginHarness harness;
  harness.add(std::make_unique<NotesPlugin>());
  harness.add(std::make_unique<GatekeeperPlugin>(false, true));
  harness.addIdentity(kAccount, kIdentity, "ada");  // the stub's, which stands aside
  harness.start();
  auto mine = harness.call(RequestBuilder::get("/api/notes/mine/")
                               .as(managementPrincipal(kAccount))
                               .identity(kIdentity));
  ASSERT_EQ(mine.status, 200) << mine.body;
  EXPECT_EQ(mine.json()->getValue<std::string>("name"), "grace");
}

TEST(TestKit, WithoutStubCredentialsNothingAuthenticates) {
  HarnessOptions options;
  options.stub_credentials = false;
  PluginHarness harness(options);
  harness.add(std::make_unique<NotesPlugin>());
  harness.start();
  auto refused =
      harness.call(RequestBuilder::post("/api/notes/").header("Authorization", "Bearer anything"));
  EXPECT_EQ(refused.status, 503) << refused.body;  // as svcd without an authentication plugin
  EXPECT_THROW(harness.call(RequestBuilder::post("/api/notes/").as(managementPrincipal(kAccount))),
               std::logic_error);
}

TEST(TestKit, LoadsLibrariesWithTheRealHandshake) {
  PluginHarness harness;
  harness.load(std::string(SVC_TEST_PLUGIN_DIR) + "/svc_plugin_alpha.so");
  harness.start();
  auto answer = harness.call(RequestBuilder::get("/api/alpha/"));
  ASSERT_EQ(answer.status, 200);
  EXPECT_EQ(answer.json()->getValue<std::string>("plugin"), "alpha");
  PluginHarness refusing;
  try {
    refusing.load(std::string(SVC_TEST_PLUGIN_DIR) + "/svc_plugin_wrongabi.so");
    FAIL() << "a plugin built for another SDK version was accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("wrongabi"), std::string::npos) << e.what();
  }
}

TEST(TestKit, StartNamesThePluginThatRefused) {
  PluginHarness harness;
  harness.load(std::string(SVC_TEST_PLUGIN_DIR) + "/svc_plugin_beta.so");  // requires alpha
  try {
    harness.start();
    FAIL() << "beta started without alpha";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("requires plugin 'alpha'"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace svc::sdk::testing
