#include "dashboard_page.h"

namespace svc::plugins::identities {

namespace {

// The name links to the first page another plugin adds for an identity, the others follow it.
// `email` is a member of the contract's identity resource (null when no plugin provides it).
constexpr const char* kScript = R"JS(
svc.api('/api/identities/?limit=200').then(function (d) {
  if (!d.results.length) return svc.show([svc.el('p', 'No identities yet. Agents create them with POST /api/identities/.', { 'class': 'muted' })]);
  svc.show([svc.table(['Name', 'Email'], d.results.map(function (i) {
    var row = svc.el('tr', null, { 'data-identity': i.uuid });
    var name = svc.el('td');
    var links = svc.links('identity', i.uuid);
    name.appendChild(links.length ? svc.el('a', i.name, { href: links[0].href }) : svc.el('span', i.name));
    links.slice(1).forEach(function (l) {
      name.appendChild(svc.el('div', null, { 'class': 'muted' })).appendChild(svc.el('a', l.label, { href: l.href }));
    });
    row.appendChild(name);
    row.appendChild(svc.el('td', i.email ? i.email.address : '—'));
    return row;
  }))]);
}).catch(svc.fail);
)JS";

}  // namespace

sdk::DashboardPage identitiesDashboardPage() {
  sdk::DashboardPage page;
  page.path = "/identities";
  page.title = "Identities";
  page.nav_label = "Identities";
  page.script = kScript;
  return page;
}

}  // namespace svc::plugins::identities
