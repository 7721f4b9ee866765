#include "dashboard_pages.h"

#include <svc/sdk/util.h>

#include <Poco/String.h>

namespace svc::plugins::contacts {

namespace {

// Contacts are other people's text: content is built with textContent (svc.el) only. Searching
// reads; the page changes nothing.
constexpr const char* kContactsScript = R"JS(
var identity = svc.params.identity, q = '?identity=' + encodeURIComponent(identity);
svc.back(svc.prefix + '/identities', 'Identities');
var form = svc.el('form', null, { id: 'contact-search', role: 'search' });
var box = svc.el('input', null, { type: 'search', id: 'contact-q', 'aria-label': 'Search contacts', placeholder: 'Search by name, email or number' });
form.appendChild(box);
form.appendChild(svc.el('button', 'Search', { type: 'submit' }));
function show(page) {
  var list = page.results.length ? svc.table(['Name', 'Email', 'Phone', 'Added'], page.results.map(function (c) {
    var row = svc.el('tr', null, { 'data-contact': c.uuid });
    var name = svc.el('td', c.display_name || '');
    if (c.nickname) name.appendChild(svc.el('div', c.nickname, { 'class': 'muted' }));
    row.appendChild(name);
    row.appendChild(svc.el('td', c.email || ''));
    row.appendChild(svc.el('td', c.phone_number || ''));
    row.appendChild(svc.el('td', svc.when(c.created_dt)));
    return row;
  })) : svc.el('p', 'No contacts.', { 'class': 'muted' });
  var total = svc.el('p', page.count + (page.count_is_exact === false ? '+' : '') + ' contact' + (page.count === 1 ? '' : 's'), { 'class': 'muted', id: 'contact-count' });
  svc.show([form, total, list]);
}
function load() {
  var text = box.value.trim();
  var path = text ? '/api/contacts/search/' + q + '&q=' + encodeURIComponent(text) : '/api/contacts/' + q;
  return svc.api(path + '&limit=100').then(show).catch(svc.fail);
}
form.addEventListener('submit', function (event) { event.preventDefault(); load(); });
svc.api('/api/identities/' + identity + '/').then(function (d) {
  svc.title(d.name + ' · Contacts');
  return load();
}).catch(svc.fail);
)JS";

}  // namespace

sdk::DashboardPage contactsDashboardPage() {
  sdk::DashboardPage page;
  page.path = "/identities/{identity}/contacts";
  page.title = "Contacts";
  page.script = kContactsScript;
  // After the inbox and SMS pages (100): an identity's name keeps linking to its inbox, and
  // its contacts follow as one more link.
  page.nav_order = 200;
  page.accept = [](std::map<std::string, std::string>& params) {
    std::string& identity = params["identity"];
    identity = Poco::toLower(identity);
    return sdk::isUuid(identity);
  };
  return page;
}

}  // namespace svc::plugins::contacts
