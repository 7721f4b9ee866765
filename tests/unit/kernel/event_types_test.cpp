// The event-type registry: built from declarations, knows nothing in advance.
#include "event_types.h"
#include "plugin_host.h"

#include <Poco/AutoPtr.h>
#include <Poco/Channel.h>
#include <Poco/File.h>
#include <Poco/Message.h>
#include <Poco/Path.h>
#include <Poco/TemporaryFile.h>
#include <Poco/Util/LayeredConfiguration.h>

#include <gtest/gtest.h>

#include <vector>

namespace svc::kernel {
namespace {

// Records what is logged through it.
class Recorder : public Poco::Channel {
 public:
  void log(const Poco::Message& m) override { messages.push_back(m); }
  std::vector<Poco::Message> messages;
};

TEST(EventTypeRegistry, KnowsOnlyTheKernelsOwnTypeUntilPluginsDeclare) {
  EventTypeRegistry types;
  EXPECT_EQ(types.names(), std::vector<std::string>{"stream.truncated"});
  EXPECT_EQ(types.owner("stream.truncated"), "kernel");
  for (const char* product : {"email.received", "identity.created", "key.revoked", "sms.sent"}) {
    EXPECT_FALSE(types.known(product)) << product;
  }
}

TEST(EventTypeRegistry, AcceptsWhatAPluginDeclaresWithItsDescriptionAndKeyFields) {
  EventTypeRegistry types;
  types.declare("notes", {"note.created", "A note was made.", {"notebook_id"}});
  types.declare("notes", {"note.deleted", "A note was deleted.", {}});
  EXPECT_TRUE(types.known("note.created"));
  EXPECT_TRUE(types.known("note.deleted"));
  EXPECT_FALSE(types.known("note.updated"));
  ASSERT_NE(types.find("note.created"), nullptr);
  EXPECT_EQ(types.find("note.created")->description, "A note was made.");
  EXPECT_EQ(types.find("note.created")->key_fields, std::vector<std::string>{"notebook_id"});
  EXPECT_EQ(types.owner("note.deleted"), "notes");
  EXPECT_EQ(types.find("note.updated"), nullptr);
  EXPECT_EQ(types.names(),
            (std::vector<std::string>{"note.created", "note.deleted", "stream.truncated"}));
}

TEST(EventTypeRegistry, RefusesADoubleDeclarationNamingTheFirstOwner) {
  EventTypeRegistry types;
  types.declare("notes", {"note.created", "", {}});
  try {
    types.declare("jotter", {"note.created", "", {}});
    FAIL() << "declared twice";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("already declared by plugin 'notes'"), std::string::npos)
        << e.what();
  }
  try {
    types.declare("jotter", {"stream.truncated", "", {}});
    FAIL() << "took the kernel's type";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("by the kernel"), std::string::npos) << e.what();
  }
  EXPECT_EQ(types.owner("note.created"), "notes");
}

TEST(EventTypeRegistry, NamesAreLowerCaseDottedAndShort) {
  for (const char* good : {"note.created", "a.b", "sms_v2.sent", "x.y.z", "n0te.created_at"}) {
    EXPECT_TRUE(validEventTypeName(good)) << good;
  }
  for (const std::string& bad :
       std::vector<std::string>{"", "note", "Note.created", "note.", ".created", "note..created",
                                "note.created ", "note-created", "note.Created", "1note.created",
                                "note.9created", "n." + std::string(63, 'a')}) {
    EXPECT_FALSE(validEventTypeName(bad)) << bad;
    EventTypeRegistry types;
    EXPECT_THROW(types.declare("p", {bad, "", {}}), std::invalid_argument) << bad;
  }
  EXPECT_TRUE(validEventTypeName("n." + std::string(62, 'a')));  // 64 characters
}

TEST(EventTypeRegistry, ReportsAnUndeclaredPublishOnceAtErrorLevel) {
  Poco::AutoPtr<Recorder> recorder(new Recorder);
  Poco::Logger& log = Poco::Logger::get("event_types_test");
  log.setChannel(recorder);
  log.setLevel(Poco::Message::PRIO_INFORMATION);
  EventTypeRegistry types;
  types.declare("notes", {"note.created", "", {}});
  EXPECT_TRUE(types.checkPublished("note.created", log));
  EXPECT_TRUE(recorder->messages.empty());
  EXPECT_FALSE(types.checkPublished("note.archived", log));
  EXPECT_FALSE(types.checkPublished("note.archived", log));
  EXPECT_FALSE(types.checkPublished("note.shared", log));
  ASSERT_EQ(recorder->messages.size(), 2u);
  EXPECT_EQ(recorder->messages[0].getPriority(), Poco::Message::PRIO_ERROR);
  EXPECT_NE(recorder->messages[0].getText().find("'note.archived'"), std::string::npos);
  EXPECT_NE(recorder->messages[1].getText().find("'note.shared'"), std::string::npos);
  EXPECT_FALSE(types.known("note.archived"));  // reporting does not declare it
}

// The loader fills the registry from the plugins' PluginInfo::events, and refuses start when two
// plugins declare one type or a declaration is malformed.
class LoaderDeclarations : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = Poco::Path(Poco::TemporaryFile::tempName()).toString();
    Poco::File(dir_ + "/bin").createDirectories();
    conf_ = new Poco::Util::LayeredConfiguration;
    layers_ =
        std::make_unique<ConfigLayers>(*conf_, dir_ + "/bin", std::map<std::string, std::string>{});
  }
  void TearDown() override { Poco::File(dir_).remove(true); }
  std::string loadError(const std::string& enabled) {
    PluginHost host(*conf_, *layers_, dir_);
    try {
      host.load(SVC_TEST_PLUGIN_DIR, enabled);
    } catch (const PluginError& e) {
      return e.what();
    }
    return "";
  }
  std::string dir_;
  Poco::AutoPtr<Poco::Util::LayeredConfiguration> conf_;
  std::unique_ptr<ConfigLayers> layers_;
};

TEST_F(LoaderDeclarations, TheRegistryHoldsWhatTheLoadedPluginsDeclare) {
  PluginHost host(*conf_, *layers_, dir_);
  host.load(SVC_TEST_PLUGIN_DIR, "alpha,beta");
  EXPECT_TRUE(host.eventTypes().known("fixture.pinged"));
  EXPECT_EQ(host.eventTypes().owner("fixture.pinged"), "alpha");
  EXPECT_EQ(host.eventTypes().names().size(), 2u);  // and stream.truncated
  PluginHost without(*conf_, *layers_, dir_);
  without.load(SVC_TEST_PLUGIN_DIR, "throwsstart");
  EXPECT_FALSE(without.eventTypes().known("fixture.pinged"));
}

TEST_F(LoaderDeclarations, RefusesTwoPluginsDeclaringOneType) {
  const std::string why = loadError("alpha,dupevent");
  EXPECT_NE(why.find("plugin 'dupevent'"), std::string::npos) << why;
  EXPECT_NE(why.find("'fixture.pinged' is already declared by plugin 'alpha'"), std::string::npos)
      << why;
}

TEST_F(LoaderDeclarations, RefusesAMalformedTypeNamingIt) {
  const std::string why = loadError("badevent");
  EXPECT_NE(why.find("plugin 'badevent'"), std::string::npos) << why;
  EXPECT_NE(why.find("'Not-A-Type'"), std::string::npos) << why;
}

}  // namespace
}  // namespace svc::kernel
