// The commands svcctl gained to cover every described route (issue 19), each run against a real
// svcd: attachments, the message list and read marks, inboxes and domains; an identity's voice
// agent, whoami and tokens; contacts show, secrets show, phones show, the SMS list and marks.
#include "svcctl_run.h"

#include <Poco/FileStream.h>
#include <Poco/JSON/Array.h>
#include <Poco/JSON/Parser.h>

#include <gtest/gtest.h>

#include <fstream>
#include <memory>
#include <regex>
#include <sstream>

namespace svc::testing {
namespace {

class SvcctlCommands : public ::testing::Test {
 protected:
  void SetUp() override {
    Svcd::Options o;
    o.plugins = {"auth", "identities", "email", "sms", "contacts", "vault", "secrets"};
    o.args = {"--set", "email.domains=agents.test", "--set",
              "identities.voice.allow_private_urls=true"};
    svcd_ = std::make_unique<Svcd>(o);
    ASSERT_TRUE(svcd_->start()) << svcd_->log();
    auto login = operatorLogin(*svcd_, "cmds@example.com");
    key_ = login->optValue<std::string>("management_key", "");
    refresh_ = login->optValue<std::string>("refresh", "");
    ASSERT_FALSE(key_.empty());
  }
  std::pair<int, std::string> ctl(const std::string& args, bool stdout_only = false) {
    return runSvcctl(*svcd_, key_, args, stdout_only);
  }
  Poco::JSON::Object::Ptr json(const std::string& args) {
    auto [rc, out] = ctl("--json " + args, true);
    EXPECT_EQ(rc, 0) << args << ": " << out;
    try {
      return Poco::JSON::Parser().parse(out).extract<Poco::JSON::Object::Ptr>();
    } catch (const Poco::Exception&) {
      ADD_FAILURE() << args << " printed no JSON object: " << out;
      return new Poco::JSON::Object;
    }
  }
  // Writes `text` to a file in the data directory. @return its path.
  std::string file(const std::string& name, const std::string& text) {
    const std::string path = svcd_->dataDir() + "/" + name;
    std::ofstream(path, std::ios::binary) << text;
    return path;
  }
  std::unique_ptr<Svcd> svcd_;
  std::string key_, refresh_;
};

TEST_F(SvcctlCommands, AttachmentsMessageListReadMarksInboxesAndDomains) {
  const std::string ann = json("identities create Ann --email ann")->getValue<std::string>("uuid");
  const std::string id = " --identity " + ann;
  // An attachment uploaded, described and downloaded byte for byte.
  auto uploaded = json("mail attach '" + file("note.txt", "hello\nbytes") + "'" + id);
  const std::string attachment = uploaded->getValue<std::string>("uuid");
  EXPECT_EQ(uploaded->getValue<int>("size"), 11);
  auto [show_rc, shown] = ctl("mail attachment " + attachment + id);
  EXPECT_EQ(show_rc, 0) << shown;
  EXPECT_NE(shown.find("note.txt (11 bytes"), std::string::npos) << shown;
  const std::string out = svcd_->dataDir() + "/out.bin";
  EXPECT_EQ(ctl("mail download " + attachment + id + " --output '" + out + "'").first, 0);
  std::ifstream in(out, std::ios::binary);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), "hello\nbytes");

  // The message list, and marks read and unread (PATCH, and PUT with --replace).
  json("mail send --to ann@agents.test --subject 'Code 482913' --body hi" + id);
  auto incoming = json("mail list --direction incoming --unread" + id)->getArray("results");
  ASSERT_EQ(incoming->size(), 1u);
  const std::string message = incoming->getObject(0)->getValue<std::string>("id");
  EXPECT_EQ(incoming->getObject(0)->getValue<std::string>("extracted_code"), "482913");
  EXPECT_EQ(ctl("mail mark " + message + " --read" + id, true).second, message + " read\n");
  EXPECT_EQ(json("mail list --direction incoming --unread" + id)->getArray("results")->size(), 0u);
  EXPECT_EQ(ctl("mail mark " + message + " --unread --replace" + id, true).second,
            message + " unread\n");
  EXPECT_EQ(ctl("mail mark " + message + id).first, 2) << "--read or --unread is needed";

  // Inboxes: the primary one, availability, another address (on an active plan).
  auto inboxes = json("inboxes list" + id)->getArray("results");
  ASSERT_EQ(inboxes->size(), 1u);
  EXPECT_TRUE(inboxes->getObject(0)->getValue<bool>("is_primary"));
  EXPECT_EQ(ctl("inboxes available ann@agents.test" + id).first, 1);
  EXPECT_EQ(ctl("inboxes available free@agents.test" + id).first, 0);
  const std::string account = json("whoami")->getObject("account")->getValue<std::string>("id");
  ASSERT_EQ(ctl("accounts plan " + account + " active").first, 0);
  auto added = json("inboxes add --email second" + id);
  EXPECT_EQ(added->getValue<std::string>("address"), "second@agents.test");
  auto [inbox_rc, inbox] = ctl("inboxes show " + added->getValue<std::string>("id") + id);
  EXPECT_EQ(inbox_rc, 0) << inbox;
  EXPECT_NE(inbox.find("second@agents.test"), std::string::npos) << inbox;

  // A custom domain: added with the record to publish, listed, shown, deleted.
  auto [domain_rc, domain] = ctl("domains add custom.example");
  EXPECT_EQ(domain_rc, 0) << domain;
  EXPECT_NE(domain.find("custom.example custom pending\npublish: _svc-verification.custom.example "
                        "TXT \""),
            std::string::npos)
      << domain;
  EXPECT_NE(ctl("domains list").second.find("custom.example"), std::string::npos);
  EXPECT_EQ(json("domains show custom.example")->getValue<std::string>("status"), "pending");
  EXPECT_EQ(ctl("domains delete custom.example").first, 0);
  auto [gone_rc, gone] = ctl("domains show custom.example");
  EXPECT_EQ(gone_rc, 1);
  EXPECT_NE(gone.find("svcctl: 404 "), std::string::npos) << gone;
}

TEST_F(SvcctlCommands, VoiceAgentWhoamiAndTokens) {
  const std::string uuid = json("identities create Caller")->getValue<std::string>("uuid");
  auto [set_rc, set] = ctl("identities voice-agent set " + uuid +
                           " --response-url http://127.0.0.1:9/voice --enable");
  EXPECT_EQ(set_rc, 0) << set;
  EXPECT_EQ(set, "enabled http://127.0.0.1:9/voice\n");
  EXPECT_EQ(ctl("identities voice-agent show " + uuid).second,
            "enabled http://127.0.0.1:9/voice\n");
  EXPECT_EQ(ctl("identities voice-agent set " + uuid + " --disable").second,
            "disabled http://127.0.0.1:9/voice\n");
  EXPECT_EQ(ctl("identities update " + uuid + " --replace --name Renamed").first, 0);
  EXPECT_EQ(json("identities show " + uuid)->getValue<std::string>("name"), "Renamed");

  auto [who_rc, who] = ctl("whoami");
  EXPECT_EQ(who_rc, 0) << who;
  EXPECT_NE(who.find("kind:     management\n"), std::string::npos) << who;
  EXPECT_NE(who.find("user:     cmds@example.com\n"), std::string::npos) << who;
  EXPECT_GT(json("tokens jwks")->getArray("keys")->size(), 0u);

  // A refresh token from stdin: exchanged, then the new one revoked, and then refused.
  auto tokens = json("tokens refresh < '" + file("refresh", refresh_ + "\n") + "'");
  const std::string fresh = tokens->getValue<std::string>("refresh");
  EXPECT_FALSE(tokens->getValue<std::string>("access").empty());
  EXPECT_EQ(ctl("tokens revoke < '" + file("fresh", fresh) + "'", true).second, "revoked\n");
  auto [spent_rc, spent] = ctl("tokens refresh < '" + file("fresh2", fresh) + "'");
  EXPECT_EQ(spent_rc, 1) << spent;
  EXPECT_EQ(ctl("tokens refresh < /dev/null").first, 2) << "no token on stdin";
}

TEST_F(SvcctlCommands, ContactsSecretsPhonesAndTheSmsList) {
  const std::string ann = json("identities create Ann")->getValue<std::string>("uuid"),
                    bob = json("identities create Bob")->getValue<std::string>("uuid");
  auto contact = json("contacts add --email ada@example.com --identity " + ann);
  auto [contact_rc, shown] =
      ctl("contacts show " + contact->getValue<std::string>("uuid") + " --identity " + ann);
  EXPECT_EQ(contact_rc, 0) << shown;
  EXPECT_NE(shown.find("email: ada@example.com"), std::string::npos) << shown;

  ASSERT_EQ(
      ctl("secrets set TOKEN --identity " + ann + " < '" + file("value", "s3cret\n") + "'").first,
      0);
  const std::string secret = json("secrets list --identity " + ann)
                                 ->getArray("results")
                                 ->getObject(0)
                                 ->getValue<std::string>("uuid");
  auto [secret_rc, revealed] = ctl("secrets show " + secret + " --reveal --identity " + ann, true);
  EXPECT_EQ(secret_rc, 0) << revealed;
  EXPECT_NE(revealed.find("TOKEN (identity " + ann), std::string::npos) << revealed;
  EXPECT_NE(revealed.find("\ns3cret\n"), std::string::npos) << revealed;
  EXPECT_FALSE(json("secrets show " + secret + " --identity " + ann)->has("value"));
  // --replace sends PUT: notes not given are dropped.
  ctl("secrets set TOKEN --notes kept --identity " + ann + " < '" + file("v2", "two") + "'");
  ctl("secrets set TOKEN --replace --identity " + ann + " < '" + file("v3", "three") + "'");
  auto replaced = json("secrets get TOKEN --reveal --identity " + ann);
  EXPECT_EQ(replaced->getValue<std::string>("value"), "three");
  EXPECT_TRUE(replaced->isNull("notes") || replaced->getValue<std::string>("notes").empty());

  auto ann_phone = json("phones provision " + ann)->getObject("phone");
  std::string bob_number = ctl("phones provision " + bob, true).second;
  bob_number.pop_back();
  auto [phone_rc, phone] = ctl("phones show " + ann_phone->getValue<std::string>("id"));
  EXPECT_EQ(phone_rc, 0) << phone;
  EXPECT_NE(phone.find(ann_phone->getValue<std::string>("number")), std::string::npos) << phone;
  ASSERT_EQ(ctl("sms send --to " + ann_phone->getValue<std::string>("number") + " --identity " +
                bob + " 'Code 730521'")
                .first,
            0);
  auto listed = json("sms list --direction incoming --identity " + ann)->getArray("results");
  ASSERT_EQ(listed->size(), 1u);
  const std::string sms = listed->getObject(0)->getValue<std::string>("id");
  EXPECT_EQ(listed->getObject(0)->getValue<std::string>("from_number"), bob_number);
  EXPECT_EQ(ctl("sms mark " + sms + " --read --identity " + ann, true).second, sms + " read\n");
  EXPECT_EQ(json("sms list --unread --identity " + ann)->getArray("results")->size(), 0u);
  EXPECT_EQ(ctl("sms mark " + sms + " --unread --replace --identity " + ann, true).second,
            sms + " unread\n");
}

}  // namespace
}  // namespace svc::testing
