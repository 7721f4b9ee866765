#include "scoped_config.h"

#include <Poco/Exception.h>
#include <Poco/Util/MapConfiguration.h>

#include <gtest/gtest.h>

using namespace svc;
using namespace svc::kernel;

namespace {

struct Fixture {
  Poco::AutoPtr<Poco::Util::MapConfiguration> all = new Poco::Util::MapConfiguration;
  std::vector<sdk::ConfigKey> kernel = {{"data.dir", "", "", false, true},
                                        {"db.url", "", "", true, true},
                                        {"admin.token", "", "", true},
                                        {"server.threads", "", "", false}};
  std::vector<sdk::ConfigKey> mail = {{"mail.relay.password", "", "", true},
                                      {"mail.domains", "", "", false, true},
                                      {"accounts.plan", "", "", false}};
  std::vector<sdk::ConfigKey> other = {{"other.url", "", "", false, true},
                                       {"other.secret", "", "", true, true},
                                       {"other.private", "", "", false}};

  Fixture() {
    all->setString("data.dir", "/var/lib/svc");
    all->setString("db.url", "mysql://u:p@h/db");
    all->setString("admin.token", "t0k3n");
    all->setString("server.threads", "64");
    all->setString("mail.relay.password", "hunter2");
    all->setString("mail.domains", "a.example");
    all->setString("mail.spool", "${data.dir}/spool");
    all->setString("mail.extra.undeclared", "yes");
    all->setString("accounts.plan", "active");
    all->setString("other.url", "https://x.example");
    all->setString("other.secret", "s");
    all->setString("other.private", "p");
  }

  Poco::AutoPtr<ScopedConfiguration> viewOf(const std::string& name,
                                            const std::vector<sdk::ConfigKey>& own) {
    return new ScopedConfiguration(*all, name, readableKeys(own, {&kernel, &mail, &other}));
  }
};

}  // namespace

TEST(ScopedConfiguration, APluginReadsItsOwnKeysAndSharedOnes) {
  Fixture f;
  auto mail = f.viewOf("mail", f.mail);
  EXPECT_EQ(mail->getString("mail.relay.password"), "hunter2");  // its own secret
  EXPECT_EQ(mail->getString("mail.extra.undeclared"), "yes");    // its namespace
  EXPECT_EQ(mail->getString("accounts.plan"), "active");         // declared, other prefix
  EXPECT_EQ(mail->getString("other.url"), "https://x.example");  // shared by another plugin
  EXPECT_EQ(mail->getString("data.dir"), "/var/lib/svc");        // shared by the kernel
  // Expanded against the whole configuration.
  EXPECT_EQ(mail->getString("mail.spool"), "/var/lib/svc/spool");
}

TEST(ScopedConfiguration, EverythingElseReadsAsUnset) {
  Fixture f;
  auto other = f.viewOf("other", f.other);
  for (const char* key : {"admin.token", "db.url", "server.threads", "mail.relay.password",
                          "mail.extra.undeclared", "accounts.plan"}) {
    EXPECT_FALSE(other->has(key)) << key;
    EXPECT_THROW(other->getString(key), Poco::NotFoundException) << key;
    EXPECT_EQ(other->getString(key, "default"), "default") << key;
  }
  // A secret is never shared, whatever its declaration says.
  auto mail = f.viewOf("mail", f.mail);
  EXPECT_FALSE(mail->has("other.secret"));
  EXPECT_FALSE(mail->has("db.url"));
  EXPECT_EQ(other->getString("other.secret"), "s");
}

TEST(ScopedConfiguration, EnumeratesOnlyWhatItMayRead) {
  Fixture f;
  auto other = f.viewOf("other", f.other);
  Poco::Util::AbstractConfiguration::Keys top;
  other->keys(top);
  std::sort(top.begin(), top.end());
  EXPECT_EQ(top, (Poco::Util::AbstractConfiguration::Keys{"data", "mail", "other"}));
  Poco::Util::AbstractConfiguration::Keys mail;
  other->keys("mail", mail);
  EXPECT_EQ(mail, (Poco::Util::AbstractConfiguration::Keys{"domains"}));
}

TEST(ScopedConfiguration, IsReadOnly) {
  Fixture f;
  auto mail = f.viewOf("mail", f.mail);
  EXPECT_THROW(mail->setString("mail.domains", "b.example"), Poco::InvalidAccessException);
  EXPECT_EQ(f.all->getString("mail.domains"), "a.example");
}
