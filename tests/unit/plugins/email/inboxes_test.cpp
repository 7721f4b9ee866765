// Inbox addresses: what a client may ask for, and the readable start of a generated one.
#include "inboxes.h"
#include "attachments.h"

#include <gtest/gtest.h>

namespace svc::plugins::email {
namespace {

std::string refusal(const std::string& raw) {
  try {
    requestedAddress("email", raw, "mail.example.com");
  } catch (const sdk::HttpError& e) {
    EXPECT_EQ(e.status(), 400);
    return e.errors().count("email") ? e.errors().at("email").front() : "?";
  }
  return "";
}

TEST(Inboxes, ARequestedAddressIsALocalPartOnTheDefaultDomainOrAFullAddress) {
  EXPECT_EQ(requestedAddress("email", " Support ", "mail.example.com"), "support@mail.example.com");
  EXPECT_EQ(requestedAddress("email", "Sales@Custom.Example", "mail.example.com"),
            "sales@custom.example");
}

TEST(Inboxes, ARequestedAddressFollowsTheInboxRule) {
  EXPECT_EQ(refusal("a\x01"
                    "b"),
            "must not contain control characters");
  EXPECT_EQ(refusal("a+b"), kLocalPartRule);
  EXPECT_EQ(refusal(".ab"), kLocalPartRule);
  EXPECT_EQ(refusal("a..b"), kLocalPartRule);
  EXPECT_EQ(refusal("ab@localhost"), "not a valid domain");
  const std::string label(63, 'd');
  EXPECT_EQ(refusal(std::string(64, 'a') + "@" + label + "." + label + "." + label + ".com"),
            "the address must be at most 254 characters");
  EXPECT_EQ(refusal("a.b_c-d"), "");
}

TEST(Inboxes, AGeneratedAddressStartsWithTheNameAsASlug) {
  EXPECT_EQ(addressSlug("Support Bot!"), "support-bot");
  EXPECT_EQ(addressSlug("  --Ops -- Team--  "), "ops-team");
  EXPECT_EQ(addressSlug("Zoë"), "zo");
  EXPECT_EQ(addressSlug("!!!"), "agent");
  EXPECT_EQ(addressSlug(""), "agent");
  EXPECT_EQ(addressSlug(std::string(50, 'a')), std::string(40, 'a'));
  EXPECT_EQ(addressSlug(std::string(39, 'a') + " b"), std::string(39, 'a'));
}

TEST(Attachments, ADownloadKeepsItsNameInBothFilenameForms) {
  EXPECT_EQ(contentDisposition("report.pdf"),
            "attachment; filename=\"report.pdf\"; filename*=UTF-8''report.pdf");
  EXPECT_EQ(contentDisposition("Größe \"x\" 1+1=2.txt"),
            "attachment; filename=\"Gr____e _x_ 1+1=2.txt\"; "
            "filename*=UTF-8''Gr%C3%B6%C3%9Fe%20%22x%22%201%2B1%3D2.txt");
  // Everything outside RFC 5987's attr-char is encoded, so the value never ends early.
  EXPECT_EQ(contentDisposition("a;b,c/d\\e'f%g"),
            "attachment; filename=\"a;b,c/d\\e'f%g\"; "
            "filename*=UTF-8''a%3Bb%2Cc%2Fd%5Ce%27f%25g");
}

}  // namespace
}  // namespace svc::plugins::email
