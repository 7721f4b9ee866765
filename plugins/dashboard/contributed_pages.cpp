#include "contributed_pages.h"

#include "html.h"

#include <svc/sdk/util.h>

#include <Poco/JSON/Array.h>
#include <Poco/JSON/Object.h>
#include <Poco/JSON/Stringifier.h>

#include <sstream>

namespace svc::plugins::dashboard {

namespace {

std::string json(const Poco::Dynamic::Var& value) {
  std::ostringstream out;
  Poco::JSON::Stringifier::stringify(value, out);
  return out.str();
}

}  // namespace

void ContributedPages::registerIn(sdk::RouteRegistry& routes) {
  std::string path;
  for (std::size_t depth = 1; depth <= PageRegistry::kMaxSegments; ++depth) {
    path += "/{s" + std::to_string(depth) + "}";
    site_.add(routes, "GET", path, "A page another plugin adds to the dashboard.",
              [this](sdk::Request& r, Visitor& v) { return serve(r, v); });
  }
  // Public: a script is code anyone may read, and the sign-in page could load one too.
  sdk::Route route{"GET",
                   site_.prefix() + "/" + kScriptsSegment + "/{plugin}/{name}",
                   sdk::AuthNeed::kNone,
                   sdk::BodyKind::kJson,
                   0,
                   "A script plugins' dashboard pages share.",
                   [this](sdk::Request& r) { return script(r); }};
  route.described = false;
  routes.add(std::move(route));
}

sdk::Response ContributedPages::script(sdk::Request& r) const {
  auto s = pages_->script(r.params.at("plugin") + "/" + r.params.at("name"));
  if (!s) {
    throw sdk::HttpError(404, "not_found", "No route matches " + sdk::quoteForDetail(r.path) + ".");
  }
  sdk::Response out = sdk::Response::text(200, s->body, "text/javascript; charset=utf-8");
  // Pages ask for it under its content's hash, so a browser may keep that for good; any other
  // URL is checked again each time.
  out.headers.emplace_back("Cache-Control", r.queryParam("v") == s->version
                                                ? "public, max-age=31536000, immutable"
                                                : "no-cache");
  out.headers.emplace_back("X-Content-Type-Options", "nosniff");
  // A page ignores a script's own policy; a worker runs under it. A worker computes: it loads,
  // fetches and connects to nothing (what it holds, a key say, has no way out but the page).
  out.headers.emplace_back(
      "Content-Security-Policy",
      s->webassembly ? "default-src 'none'; script-src 'wasm-unsafe-eval'" : "default-src 'none'");
  return out;
}

Page ContributedPages::serve(sdk::Request& r, Visitor& v) {
  std::vector<std::string> segments;
  for (std::size_t i = 1; r.params.count("s" + std::to_string(i)); ++i) {
    segments.push_back(r.params.at("s" + std::to_string(i)));
  }
  auto match = pages_->match(segments);
  if (!match) {
    throw sdk::HttpError(404, "not_found", "No route matches " + sdk::quoteForDetail(r.path) + ".");
  }
  if (!v.user) {
    std::string here = site_.prefix();
    for (const auto& s : segments) here += "/" + urlEncode(s);
    return site_.signInFirst(here);
  }
  if (v.user->account_id.empty()) return site_.noAccount();
  const sdk::DashboardPage& page = *match->page;
  if (page.accept && !page.accept(match->params)) return site_.message(404, "Not found", "");

  Poco::JSON::Object params;
  for (const auto& [name, value] : match->params) params.set(name, value);
  Poco::JSON::Array links;
  for (const auto& link : pages_->links()) {
    Poco::JSON::Object l;
    l.set("path", link.path);
    l.set("param", link.param);
    l.set("label", link.label);
    links.add(l);
  }
  Page p;
  Poco::JSON::Object workers;
  for (const auto& name : page.scripts) {
    auto s = pages_->script(name);
    if (!s) {
      return site_.message(503, "Not available",
                           "<p class=\"error\">This page needs the script " + escape(name) +
                               ", which no loaded plugin provides.</p>");
    }
    const std::string url =
        site_.prefix() + "/" + kScriptsSegment + "/" + s->name + "?v=" + s->version;
    if (s->worker) {
      workers.set(s->name, url);
      p.workers = true;
    } else {
      p.script_urls.push_back(url);
      p.webassembly = p.webassembly || s->webassembly;
    }
  }
  p.title = page.title;
  p.content = "<div class=\"card\"><h1 id=\"view-title\">" + escape(page.title) +
              "</h1><div id=\"view\" data-prefix=\"" + escape(site_.prefix()) +
              "\" data-params=\"" + escape(json(params)) + "\" data-links=\"" +
              escape(json(links)) + "\" data-workers=\"" + escape(json(workers)) +
              "\" data-csrf=\"" + escape(v.csrf) + "\"><p class=\"muted\">Loading…</p></div></div>";
  p.script = page.script;
  return p;
}

}  // namespace svc::plugins::dashboard
