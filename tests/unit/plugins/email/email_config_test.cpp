// The email plugin's configuration: read once from the declared keys, whose defaults live only in
// the declarations (the kernel sets them; so does this test).
#include "email_config.h"

#include <Poco/AutoPtr.h>
#include <Poco/Util/MapConfiguration.h>

#include <gtest/gtest.h>

#include <map>
#include <stdexcept>

namespace svc::plugins::email {
namespace {

// The plugin's view of the configuration: the declared defaults, then the given values.
EmailConfig readWith(const std::map<std::string, std::string>& values) {
  Poco::AutoPtr<Poco::Util::MapConfiguration> c = new Poco::Util::MapConfiguration;
  for (const auto& key : emailConfigKeys()) c->setString(key.key, key.default_value);
  for (const auto& [k, v] : values) c->setString(k, v);
  return EmailConfig::read(*c);
}

TEST(EmailConfig, TheDeclaredDefaultsMakeAWorkingConfiguration) {
  EmailConfig c = readWith({});
  EXPECT_EQ(c.platform_domains, std::vector<std::string>{"mail.localhost"});
  EXPECT_EQ(c.smtp.listen, "127.0.0.1:2525");
  EXPECT_EQ(c.smtp.hostname, "mail.localhost");  // empty: the first domain
  EXPECT_EQ(c.smtp.max_message_bytes, 36700160u);
  EXPECT_EQ(c.smtp.max_recipients, 100);
  EXPECT_EQ(c.smtp.timeout_seconds, 300);
  EXPECT_EQ(c.smtp.idle_timeout_seconds, 30);
  EXPECT_EQ(c.smtp.max_connections, 1000);
  EXPECT_EQ(c.smtp.max_connections_per_address, 20);
  EXPECT_EQ(c.smtp.max_buffered_bytes, 536870912u);
  EXPECT_EQ(c.max_backlog_bytes, 1073741824u);
  EXPECT_EQ(c.relay.host, "");
  EXPECT_EQ(c.relay.port, 587);
  EXPECT_TRUE(c.relay.starttls);
  EXPECT_EQ(c.relay.helo, "mail.localhost");
  EXPECT_EQ(c.max_attachment_bytes, 26214400u);
  EXPECT_EQ(c.sending.per_hour, 60);
  EXPECT_EQ(c.sending.per_day, 500);
  EXPECT_EQ(c.exact_count_limit, 10000);
  EXPECT_TRUE(c.dkim_selector.empty());
  EXPECT_TRUE(c.dns_server.empty());
}

TEST(EmailConfig, EveryKeyIsDeclaredOnceWithADescriptionAndOnlyThePasswordIsSecret) {
  std::set<std::string> seen;
  for (const auto& key : emailConfigKeys()) {
    EXPECT_TRUE(seen.insert(key.key).second) << key.key;
    EXPECT_EQ(key.key.rfind("email.", 0), 0u) << key.key;
    EXPECT_FALSE(key.description.empty()) << key.key;
    EXPECT_EQ(key.secret, key.key == "email.relay.password") << key.key;
  }
}

TEST(EmailConfig, DomainsAreTrimmedLowerCasedAndTheFirstIsTheDefault) {
  EmailConfig c = readWith({{"email.domains", " Mail.Example.COM , ,other.example "},
                            {"email.smtp.hostname", "mx.example.com"}});
  EXPECT_EQ(c.platform_domains, (std::vector<std::string>{"mail.example.com", "other.example"}));
  EXPECT_EQ(c.smtp.hostname, "mx.example.com");
  EXPECT_EQ(c.relay.helo, "mx.example.com");
}

TEST(EmailConfig, RefusesValuesItCannotUseNamingTheKey) {
  auto refuses = [](const std::map<std::string, std::string>& values, const std::string& key) {
    try {
      readWith(values);
      ADD_FAILURE() << "accepted " << key;
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find(key), std::string::npos) << e.what();
    }
  };
  refuses({{"email.domains", "localhost"}}, "email.domains");  // one label: not a domain
  refuses({{"email.domains", " , "}}, "email.domains");
  refuses({{"email.smtp.max_buffered_bytes", "0"}}, "email.smtp.max_buffered_bytes");
  refuses({{"email.smtp.max_backlog_bytes", "-1"}}, "email.smtp.max_backlog_bytes");
  refuses({{"email.messages.exact_count", "-1"}}, "email.messages.exact_count");
  refuses({{"email.dkim.selector", "s1"}}, "email.dkim.key_file");
  refuses({{"email.dkim.key_file", "/k.pem"}}, "email.dkim.selector");
  EXPECT_NO_THROW(readWith({{"email.dkim.selector", "s1"}, {"email.dkim.key_file", "/k.pem"}}));
  EXPECT_NO_THROW(readWith({{"email.smtp.max_backlog_bytes", "0"}}));
}

}  // namespace
}  // namespace svc::plugins::email
