#include "passwords_dashboard.h"

#include <svc/sdk/util.h>

#include <Poco/String.h>

namespace svc::plugins::passwords {

namespace {

bool identityParam(std::map<std::string, std::string>& params) {
  std::string& identity = params["identity"];
  identity = Poco::toLower(identity);
  return sdk::isUuid(identity);
}

// Names only: the values stay out of the page (and out of anyone's view over a shoulder). The
// domain is someone else's text: textContent only (svc.el).
constexpr const char* kEntriesScript = R"JS(
var identity = svc.params.identity, q = '?identity=' + encodeURIComponent(identity);
svc.back(svc.prefix + '/identities', 'Identities');
svc.api('/api/identities/' + identity + '/').then(function (d) {
  svc.title(d.name + ' · Passwords');
  return svc.api('/api/passwords/' + q + '&limit=200&values=false').then(function (page) {
    if (!page.results.length) return svc.show([svc.el('p', 'No password entries yet.', { 'class': 'muted' })]);
    var rows = page.results.map(function (e) {
      var row = svc.el('tr', null, { 'data-entry': e.uuid });
      row.appendChild(svc.el('td', e.domain));
      row.appendChild(svc.el('td', svc.when(e.created_dt)));
      row.appendChild(svc.el('td', svc.when(e.updated_dt)));
      return row;
    });
    var shown = [svc.table(['Domain', 'Created', 'Updated'], rows)];
    if (page.count > page.results.length) {
      shown.push(svc.el('p', 'The newest ' + page.results.length + ' of ' + page.count + ' entries.', { 'class': 'muted' }));
    }
    svc.show(shown);
  });
}).catch(svc.fail);
)JS";

}  // namespace

std::vector<sdk::DashboardPage> dashboardPages() {
  sdk::DashboardPage entries;
  entries.path = "/identities/{identity}/passwords";
  entries.title = "Passwords";
  entries.script = kEntriesScript;
  entries.accept = identityParam;
  return {entries};
}

}  // namespace svc::plugins::passwords
