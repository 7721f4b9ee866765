#include "rules/rule_routes.h"

#include "rules/rule_rows.h"

#include <svc/sdk/auth.h>
#include <svc/sdk/pagination.h>
#include <svc/sdk/util.h>

#include <Poco/JSON/Array.h>
#include <Poco/String.h>

namespace svc::plugins::email {

namespace {

using sdk::Schema;

sdk::HttpError tooMany() {
  return sdk::HttpError::invalid("rules", "at most " + std::to_string(kMaxRulesPerAccount) +
                                              " rules per account; delete rules no longer needed");
}

}  // namespace

Schema ruleSchema() {
  return Schema::object("EmailRule")
      .required("id", Schema::string().format("uuid"))
      .required("identity",
                Schema::string().format("uuid").nullable().describe(
                    "The identity whose mail it filters; null: an account-wide default, for "
                    "every identity of the account."))
      .required("kind", Schema::oneOf({"allow", "block"}))
      .required("pattern", Schema::string()
                               .describe("A sender address, or a domain (which also matches "
                                         "its subdomains), lower-case.")
                               .example("example.com"))
      .required("created_dt", Schema::string().format("date-time"));
}

Schema ruleInputSchema() {
  return Schema::object("EmailRuleInput")
      .optional("identity", Schema::string().format("uuid").describe(
                                "The identity the rule is for; omitted: the identity the "
                                "request names (identity key, identity=), else an "
                                "account-wide default."))
      .required("kind", Schema::oneOf({"allow", "block"})
                            .describe("block: refuse the sender; allow: once any allow rule "
                                      "applies, only allowed senders are accepted."))
      .required("pattern", Schema::string()
                               .minLength(1)
                               .maxLength(254)
                               .describe("An address (bob@example.com) or a domain "
                                         "(example.com, or @example.com; matches its "
                                         "subdomains too); any case.")
                               .example("example.com"));
}

RuleRoutes::RuleRoutes(sdk::PluginContext& context, RuleCache& cache)
    : context_(context), cache_(cache) {}

void RuleRoutes::registerRoutes(sdk::RouteRegistry& routes) {
  using sdk::AuthNeed;
  const Schema rule = ruleSchema();
  const std::vector<sdk::Param> none;
  const sdk::JsonRoutes add(routes);
  add("GET", "/api/email-rules/", AuthNeed::kAnyKey,
      "Sender rules, newest first: an identity's own and the account's defaults (identity "
      "null), or with an account's request and no identity, every rule of the account.",
      sdk::bindHandler(*this, &RuleRoutes::list), std::nullopt, sdk::pageParams(),
      {{200, sdk::pageOf(rule, "EmailRuleList")}}, {});
  add("POST", "/api/email-rules/", AuthNeed::kAnyKey,
      "Add an allow or block rule for a sender address or domain, checked when mail arrives "
      "(the envelope sender at SMTP RCPT, the header From at the end of DATA, and local "
      "delivery).",
      sdk::bindHandler(*this, &RuleRoutes::create), ruleInputSchema(), none, {{201, rule}},
      {{400, "invalid",
        "the pattern is neither an address nor a domain, or the account holds the most rules "
        "it may (errors.rules)"},
       {403, "permission_denied", "an identity key named another identity"},
       {404, "not_found", "the identity named in the body is not this account's"},
       {409, "conflict", "a rule for that pattern and identity exists already: delete it first"}});
  add("GET", "/api/email-rules/{id}/", AuthNeed::kAnyKey, "One sender rule.",
      sdk::bindHandler(*this, &RuleRoutes::one), std::nullopt, none, {{200, rule}}, {});
  add("DELETE", "/api/email-rules/{id}/", AuthNeed::kAnyKey, "Remove a sender rule.",
      sdk::bindHandler(*this, &RuleRoutes::remove), std::nullopt, none, {{204, Schema::any()}},
      {{403, "permission_denied",
        "an identity's request may read the account's defaults but not remove them"}});
}

sdk::Response RuleRoutes::list(sdk::Request& r) {
  const auto page = sdk::pageRequest(r);
  const RuleScope scope{r.principal.account_id, sdk::scopeIdentity(r)};
  Poco::Data::Session s = context_.database().session();
  const long count = rule_rows::count(s, scope);
  Poco::JSON::Array::Ptr results = new Poco::JSON::Array;
  for (const auto& rule : rule_rows::page(s, scope, page.limit, page.offset)) {
    results->add(rule_rows::json(rule));
  }
  return sdk::Response::json(200, sdk::pageBody(r, page, count, results));
}

std::string RuleRoutes::ruleIdentity(const sdk::Request& r) {
  std::string identity = sdk::scopeIdentity(r);
  auto from_body = r.stringField("identity");
  if (!from_body) return identity;
  const std::string named = Poco::toLower(*from_body);
  if (!identity.empty() && named != identity) {
    if (r.principal.kind == sdk::PrincipalKind::kIdentity) {
      throw sdk::HttpError(403, "permission_denied",
                           "This identity key is bound to another identity.");
    }
    throw sdk::HttpError::invalid("identity", "disagrees with the identity the request names");
  }
  if (!r.identity) {  // named only in the body: fence it as the kernel fences identity=
    auto directory = context_.services().find(sdk::kIdentityDirectoryService);
    if (!directory || !directory->find(r.principal.account_id, named)) {
      throw sdk::HttpError::notFound("identity");
    }
  }
  return named;
}

sdk::Response RuleRoutes::create(sdk::Request& r) {
  std::string error;
  auto pattern = normalizedPattern(r.requiredString("pattern"), error);
  if (!pattern) throw sdk::HttpError::invalid("pattern", error);
  SenderRule rule;
  rule.id = sdk::newUuid();
  rule.account_id = r.principal.account_id;
  rule.identity_uuid = ruleIdentity(r);
  rule.kind = r.requiredString("kind");
  rule.pattern = *pattern;
  rule.created_us = sdk::nowMicros();
  const auto conflict = [&] {
    return sdk::HttpError(
        409, "conflict",
        "A rule for " + rule.pattern +
            (rule.identity_uuid.empty() ? " (account default)" : " on this identity") +
            " exists already; delete it to change it.");
  };
  Poco::JSON::Object::Ptr body = rule_rows::json(rule);
  context_.database().transaction([&](Poco::Data::Session& tx) {
    // Concurrent creates take turns from here, so none counts rules another has not yet added.
    rule_rows::lockAccount(tx, context_.database().dialect(), rule.account_id);
    if (rule_rows::byPattern(tx, rule.account_id, rule.identity_uuid, rule.pattern)) {
      throw conflict();
    }
    if (rule_rows::count(tx, {rule.account_id, ""}) >= static_cast<long>(kMaxRulesPerAccount)) {
      throw tooMany();
    }
    try {
      rule_rows::insert(tx, rule);
    } catch (const Poco::Exception&) {
      throw conflict();  // another writer added the same pattern between the check and here
    }
    context_.events().publish("email_rule.created", rule.account_id, rule.identity_uuid, body, &tx);
  });
  cache_.forget(rule.account_id);  // this process at once; the others by the event
  return sdk::Response::json(201, body);
}

SenderRule RuleRoutes::visibleRule(const sdk::Request& r) {
  Poco::Data::Session s = context_.database().session();
  auto rule = rule_rows::byId(s, r.params.at("id"));
  // A default (identity "") is visible to the whole account, each identity included.
  if (!rule || rule->account_id != r.principal.account_id ||
      (!rule->identity_uuid.empty() && !sdk::visibleTo(r, rule->account_id, rule->identity_uuid))) {
    throw sdk::HttpError::notFound("rule");
  }
  return *rule;
}

sdk::Response RuleRoutes::one(sdk::Request& r) {
  return sdk::Response::json(200, rule_rows::json(visibleRule(r)));
}

sdk::Response RuleRoutes::remove(sdk::Request& r) {
  const SenderRule rule = visibleRule(r);
  if (rule.identity_uuid.empty() && !sdk::scopeIdentity(r).empty()) {
    throw sdk::HttpError(403, "permission_denied",
                         "This is an account-wide default rule: remove it with an account's "
                         "request (a management key without identity=).");
  }
  context_.database().transaction([&](Poco::Data::Session& tx) {
    if (!rule_rows::remove(tx, rule.id)) throw sdk::HttpError::notFound("rule");
    context_.events().publish("email_rule.deleted", rule.account_id, rule.identity_uuid,
                              rule_rows::json(rule), &tx);
  });
  cache_.forget(rule.account_id);
  return sdk::Response::noContent();
}

}  // namespace svc::plugins::email
