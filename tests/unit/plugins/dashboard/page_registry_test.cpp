// The registry of pages other plugins add to the dashboard: which page a path is, what the
// navigation lists and in which order, and which pages it refuses.
#include "page_registry.h"

#include <gtest/gtest.h>

#include <stdexcept>

namespace svc::plugins::dashboard {
namespace {

sdk::DashboardPage page(const std::string& path, const std::string& title = "T",
                        const std::string& nav = "", int order = 100) {
  sdk::DashboardPage p;
  p.path = path;
  p.title = title;
  p.nav_label = nav;
  p.nav_order = order;
  p.script = "svc.show([]);";
  return p;
}

PageRegistry registry() {
  return PageRegistry({"login", "logout", "device", "keys"});
}

TEST(DashboardPageRegistry, MatchesStaticAndParameterSegments) {
  PageRegistry r = registry();
  r.add(page("/identities", "Identities"));
  r.add(page("/identities/{identity}/inbox", "Inbox"));
  r.add(page("/identities/{identity}/threads/{thread}", "Thread"));

  auto list = r.match({"identities"});
  ASSERT_TRUE(list);
  EXPECT_EQ(list->page->title, "Identities");
  EXPECT_TRUE(list->params.empty());

  auto thread = r.match({"identities", "abc", "threads", "def"});
  ASSERT_TRUE(thread);
  EXPECT_EQ(thread->page->title, "Thread");
  EXPECT_EQ(thread->params.at("identity"), "abc");
  EXPECT_EQ(thread->params.at("thread"), "def");

  EXPECT_FALSE(r.match({"identities", "abc"}));
  EXPECT_FALSE(r.match({"identities", "abc", "outbox"}));
  EXPECT_FALSE(r.match({"nothing"}));
  EXPECT_FALSE(r.match({}));
}

TEST(DashboardPageRegistry, StaticSegmentWinsOverParameter) {
  PageRegistry r = registry();
  r.add(page("/notes/{note}", "Note"));
  r.add(page("/notes/new", "New note"));
  EXPECT_EQ(r.match({"notes", "new"})->page->title, "New note");
  EXPECT_EQ(r.match({"notes", "n1"})->page->title, "Note");
  EXPECT_EQ(r.match({"notes", "n1"})->params.at("note"), "n1");
}

TEST(DashboardPageRegistry, RefusesAPageThatMatchesTheSamePaths) {
  PageRegistry r = registry();
  r.add(page("/identities/{identity}/inbox"));
  EXPECT_THROW(r.add(page("/identities/{identity}/inbox")), std::invalid_argument);
  // Parameter names aside, the same paths: refused too.
  EXPECT_THROW(r.add(page("/identities/{uuid}/inbox")), std::invalid_argument);
  // Different shapes are fine.
  EXPECT_NO_THROW(r.add(page("/identities/{identity}/sms")));
  EXPECT_NO_THROW(r.add(page("/identities/{identity}")));
}

TEST(DashboardPageRegistry, RefusesMalformedAndReservedPaths) {
  PageRegistry r = registry();
  for (const char* bad :
       {"", "/", "identities", "/a//b", "/a/", "/{x}", "/a/{X}", "/a/{x}/{x}", "/a/{}", "/a/b%2f",
        "/a/..", "/a/b?c", "/a/1/2/3/4/5/6/7/8", "/keys", "/login/extra", "/device/{x}"}) {
    EXPECT_THROW(r.add(page(bad)), std::invalid_argument) << bad;
  }
  EXPECT_NO_THROW(r.add(page("/a/1/2/3/4/5/6/7")));  // eight segments: the deepest
}

TEST(DashboardPageRegistry, RefusesWhatThePageCannotBe) {
  PageRegistry r = registry();
  EXPECT_THROW(r.add(page("/a", "")), std::invalid_argument);              // no title
  EXPECT_THROW(r.add(page("/a/{x}", "T", "Nav")), std::invalid_argument);  // nav with params
  auto closing = page("/a");
  closing.script = "var s = '</SCRIPT><script>alert(1)';";
  EXPECT_THROW(r.add(closing), std::invalid_argument);
}

TEST(DashboardPageRegistry, NavigationIsOrderedByOrderThenLabel) {
  PageRegistry r = registry();
  r.add(page("/zeta", "Z", "Zeta"));
  r.add(page("/hidden", "Hidden"));
  r.add(page("/alpha", "A", "Alpha"));
  r.add(page("/first", "F", "Yet first", 10));
  r.add(page("/item/{id}", "Item"));
  auto nav = r.navigation();
  ASSERT_EQ(nav.size(), 3u);
  EXPECT_EQ(nav[0]->nav_label, "Yet first");
  EXPECT_EQ(nav[1]->nav_label, "Alpha");
  EXPECT_EQ(nav[2]->nav_label, "Zeta");
}

TEST(DashboardPageRegistry, LinksArePagesWithOneParameter) {
  PageRegistry r = registry();
  r.add(page("/identities", "Identities", "Identities"));
  r.add(page("/identities/{identity}/threads/{thread}", "Thread"));
  r.add(page("/identities/{identity}/sms", "Texts", "", 200));
  r.add(page("/identities/{identity}/inbox", "Inbox"));
  auto links = r.links();
  ASSERT_EQ(links.size(), 2u);
  EXPECT_EQ(links[0].path, "/identities/{identity}/inbox");
  EXPECT_EQ(links[0].param, "identity");
  EXPECT_EQ(links[0].label, "Inbox");
  EXPECT_EQ(links[1].label, "Texts");
}

TEST(DashboardPageRegistry, SharedScriptsAreFoundByNameWithAVersionOfTheirContent) {
  PageRegistry r = registry();
  r.addScript({"lib", "lib-1.2.js", "var a = 1;", true});
  r.addScript({"lib", "other.js", "var b = 2;", false, true});
  auto lib = r.script("lib/lib-1.2.js");
  ASSERT_TRUE(lib);
  EXPECT_EQ(lib->name, "lib/lib-1.2.js");
  EXPECT_EQ(lib->body, "var a = 1;");
  EXPECT_TRUE(lib->webassembly);
  EXPECT_FALSE(lib->worker);
  EXPECT_TRUE(r.script("lib/other.js")->worker);
  EXPECT_EQ(lib->version.size(), 16u);
  EXPECT_NE(lib->version, r.script("lib/other.js")->version);  // a change of content, a new URL
  EXPECT_FALSE(r.script("missing.js"));
  EXPECT_FALSE(r.script("lib-1.2.js"));  // only under its plugin's name
  EXPECT_THROW(r.addScript({"lib", "lib-1.2.js", "var c;", false}), std::invalid_argument);
}

// Script names were one namespace for every plugin: whichever plugin added `util.js` first had
// it, and a page naming `util.js` loaded whoever's that was. Each plugin's names are its own now.
TEST(DashboardPageRegistry, ScriptNamesAreEachPluginsOwn) {
  PageRegistry r = registry();
  r.addScript({"vault", "util.js", "var vault = 1;", false});
  EXPECT_NO_THROW(r.addScript({"mail", "util.js", "var mail = 1;", false}));
  EXPECT_EQ(r.script("vault/util.js")->body, "var vault = 1;");
  EXPECT_EQ(r.script("mail/util.js")->body, "var mail = 1;");
  EXPECT_FALSE(r.script("util.js"));
}

TEST(DashboardPageRegistry, RefusesMalformedScripts) {
  PageRegistry r = registry();
  for (const char* name : {"", ".js", "Lib.js", "lib", "lib.css", "-lib.js", ".hidden.js", "a/b.js",
                           "a b.js", "../x.js"}) {
    EXPECT_THROW(r.addScript({"p", name, "x", false}), std::invalid_argument) << name;
  }
  for (const char* plugin : {"", "A", "a/b", "..", "1a", "a b"}) {
    EXPECT_THROW(r.addScript({plugin, "ok.js", "x", false}), std::invalid_argument) << plugin;
  }
  EXPECT_THROW(r.addScript({"p", "ok.js", "", false}), std::invalid_argument);
  EXPECT_THROW(r.addScript({"p", std::string(62, 'a') + ".js", "x", false}), std::invalid_argument);
  EXPECT_NO_THROW(r.addScript({"p", std::string(61, 'a') + ".js", "x", false}));
}

}  // namespace
}  // namespace svc::plugins::dashboard
