#include "extensions.h"

#include <svc/sdk/util.h>

#include <algorithm>
#include <mutex>
#include <set>
#include <stdexcept>

namespace svc::plugins::identities {

namespace {

// A create field "asks" for its capability unless absent, null, false or empty; a value of the
// wrong type is 400 naming the field, with or without the capability.
bool asks(const sdk::Request& r, const sdk::IdentityField& field) {
  if (field.type == sdk::IdentityField::Type::kBoolean) {
    return r.boolField(field.name).value_or(false);
  }
  return !r.stringField(field.name).value_or("").empty();
}

}  // namespace

sdk::HttpError capabilityMissing(const std::string& capability, int status) {
  // Permanent until the operator changes the server: a 4xx, so agents do not retry it.
  return sdk::HttpError(status, "feature_not_enabled",
                        "This server does not provide the identity capability '" + capability +
                            "' (the plugin that provides it is not enabled), so nothing was "
                            "created; its operator can add that plugin to plugins.enabled.");
}

namespace {

// A member, field or action name: lower-case ASCII letters and digits, `_` (or `-` in actions),
// starting with a letter.
bool wellFormed(const std::string& name, char joiner) {
  if (name.empty() || name.size() > 64 || name[0] < 'a' || name[0] > 'z') return false;
  for (char c : name) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == joiner)) return false;
  }
  return true;
}

// What the identity resource itself holds or serves: no extension may take it.
bool reservedMember(const std::string& name) {
  for (const char* own : {"uuid", "name", "created_dt", "updated_dt", "account", "identity"}) {
    if (name == own) return true;
  }
  return false;
}

// A contract action claimed by another capability: its route has the contract's shape, which is
// not that capability's (`provision-phone` answers the identity with its `phone`).
bool contractActionOfAnother(const std::string& capability, const std::string& action) {
  for (const auto& c : sdk::contractIdentityCapabilities()) {
    if (c.name != capability && std::count(c.actions.begin(), c.actions.end(), action)) {
      return true;
    }
  }
  return false;
}

}  // namespace

void Extensions::add(std::shared_ptr<sdk::IdentityExtension> extension) {
  const sdk::IdentityCapability& c = extension->capability();
  if (!wellFormed(c.name, '_') || reservedMember(c.name)) {
    throw std::invalid_argument("identity capability name '" + c.name +
                                "' is malformed or the identity's own");
  }
  for (const auto& f : c.create_fields) {
    if (!wellFormed(f.name, '_') || reservedMember(f.name)) {
      throw std::invalid_argument("identity field '" + f.name +
                                  "' is malformed or the identity's own");
    }
  }
  for (const auto& a : c.actions) {
    if (!wellFormed(a, '-') || a == "voice-agent" || contractActionOfAnother(c.name, a)) {
      throw std::invalid_argument("identity action '" + a + "' is malformed or the identity's own");
    }
  }
  std::unique_lock lock(mutex_);
  if (c.name.empty() || by_name_.count(c.name)) {
    throw std::invalid_argument("identity capability '" + c.name + "' is already provided");
  }
  for (const auto& [name, other] : by_name_) {
    const auto& o = other->capability();
    for (const auto& f : c.create_fields) {
      for (const auto& g : o.create_fields) {
        if (f.name == g.name) {
          throw std::invalid_argument("identity field '" + f.name + "' is already '" + name +
                                      "''s");
        }
      }
    }
    for (const auto& a : c.actions) {
      if (std::count(o.actions.begin(), o.actions.end(), a)) {
        throw std::invalid_argument("identity action '" + a + "' is already '" + name + "''s");
      }
    }
  }
  by_name_[c.name] = std::move(extension);
  std::vector<sdk::IdentityCapability> capabilities;
  for (const auto& [name, e] : by_name_) capabilities.push_back(e->capability());
  shapes_ = composeShapes(capabilities);
}

std::vector<std::shared_ptr<sdk::IdentityExtension>> Extensions::all() const {
  std::shared_lock lock(mutex_);
  std::vector<std::shared_ptr<sdk::IdentityExtension>> out;
  for (const auto& [name, e] : by_name_) out.push_back(e);
  return out;
}

std::shared_ptr<sdk::IdentityExtension> Extensions::forAction(const std::string& action) const {
  std::shared_lock lock(mutex_);
  for (const auto& [name, e] : by_name_) {
    const auto& actions = e->capability().actions;
    if (std::count(actions.begin(), actions.end(), action)) return e;
  }
  return nullptr;
}

void Extensions::validateCreate(const sdk::Request& r) const {
  for (const auto& c : sdk::contractIdentityCapabilities()) {
    {
      std::shared_lock lock(mutex_);
      if (by_name_.count(c.name)) continue;
    }
    for (const auto& f : c.create_fields) {
      if (asks(r, f)) throw capabilityMissing(c.name, 422);
    }
  }
  for (const auto& e : all()) e->validate(r);
}

IdentityShapes Extensions::shapes() const {
  std::shared_lock lock(mutex_);
  return shapes_;
}

sdk::Schema Extensions::late(sdk::Schema IdentityShapes::*pick) const {
  return sdk::Schema::late([this, pick] { return shapes().*pick; });
}

std::vector<std::shared_ptr<sdk::IdentityExtension>> Extensions::updating(
    const sdk::Request& r) const {
  std::vector<std::shared_ptr<sdk::IdentityExtension>> out;
  if (!r.json) return out;
  for (const auto& e : all()) {
    const auto& fields = e->capability().create_fields;
    if (std::any_of(fields.begin(), fields.end(), [&](const sdk::IdentityField& f) {
          return f.updatable && r.json->has(f.name);
        })) {
      out.push_back(e);
    }
  }
  return out;
}

void Extensions::refuseAction(const std::string& action) const {
  for (const auto& c : sdk::contractIdentityCapabilities()) {
    if (std::count(c.actions.begin(), c.actions.end(), action))
      throw capabilityMissing(c.name, 404);
  }
  throw sdk::HttpError::notFound("action");
}

std::vector<std::string> Extensions::memberNames() const {
  std::set<std::string> names;
  for (const auto& c : sdk::contractIdentityCapabilities()) names.insert(c.name);
  std::shared_lock lock(mutex_);
  for (const auto& [name, e] : by_name_) names.insert(name);
  return {names.begin(), names.end()};
}

Poco::JSON::Object::Ptr Extensions::json(
    const Identity& i, const std::map<std::string, Poco::Dynamic::Var>& members) const {
  Poco::JSON::Object::Ptr o = new Poco::JSON::Object;
  o->set("uuid", i.uuid);
  o->set("name", i.name);
  for (const auto& name : memberNames()) {
    auto it = members.find(name);
    o->set(name, it == members.end() ? Poco::Dynamic::Var() : it->second);
  }
  o->set("created_dt", sdk::isoTimestamp(i.created_us));
  o->set("updated_dt", sdk::isoTimestamp(i.updated_us));
  return o;
}

std::vector<Poco::JSON::Object::Ptr> Extensions::json(const std::vector<Identity>& list) const {
  std::vector<std::string> ids;
  for (const auto& i : list) ids.push_back(i.uuid);
  std::map<std::string, std::map<std::string, Poco::Dynamic::Var>> members;  // by identity
  if (!ids.empty()) {
    for (const auto& e : all()) {
      for (auto& [uuid, value] : e->describe(ids)) members[uuid][e->capability().name] = value;
    }
  }
  std::vector<Poco::JSON::Object::Ptr> out;
  for (const auto& i : list) out.push_back(json(i, members[i.uuid]));
  return out;
}

}  // namespace svc::plugins::identities
