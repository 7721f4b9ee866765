// The passwords plugin's dashboard page: where it is, what it accepts, and that it shows names
// only.
#include "passwords_dashboard.h"

#include <gtest/gtest.h>

namespace svc::plugins::passwords {
namespace {

TEST(PasswordsDashboard, AnIdentitysEntriesByNameOnly) {
  auto pages = dashboardPages();
  ASSERT_EQ(pages.size(), 1u);
  const sdk::DashboardPage& page = pages.front();
  EXPECT_EQ(page.path, "/identities/{identity}/passwords");
  EXPECT_TRUE(page.nav_label.empty());
  std::map<std::string, std::string> params = {
      {"identity", "AAAAAAAA-1111-4000-8000-000000000000"}};
  ASSERT_TRUE(page.accept(params));
  EXPECT_EQ(params["identity"], "aaaaaaaa-1111-4000-8000-000000000000");
  std::map<std::string, std::string> bad = {{"identity", "not-a-uuid"}};
  EXPECT_FALSE(page.accept(bad));
  // The script reads the list but never shows a protected field, nor writes HTML.
  for (const char* field : {".username", ".password", ".notes", "innerHTML"}) {
    EXPECT_EQ(page.script.find(field), std::string::npos) << field;
  }
  EXPECT_NE(page.script.find("e.domain"), std::string::npos);
}

}  // namespace
}  // namespace svc::plugins::passwords
