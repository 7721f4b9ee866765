#include "auto_contacts.h"

#include <svc/sdk/addresses.h>
#include <svc/sdk/util.h>

#include <Poco/JSON/Array.h>
#include <Poco/String.h>

namespace svc::plugins::contacts {

namespace {

constexpr const char* kSetting = "auto_contacts";

Poco::Dynamic::Var member(bool on) {
  Poco::JSON::Object::Ptr o = new Poco::JSON::Object;
  o->set(kSetting, on);
  return o;
}

std::string text(const Poco::JSON::Object& o, const std::string& name) {
  return o.has(name) && o.get(name).isString() ? o.getValue<std::string>(name) : "";
}

}  // namespace

std::vector<Correspondent> sentTo(const sdk::Event& event) {
  std::vector<Correspondent> out;
  if (!event.object || text(*event.object, "status") == "failed") return out;
  if (event.type == "email.sent") {
    for (const char* field : {"to_email", "cc", "bcc"}) {
      auto list = event.object->getArray(field);
      for (std::size_t i = 0; list && i < list->size(); ++i) {
        const Poco::Dynamic::Var v = list->get(static_cast<unsigned>(i));
        if (!v.isString()) continue;
        const std::string address = v.extract<std::string>();
        if (sdk::isValidEmailAddress(address)) out.push_back({address, ""});
      }
    }
  } else if (event.type == "sms.sent") {
    if (auto e164 = sdk::normalizeE164(text(*event.object, "to_number"))) {
      out.push_back({"", *e164});
    }
  }
  return out;
}

ContactsIdentityExtension::ContactsIdentityExtension(ContactStore& store) : store_(store) {
  const char* what =
      "Whether the people the identity writes to (mail and SMS it sends) become its contacts "
      "by themselves (default false: contacts are only what is added).";
  capability_.name = "contacts";
  capability_.create_fields = {
      {kSetting, sdk::IdentityField::Type::kBoolean, true, sdk::Schema::boolean().describe(what)}};
  capability_.view = sdk::Schema::object("IdentityContacts")
                         .required(kSetting, sdk::Schema::boolean().describe(what));
}

void ContactsIdentityExtension::validate(const sdk::Request& r) {
  r.boolField(kSetting);
}

Poco::Dynamic::Var ContactsIdentityExtension::provision(Poco::Data::Session& tx,
                                                        const sdk::IdentityInfo& identity,
                                                        const sdk::Request& r) {
  const bool on = r.boolField(kSetting).value_or(false);
  if (on) store_.setAutoContacts(tx, identity.account_id, identity.uuid, true);
  return member(on);
}

std::optional<Poco::Dynamic::Var> ContactsIdentityExtension::update(
    Poco::Data::Session& tx, const sdk::IdentityInfo& identity, const sdk::Request& r) {
  const bool on = r.boolField(kSetting).value_or(false);  // null: back to the default
  store_.setAutoContacts(tx, identity.account_id, identity.uuid, on);
  return member(on);
}

std::map<std::string, Poco::Dynamic::Var> ContactsIdentityExtension::describe(
    const std::vector<std::string>& identity_uuids) {
  Poco::Data::Session s = store_.database().session();
  std::map<std::string, Poco::Dynamic::Var> out;
  for (const auto& [uuid, on] : store_.autoContacts(s, identity_uuids)) out[uuid] = member(on);
  return out;
}

sdk::Response ContactsIdentityExtension::act(const std::string&, const sdk::IdentityInfo&,
                                             sdk::Request&) {
  throw sdk::HttpError::notFound("action");  // it declares none
}

AutoContacts::~AutoContacts() {
  stop();
}

void AutoContacts::start(sdk::EventBus& events) {
  events_ = &events;
  worker_ = std::thread([this] { run(); });
  subscription_ = events.subscribe([this](const sdk::Event& e) {
    if (e.type != "email.sent" && e.type != "sms.sent") return;
    SentMessage m{e.account, Poco::toLower(e.identity), sentTo(e)};
    if (m.to.empty() || m.identity_uuid.empty()) return;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (queue_.size() >= kMaxQueued) {
        logger_.warning(
            "auto_contacts: %z messages are waiting; the recipients of event %s are "
            "not added",
            queue_.size(), e.id);
        return;
      }
      queue_.push_back(std::move(m));
    }
    wake_.notify_one();
  });
}

void AutoContacts::stop() {
  if (events_) {
    events_->unsubscribe(subscription_);
    events_ = nullptr;
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
    queue_.clear();
  }
  wake_.notify_all();
  if (worker_.joinable()) worker_.join();
}

void AutoContacts::run() {
  for (;;) {
    SentMessage m;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (stopping_) return;
      m = std::move(queue_.front());
      queue_.pop_front();
    }
    try {
      handle(m);
    } catch (const std::exception& e) {
      logger_.warning("auto_contacts: adding the recipients of a message of identity %s failed: %s",
                      m.identity_uuid, std::string(e.what()));
    }
  }
}

void AutoContacts::handle(const SentMessage& m) {
  {
    Poco::Data::Session s = store_.database().session();
    if (!store_.autoContacts(s, {m.identity_uuid})[m.identity_uuid]) return;
  }
  for (const auto& to : m.to) {
    {
      Poco::Data::Session s = store_.database().session();
      if (!to.email.empty() ? store_.byEmail(s, m.identity_uuid, to.email).has_value()
                            : store_.byPhone(s, m.identity_uuid, to.phone_number).has_value()) {
        continue;  // the usual case, without a write
      }
    }
    ContactRow c;
    c.id = sdk::newUuid();
    c.account_id = m.account_id;
    c.identity_uuid = m.identity_uuid;
    c.email = to.email;
    c.phone_number = to.phone_number;
    c.created_us = c.updated_us = sdk::nowMicros();
    try {
      store_.database().transaction([&](Poco::Data::Session& tx) { store_.insert(tx, c); });
    } catch (const sdk::HttpError& e) {
      // Added meanwhile, by a person or by another svcd handling the same event.
      if (e.status() != 409) throw;
    }
  }
}

}  // namespace svc::plugins::contacts
