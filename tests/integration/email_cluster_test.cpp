// Several svcd on one MariaDB database (a Galera cluster, or machines behind a load balancer),
// each with a data directory of its own: an attachment one of them stores, received over SMTP
// or uploaded, is downloaded byte for byte from another (issue 39). Attachment bytes live in the
// database there (plugins/email/db_blob_store.h); on SQLite, where one svcd owns the database,
// they stay files, so these cases run on MariaDB only.
#include "email_fixture.h"
#include "harness.h"

#include <Poco/File.h>

#include <gtest/gtest.h>

#include <memory>
#include <string>

namespace svc::testing {
namespace {

class EmailCluster : public Email {
 protected:
  void SetUp() override {
    if (databaseKind() != "mariadb") GTEST_SKIP() << "one svcd owns a SQLite database";
    Email::SetUp();
    Svcd::Options o;
    o.plugins = {"auth", "identities", "email"};
    o.args = {"--set", "email.domains=agents.test,alt.test"};
    o.db_url = svcd_->dbUrl();
    other_ = std::make_unique<Svcd>(o);
    ASSERT_TRUE(other_->start()) << other_->log();
    ASSERT_NE(other_->dataDir(), svcd_->dataDir());
  }

  HttpReply download(Svcd& at, const std::string& uuid) {
    return http(at.port(), "GET", "/api/email-attachments/" + uuid + "/download/", "",
                bearer(key_));
  }

  std::unique_ptr<Svcd> other_;
};

TEST_F(EmailCluster, MailReceivedByOneSvcdHasItsAttachmentDownloadedFromAnother) {
  Ident sink = identity("Sink", "sink");
  const std::string bytes = attachmentBytes();  // 3 MiB: twelve of the database's chunks
  ASSERT_NE(smtp(envelope("a@example.com", "sink@agents.test", mailWithAttachment(bytes)))
                .find("250 2.0.0 Ok: stored"),
            std::string::npos);
  auto list = messages("identity=" + sink.uuid);
  ASSERT_EQ(list->size(), 1u);
  auto attachments =
      message(list->getObject(0)->getValue<std::string>("id"))->getArray("attachments");
  ASSERT_EQ(attachments->size(), 1u);
  const std::string uuid = attachments->getObject(0)->getValue<std::string>("uuid");

  for (Svcd* at : {other_.get(), svcd_.get()}) {
    auto reply = download(*at, uuid);
    ASSERT_EQ(reply.status, 200) << reply.body.substr(0, 300);
    EXPECT_EQ(reply.body.size(), bytes.size());
    EXPECT_TRUE(reply.body == bytes) << "byte for byte";
    EXPECT_EQ(reply.header("content-length"), std::to_string(bytes.size()));
    EXPECT_NE(reply.header("content-disposition").find("big.bin"), std::string::npos);
  }
  // Nothing of it in either svcd's own directory.
  EXPECT_FALSE(Poco::File(svcd_->dataDir() + "/email/blobs").exists());
  EXPECT_FALSE(Poco::File(other_->dataDir() + "/email/blobs").exists());
}

TEST_F(EmailCluster, AnUploadToOneSvcdIsDownloadedFromAnother) {
  const std::string bytes = attachmentBytes().substr(1000, 600 * 1024);
  auto up =
      http(other_->port(), "POST", "/api/email-attachments/?filename=notes.bin", bytes,
           {{"Authorization", "Bearer " + key_}, {"Content-Type", "application/octet-stream"}});
  ASSERT_EQ(up.status, 201) << up.body;
  auto reply = download(*svcd_, up.json()->getValue<std::string>("uuid"));
  ASSERT_EQ(reply.status, 200) << reply.body.substr(0, 300);
  EXPECT_TRUE(reply.body == bytes);
}

}  // namespace
}  // namespace svc::testing
