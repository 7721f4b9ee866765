// /api/email-rules/: sender rules over HTTP (list, create, get, delete), with their declared
// shapes. Who sees what:
// - an account (a user, or a management key without identity=) sees and changes every rule of
//   its account: its defaults (identity null) and every identity's;
// - an identity (an identity key, or identity= on an account's request) sees its own rules and
//   the account's defaults, which apply to it too, and changes only its own: a default is read
//   only to it (403 on delete), and what it creates is its own;
// - another account's rules are never found (404).
// No PATCH: a rule is a kind and a pattern, and changing either makes another rule; delete and
// create say so plainly, each with its event.
#pragma once

#include "rules/rule_cache.h"

#include <svc/sdk/plugin.h>
#include <svc/sdk/routes.h>

namespace svc::plugins::email {

/// `{id, identity, kind, pattern, created_dt}`: a rule as GET shows it and its events carry it.
sdk::Schema ruleSchema();
/// POST: `{identity?, kind, pattern}`.
sdk::Schema ruleInputSchema();

class RuleRoutes {
 public:
  /// @param cache told of this process's changes at once (other processes learn by events).
  RuleRoutes(sdk::PluginContext& context, RuleCache& cache);
  void registerRoutes(sdk::RouteRegistry& routes);

  sdk::Response list(sdk::Request& r);
  sdk::Response create(sdk::Request& r);
  sdk::Response one(sdk::Request& r);
  sdk::Response remove(sdk::Request& r);

 private:
  /// @return the identity a new rule is for ("" for an account default). @throws 400/403/404.
  std::string ruleIdentity(const sdk::Request& r);
  /// @return the rule the path names, when the request may see it. @throws 404.
  SenderRule visibleRule(const sdk::Request& r);

  sdk::PluginContext& context_;
  RuleCache& cache_;
};

}  // namespace svc::plugins::email
