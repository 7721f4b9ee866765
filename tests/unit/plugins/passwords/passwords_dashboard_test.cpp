// The passwords plugin's dashboard page: where it is, what it accepts, and that it hands its
// fields to the vault's script, which lists names only and opens values in the page.
#include "passwords_dashboard.h"

#include <svc/sdk/vault.h>

#include <gtest/gtest.h>

namespace svc::plugins::passwords {
namespace {

TEST(PasswordsDashboard, AnIdentitysEntriesThroughTheVaultsScript) {
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
  // The vault's script lists names only and opens and seals values in the page; this page says
  // which fields are the name and which are protected.
  EXPECT_EQ(page.scripts,
            (std::vector<std::string>{sdk::kVaultDashboardScript, sdk::kVaultWorkerScript}));
  for (const char* part : {"svcVault.records(svc", "'/api/passwords/'", "field: 'domain'",
                           "field: 'username'", "field: 'password'", "field: 'notes'"}) {
    EXPECT_NE(page.script.find(part), std::string::npos) << part;
  }
  EXPECT_EQ(page.script.find("innerHTML"), std::string::npos);
}

}  // namespace
}  // namespace svc::plugins::passwords
