// Dashboard pages: how a plugin shows its part to the signed-in person (the identities plugin its
// list of identities, the email plugin an identity's inbox and threads).
//
// The dashboard plugin offers kDashboardPagesService. A plugin that has pages must not require the
// dashboard (an operator may disable it): it lists kDashboardPagesService.name in
// PluginInfo::uses_services, finds the service in start() and, when it is there, adds its pages.
//
// A page is a path under the dashboard's prefix, a title and a script. The dashboard serves it
// (GET only) to a signed-in person who has an account, with its layout, navigation and
// Content-Security-Policy; everyone else is sent to sign in first. The page's HTML is a card with
// the title (`<h1 id="view-title">`) and an empty container (`<div id="view">`); the script runs
// in the page (under the response's CSP nonce, so it is plain code, never data) as the body of a
// function with one argument, `svc`, the dashboard's small client API:
//
//   svc.prefix            the dashboard's path prefix (`/dashboard`), for links
//   svc.params            the page's path parameters, decoded (`{identity: "..."}`)
//   svc.api(path)         a Promise of the parsed JSON of `GET path`, read with the signed-in
//                         session's cookie (so the page sees exactly what the API lets this person
//                         see); rejects with an Error whose message is fit to show and whose
//                         `status` is the answer's status
//   svc.send(method, path, body, headers)  a Promise of the parsed JSON of a change (`POST
//                         path` with body as JSON, and any more `headers`), made on the session's
//                         cookie with the page's CSRF token (kSessionCsrfHeader, accounts.h), so
//                         only this page can make it; rejects with an Error whose message is the
//                         API's `detail`, and whose `status` and `code` are the answer's status
//                         and the API's `code` (no `status`: no answer came, and the change may
//                         or may not have been made)
//   svc.el(tag, text, attrs)  a new element; text is set with textContent, never parsed as HTML
//   svc.table(headers, rows)  a table of header texts and <tr> elements
//   svc.show(nodes)       replaces the container's content with the nodes
//   svc.fail(error)       shows error.message in the container as an alert
//   svc.title(text)       sets the card's title
//   svc.back(href, text)  puts a "← text" link above the title
//   svc.when(iso)         an ISO 8601 time as `YYYY-MM-DD HH:MM UTC`
//   svc.workers           the URLs of the worker scripts the page names (`{plugin}/{name}` → URL)
//   svc.links(name, value)  links ({href, label}) to every page whose only parameter is `name`,
//                         for that value: the identities page links each identity to the pages
//                         other plugins add under `{identity}` (email's inbox) without naming them
//
// Code that several pages share (a library, a plugin's own helpers) is a script of its own,
// added once with DashboardPages::addScript and named in each page's DashboardPage::scripts as
// `{plugin}/{name}`: scripts are namespaced by the plugin that adds them, so two plugins may each
// have a `util.js`, and a page names exactly whose it loads. The dashboard serves it from this
// server at `{prefix}/scripts/{plugin}/{name}` (public, cached by its content's hash) and loads
// it, in order, before the page's own script. No page loads anything from another origin (the CSP
// allows none).
//
// A script marked `worker` is not loaded into the page but started by the page's code as a Web
// Worker: `new Worker(svc.workers['{plugin}/{name}'])` (its versioned URL). Pages that name one
// get `worker-src 'self'` in their Content-Security-Policy; the worker runs under the policy its
// own response carries (`default-src 'none'`, plus `'wasm-unsafe-eval'` when it is marked
// `webassembly`): it can compute, and fetch or load nothing. Work that must not hold the page
// (a slow key derivation) or whose memory should go at once (terminate() drops the worker's heap)
// belongs there.
//
// Whatever the API returns is someone else's text: build content with svc.el (textContent),
// never innerHTML. A script changes things only through the API, with svc.send, and only when the
// person asks (a button or form of the page): reading a page changes nothing.
#pragma once

#include <svc/sdk/services.h>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace svc::sdk {

/// One page a plugin adds to the dashboard.
struct DashboardPage {
  /// Its path below the dashboard's prefix: `/identities/{identity}/inbox`. Segments are static
  /// text or `{name}` (one segment, passed to the script in svc.params); the first segment is
  /// static and not one of the dashboard's own (`login`, `logout`, `device`, `keys`); at most
  /// eight segments.
  std::string path;
  /// Its title: the tab's and the card's until the script sets another (plain text).
  std::string title;
  /// Its entry in the navigation (plain text), or empty for none. Only a page without parameters
  /// can be in the navigation.
  std::string nav_label;
  /// Where its entry goes: lower first, then by label. The dashboard's own entries come first.
  int nav_order = 100;
  /// The script that renders the page into the container (see above): the body of
  /// `function (svc) { ... }`. It must not contain `</script`.
  std::string script;
  /// Optional check of the path parameters before the page is served; it may normalize them in
  /// place (lower-case a UUID). Returning false answers 404 "Not found". Called from request
  /// threads.
  std::function<bool(std::map<std::string, std::string>& params)> accept;
  /// Shared scripts the page loads, in this order, before its own (or, for worker scripts, may
  /// start): `{plugin}/{name}` (DashboardScript::plugin and name). One no plugin has added makes
  /// the page answer 503 naming it.
  std::vector<std::string> scripts;
};

/// Code several pages load (DashboardPage::scripts): public, since anyone may fetch it.
struct DashboardScript {
  /// The plugin that adds it (its PluginInfo::name): the script's namespace. Pages name the
  /// script `{plugin}/{name}`, and the dashboard serves it at `{prefix}/scripts/{plugin}/{name}`.
  std::string plugin;
  /// Its file name: 1-64 of `a-z 0-9 . _ -`, starting with a letter or digit, ending in `.js`.
  std::string name;
  /// The JavaScript, served as it is (`text/javascript`).
  std::string body;
  /// True when it compiles WebAssembly (libsodium.js): the pages that load it, and only those,
  /// get `'wasm-unsafe-eval'` in their Content-Security-Policy (it allows compiling WebAssembly,
  /// not evaluating JavaScript strings); a worker script gets it in its own response's policy.
  bool webassembly = false;
  /// True when pages start it as a Web Worker (svc.workers) instead of loading it.
  bool worker = false;
};

/// Where plugins add their pages. Offered by the dashboard plugin; thread-safe.
class DashboardPages {
 public:
  virtual ~DashboardPages();
  /// Adds a page (in start()).
  /// @param page the page.
  /// @throws std::invalid_argument when its path is malformed, reserved by the dashboard, or
  /// matches the same URLs as a page already added (parameter names aside), or when a page with
  /// parameters asks for a navigation entry.
  virtual void add(DashboardPage page) = 0;
  /// Adds a shared script (in start()).
  /// @param script the script.
  /// @throws std::invalid_argument when its plugin or name is malformed, `{plugin}/{name}` was
  /// added before, or its body is empty.
  virtual void addScript(DashboardScript script) = 0;
};

/// The key of the DashboardPages service.
inline constexpr ServiceKey<DashboardPages> kDashboardPagesService{"svc.dashboard-pages.v1"};

}  // namespace svc::sdk
