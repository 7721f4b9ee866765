#include "rules/rule_pages.h"

#include <svc/sdk/util.h>

#include <Poco/String.h>

namespace svc::plugins::email {

namespace {

// One script for both pages: with svc.params.identity it is that identity's page. Patterns are
// someone's text: content is built with svc.el (textContent) only.
constexpr const char* kRulesScript = R"JS(
var identity = svc.params.identity, q = identity ? '?identity=' + encodeURIComponent(identity) : '';
if (identity) svc.back(svc.prefix + '/identities', 'Identities');
function form(reload) {
  var f = svc.el('form', null, { 'class': 'rule-form' });
  var kind = svc.el('select', null, { name: 'kind', 'aria-label': 'Kind' });
  ['block', 'allow'].forEach(function (k) { kind.appendChild(svc.el('option', k, { value: k })); });
  var pattern = svc.el('input', null, { name: 'pattern', required: 'required', placeholder: 'bob@example.com or example.com', 'aria-label': 'Pattern' });
  var add = svc.el('button', identity ? 'Add rule' : 'Add default', { type: 'submit' });
  var error = svc.el('p', null, { 'class': 'error', role: 'alert' });
  f.appendChild(kind); f.appendChild(pattern); f.appendChild(add); f.appendChild(error);
  f.addEventListener('submit', function (e) {
    e.preventDefault();
    svc.send('POST', '/api/email-rules/' + q, { kind: kind.value, pattern: pattern.value })
      .then(reload, function (err) { error.textContent = err.message; });
  });
  return f;
}
function render() {
  var loads = [svc.api('/api/email-rules/' + q + (q ? '&' : '?') + 'limit=200')];
  if (identity) loads.push(svc.api('/api/identities/' + identity + '/'));
  Promise.all(loads).then(function (r) {
    svc.title(identity ? 'Sender rules · ' + r[1].name : 'Sender rules');
    var note = svc.el('p', identity
      ? 'Checked when mail arrives: this identity\'s rules first, then the account\'s defaults. Once an allow rule applies, only allowed senders are accepted.'
      : 'Account defaults (no identity) apply to every identity; an identity\'s own rules come first.', { 'class': 'muted' });
    var rows = r[0].results.map(function (rule) {
      var row = svc.el('tr', null, { 'data-rule': rule.id });
      row.appendChild(svc.el('td', rule.kind));
      row.appendChild(svc.el('td', rule.pattern));
      row.appendChild(svc.el('td', rule.identity === null ? 'account default' : (identity ? 'this identity' : rule.identity)));
      var cell = svc.el('td');
      if (!identity || rule.identity !== null) {
        var del = svc.el('button', 'Delete', { type: 'button', 'class': 'delete' });
        del.addEventListener('click', function () {
          svc.send('DELETE', '/api/email-rules/' + rule.id + '/' + q).then(render, svc.fail);
        });
        cell.appendChild(del);
      }
      row.appendChild(cell);
      return row;
    });
    var nodes = [note, form(render)];
    nodes.push(rows.length ? svc.table(['Kind', 'Pattern', 'For', ''], rows) : svc.el('p', 'No rules: every sender is accepted.', { 'class': 'muted' }));
    svc.show(nodes);
  }).catch(svc.fail);
}
render();
)JS";

}  // namespace

std::vector<sdk::DashboardPage> rulePages() {
  sdk::DashboardPage mine;
  mine.path = "/identities/{identity}/rules";
  mine.title = "Sender rules";
  mine.script = kRulesScript;
  mine.accept = [](std::map<std::string, std::string>& params) {
    std::string& id = params["identity"];
    id = Poco::toLower(id);
    return sdk::isUuid(id);
  };
  sdk::DashboardPage account;
  account.path = "/email-rules";
  account.title = "Sender rules";
  account.nav_label = "Sender rules";
  account.nav_order = 120;
  account.script = kRulesScript;
  return {mine, account};
}

}  // namespace svc::plugins::email
