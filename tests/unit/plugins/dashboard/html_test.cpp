// The shared layout: the navigation a signed-in person sees and how a contributed page's script
// is placed (under the response's nonce, as a function of `svc`).
#include "html.h"

#include <gtest/gtest.h>

namespace svc::plugins::dashboard {
namespace {

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(DashboardLayout, NavigationFollowsTheDashboardsOwnEntries) {
  PageFrame f{"T", "/dashboard", "ann@example.com", "c", "N1", {{"/notes", "Notes & <b>"}}, ""};
  const std::string html = page(f, "<p>x</p>");
  const auto keys = html.find(">Keys</a>");
  const auto notes = html.find("<a href=\"/dashboard/notes\">Notes &amp; &lt;b&gt;</a>");
  ASSERT_NE(keys, std::string::npos);
  ASSERT_NE(notes, std::string::npos);
  EXPECT_LT(keys, notes);
  // No page script: only the dashboard's own script.
  EXPECT_FALSE(has(html, "(function (svc) {"));
}

TEST(DashboardLayout, SignedOutPagesHaveNoNavigation) {
  PageFrame f{"Sign in", "/dashboard", "", "c", "N1", {{"/notes", "Notes"}}, ""};
  EXPECT_FALSE(has(page(f, ""), "/dashboard/notes"));
}

TEST(DashboardLayout, APagesScriptRunsUnderTheNonceWithSvc) {
  PageFrame f{"T", "/dashboard", "ann@example.com", "c", "N2", {}, "svc.show([]);"};
  const std::string html = page(f, "");
  EXPECT_TRUE(
      has(html, "<script nonce=\"N2\">(function (svc) {\nsvc.show([]);\n})(svc);</script>"));
}

}  // namespace
}  // namespace svc::plugins::dashboard
