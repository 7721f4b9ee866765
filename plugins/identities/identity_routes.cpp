#include "identity_routes.h"

#include "identity_shapes.h"

#include <svc/sdk/pagination.h>
#include <svc/sdk/util.h>

#include <Poco/JSON/Array.h>
#include <Poco/String.h>

#include <algorithm>

namespace svc::plugins::identities {

void IdentityRoutes::registerIn(sdk::RouteRegistry& routes) {
  using sdk::AuthNeed;
  using sdk::Schema;
  const sdk::JsonRoutes add(routes);
  // Other plugins add their parts later (in configure() and start()): the shapes are late.
  const Schema identity = extensions_.late(&IdentityShapes::identity);
  const sdk::RouteError missing{422, "feature_not_enabled",
                                "the body asks for a part (an inbox, a phone number) whose plugin "
                                "is not enabled on this server"};
  const sdk::RouteError busy{503, "service_unavailable",
                             "no phone number can be had now (Retry-After says when to try)"};
  add("GET", "/api/identities/", AuthNeed::kAnyKey, "List identities (an identity key: its own).",
      [this](sdk::Request& r) { return list(r); }, std::nullopt, sdk::pageParams(),
      {{200, sdk::pageOf(identity, "IdentityList")}});
  add("POST", "/api/identities/", AuthNeed::kAccount,
      "Create an identity, with its inbox (and a phone number when asked).",
      [this](sdk::Request& r) { return create(r); }, extensions_.late(&IdentityShapes::create), {},
      {{201, identity}},
      {{409, "email_taken", "another identity has that email address"}, missing, busy});
  const auto one = [this](sdk::Request& r) { return this->one(r); };
  const auto voice = [this](sdk::Request& r) { return voice_.serve(target(r), r); };
  add("GET", "/api/identities/{uuid}/", AuthNeed::kAnyKey, "An identity.", one, std::nullopt, {},
      {{200, identity}});
  add("PUT", "/api/identities/{uuid}/", AuthNeed::kAnyKey,
      "Rename an identity {name} (and set what other plugins let change).", one,
      extensions_.late(&IdentityShapes::update), {}, {{200, identity}});
  add("PATCH", "/api/identities/{uuid}/", AuthNeed::kAnyKey,
      "Change an identity's name or a setting another plugin adds.", one,
      extensions_.late(&IdentityShapes::patch), {}, {{200, identity}});
  add("GET", "/api/identities/{uuid}/voice-agent/", AuthNeed::kAnyKey,
      "An identity's voice-agent settings.", voice, std::nullopt, {}, {{200, voiceAgentSchema()}});
  add("PUT", "/api/identities/{uuid}/voice-agent/", AuthNeed::kAnyKey,
      "Set an identity's voice agent {response_url, enabled?}.", voice, voiceAgentInputSchema(), {},
      {{200, voiceAgentSchema()}});
  add("PATCH", "/api/identities/{uuid}/voice-agent/", AuthNeed::kAnyKey,
      "Change an identity's voice agent (a response_url must be set first).", voice,
      voiceAgentInputSchema().partial("VoiceAgentPatch"), {}, {{200, voiceAgentSchema()}});
  // The contract's actions, each on a route of its own with its shape, so that an agent reading
  // the description finds them by name. The router matches these before {action}.
  for (const auto& capability : sdk::contractIdentityCapabilities()) {
    for (const auto& name : capability.actions) {
      ContractAction a = contractAction(name);
      a.errors.push_back({404, "feature_not_enabled",
                          "no enabled plugin provides the identity capability `" + capability.name +
                              "` (the detail names it)"});
      add(
          "POST", "/api/identities/{uuid}/" + name + "/", AuthNeed::kAnyKey, a.summary,
          [this, name](sdk::Request& r) { return action(r, name); }, a.body, {},
          {{a.status, identity}}, a.errors);
    }
  }
  // Other plugins' actions (IdentityCapability::actions), which arrive after registration: one
  // route serves them all, and its body's description names those the enabled plugins declare.
  add("POST", "/api/identities/{uuid}/{action}/", AuthNeed::kAnyKey,
      "Run an action another plugin declares for identities (its plugin documents it); the "
      "contract's actions have routes of their own.",
      [this](sdk::Request& r) {
        // A contract action spelled so the router took it here (`provision%2Dphone`) would
        // skip its own route's shape: only the other plugins' actions are served here.
        const std::string& name = r.params.at("action");
        for (const auto& capability : sdk::contractIdentityCapabilities()) {
          if (std::count(capability.actions.begin(), capability.actions.end(), name)) {
            throw sdk::HttpError::notFound("action");
          }
        }
        return action(r, name);
      },
      extensions_.late(&IdentityShapes::other_action), {},
      {{200, Schema::any().describe("The action's answer, as its plugin documents it (the "
                                    "identity, when the action answers with it).")},
       {201, Schema::any().describe("The action's answer, as its plugin documents it.")}},
      {{404, "not_found", "no enabled plugin declares the action"}});
}

Identity IdentityRoutes::target(const sdk::Request& r) {
  const std::string uuid = Poco::toLower(r.params.at("uuid"));
  if (r.principal.kind == sdk::PrincipalKind::kIdentity &&
      uuid != Poco::toLower(r.principal.bound_identity)) {
    throw sdk::HttpError::otherIdentity();
  }
  if (!sdk::isUuid(uuid)) throw sdk::HttpError::notFound("identity");
  auto found = store_.load(uuid);
  if (!found || found->account_id != r.principal.account_id) {
    throw sdk::HttpError::notFound("identity");
  }
  return *found;
}

Poco::JSON::Object::Ptr IdentityRoutes::json(const Identity& i) {
  return extensions_.json(std::vector<Identity>{i}).front();
}

sdk::Response IdentityRoutes::list(sdk::Request& r) {
  const sdk::PageRequest page = sdk::pageRequest(r);
  std::vector<Identity> found;
  long count = 0;
  if (r.principal.kind == sdk::PrincipalKind::kIdentity) {
    auto own = store_.load(Poco::toLower(r.principal.bound_identity));
    if (own && own->account_id == r.principal.account_id) {
      count = 1;
      if (page.offset == 0) found.push_back(*own);
    }
  } else {
    count = store_.count(r.principal.account_id);
    found = store_.page(r.principal.account_id, page.limit, page.offset);
  }
  Poco::JSON::Array::Ptr results = new Poco::JSON::Array;
  for (const auto& o : extensions_.json(found)) results->add(o);
  return sdk::Response::json(200, sdk::pageBody(r, page, count, results));
}

sdk::Response IdentityRoutes::create(sdk::Request& r) {
  Identity i;
  i.name = validName(r.requiredString("name"));
  extensions_.validateCreate(r);
  i.uuid = sdk::newUuid();
  i.account_id = r.principal.account_id;
  i.created_us = i.updated_us = sdk::nowMicros();
  Poco::JSON::Object::Ptr body;
  const sdk::IdentityInfo info{i.uuid, i.account_id, i.name};
  const auto extensions = extensions_.all();
  std::size_t prepared = 0;
  auto finish = [&](bool created) {
    for (std::size_t k = 0; k < prepared; ++k) extensions[k]->finish(info, r, created);
  };
  try {
    for (const auto& e : extensions) {
      e->prepare(info, r);
      ++prepared;
    }
    context_.database().transaction([&](Poco::Data::Session& s) {
      IdentityStore::insert(s, i);
      // Every extension in the same transaction: a taken address leaves no identity behind.
      std::map<std::string, Poco::Dynamic::Var> members;
      for (const auto& e : extensions) members[e->capability().name] = e->provision(s, info, r);
      body = extensions_.json(i, members);
      publish(s, "identity.created", i, body);
    });
  } catch (...) {
    finish(false);
    throw;
  }
  finish(true);
  return sdk::Response::json(201, body);
}

sdk::Response IdentityRoutes::one(sdk::Request& r) {
  Identity i = target(r);
  if (r.method == "GET") return sdk::Response::json(200, json(i));
  if (auto name = r.stringField("name")) i.name = validName(*name);
  i.updated_us = sdk::nowMicros();
  Poco::JSON::Object::Ptr body = json(i);
  const sdk::IdentityInfo info{i.uuid, i.account_id, i.name};
  const auto updating = extensions_.updating(r);
  context_.database().transaction([&](Poco::Data::Session& s) {
    IdentityStore::update(s, i);
    // An extension's setting changes with the identity, or neither does.
    for (const auto& e : updating) {
      if (auto member = e->update(s, info, r)) body->set(e->capability().name, *member);
    }
    publish(s, "identity.updated", i, body);
  });
  directory_.forget(i.uuid);
  return sdk::Response::json(200, body);
}

sdk::Response IdentityRoutes::action(sdk::Request& r, const std::string& name) {
  Identity i = target(r);
  auto extension = extensions_.forAction(name);
  if (!extension) extensions_.refuseAction(name);
  sdk::Response answer = extension->act(name, sdk::IdentityInfo{i.uuid, i.account_id, i.name}, r);
  if (answer.content_type == sdk::kIdentityViewAnswer)
    return sdk::Response::json(answer.status, json(i));
  return answer;
}

void IdentityRoutes::publish(Poco::Data::Session& s, const std::string& type, const Identity& i,
                             const Poco::JSON::Object::Ptr& body) {
  context_.events().publish(type, i.account_id, i.uuid, body, &s);
}

}  // namespace svc::plugins::identities
