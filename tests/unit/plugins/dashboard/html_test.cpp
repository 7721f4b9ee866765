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
  PageFrame f{"T", "/dashboard", "ann@example.com", "c", "N1", {{"/notes", "Notes & <b>"}}, "", {}};
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
  PageFrame f{"Sign in", "/dashboard", "", "c", "N1", {{"/notes", "Notes"}}, "", {}};
  EXPECT_FALSE(has(page(f, ""), "/dashboard/notes"));
}

TEST(DashboardLayout, APagesScriptRunsUnderTheNonceWithSvc) {
  PageFrame f{"T", "/dashboard", "ann@example.com", "c", "N2", {}, "svc.show([]);", {}};
  const std::string html = page(f, "");
  EXPECT_TRUE(
      has(html, "<script nonce=\"N2\">(function (svc) {\nsvc.show([]);\n})(svc);</script>"));
}

TEST(DashboardLayout, SharedScriptsLoadInOrderUnderTheNonceBeforeThePagesScript) {
  PageFrame f{"T",
              "/dashboard",
              "ann@example.com",
              "c",
              "N3",
              {},
              "svc.show([]);",
              {"/dashboard/scripts/a.js?v=1&x", "/dashboard/scripts/b.js?v=2"}};
  const std::string html = page(f, "");
  const auto a =
      html.find("<script nonce=\"N3\" src=\"/dashboard/scripts/a.js?v=1&amp;x\"></script>");
  const auto b = html.find("<script nonce=\"N3\" src=\"/dashboard/scripts/b.js?v=2\"></script>");
  const auto own = html.find("(function (svc) {");
  ASSERT_NE(a, std::string::npos);
  ASSERT_NE(b, std::string::npos);
  ASSERT_NE(own, std::string::npos);
  EXPECT_LT(a, b);
  EXPECT_LT(b, own);
  // After the dashboard's own script, which defines svc.
  EXPECT_LT(html.find("var svc = "), a);
}

}  // namespace
}  // namespace svc::plugins::dashboard
