#include "secret_pages.h"

#include <svc/sdk/util.h>

#include <Poco/String.h>

namespace svc::plugins::secrets {

namespace {

// Keys are the agent's text: content is built with textContent (svc.el) only. The list is asked
// for names only (values=false): values and notes never reach the page.
constexpr const char* kSecretsScript = R"JS(
var identity = svc.params.identity, q = '?identity=' + encodeURIComponent(identity);
svc.back(svc.prefix + '/identities', 'Identities');
svc.api('/api/identities/' + identity + '/').then(function (d) {
  svc.title(d.name + ' · Secrets');
  return svc.api('/api/secrets/' + q + '&limit=200&values=false').then(function (page) {
    if (!page.results.length) return svc.show([svc.el('p', 'No secrets yet.', { 'class': 'muted' })]);
    var nodes = [svc.table(['Key', 'Updated', 'Created'], page.results.map(function (s) {
      var row = svc.el('tr', null, { 'data-secret': s.uuid });
      row.appendChild(svc.el('td', s.key, { 'class': 'code' }));
      row.appendChild(svc.el('td', svc.when(s.updated_dt)));
      row.appendChild(svc.el('td', svc.when(s.created_dt)));
      return row;
    }))];
    if (page.count > page.results.length) {
      nodes.push(svc.el('p', 'The newest ' + page.results.length + ' of ' + page.count + ' are shown.', { 'class': 'muted' }));
    }
    svc.show(nodes);
  });
}).catch(svc.fail);
)JS";

bool identityParam(std::map<std::string, std::string>& params) {
  std::string& identity = params["identity"];
  identity = Poco::toLower(identity);
  return sdk::isUuid(identity);
}

}  // namespace

std::vector<sdk::DashboardPage> dashboardPages() {
  sdk::DashboardPage page;
  page.path = "/identities/{identity}/secrets";
  page.title = "Secrets";
  page.script = kSecretsScript;
  page.accept = identityParam;
  return {page};
}

}  // namespace svc::plugins::secrets
