// identities: the personas agents act as. It owns the identities table, offers the kernel's
// IdentityDirectory (so every identity-scoped route of every plugin is fenced the same way), and
// serves the identity routes of the contract, including the voice-agent settings with their URL
// checks. Inboxes and phone numbers come from the email and SMS plugins' provisioning services;
// until those exist, asking for a number answers 503 and creates nothing.
#include <svc/sdk/auth.h>
#include <svc/sdk/inboxes.h>
#include <svc/sdk/pagination.h>
#include <svc/sdk/plugin.h>
#include <svc/sdk/util.h>

#include <Poco/Data/Statement.h>
#include <Poco/Net/DNS.h>
#include <Poco/Net/IPAddress.h>
#include <Poco/String.h>
#include <Poco/Tuple.h>
#include <Poco/URI.h>

#include <mutex>
#include <unordered_map>

using namespace Poco::Data::Keywords;

namespace svc::plugins::identities {

namespace {

struct Identity {
  std::string uuid, account_id, name;
  std::int64_t created_us = 0, updated_us = 0;
};

using Row = Poco::Tuple<std::string, std::string, std::string, Poco::Int64, Poco::Int64>;
constexpr const char* kColumns =
    "SELECT uuid, account_id, name, created_us, updated_us FROM identities ";

Identity toIdentity(const Row& r) {
  return {r.get<0>(), r.get<1>(), r.get<2>(), r.get<3>(), r.get<4>()};
}

Poco::JSON::Object::Ptr identityJson(const Identity& i,
                                     const std::optional<sdk::InboxAddress>& email) {
  Poco::JSON::Object::Ptr o = new Poco::JSON::Object;
  o->set("uuid", i.uuid);
  o->set("name", i.name);
  if (email) {
    Poco::JSON::Object::Ptr e = new Poco::JSON::Object;
    e->set("id", email->id);
    e->set("address", email->address);
    o->set("email", e);
  } else {
    o->set("email", Poco::Dynamic::Var());
  }
  o->set("phone", Poco::Dynamic::Var());
  o->set("created_dt", sdk::isoTimestamp(i.created_us));
  o->set("updated_dt", sdk::isoTimestamp(i.updated_us));
  return o;
}

std::string validName(const std::string& raw) {
  std::string name = Poco::trim(raw);
  if (name.empty()) throw sdk::HttpError::invalid("name", "must not be empty");
  // Characters, not bytes: the body is already checked to be UTF-8.
  std::size_t chars = 0;
  for (unsigned char c : name) {
    if ((c & 0xC0) != 0x80) ++chars;
    if (c < 0x20 || c == 0x7f)
      throw sdk::HttpError::invalid("name", "must not contain control characters");
  }
  if (chars > 100) throw sdk::HttpError::invalid("name", "at most 100 characters");
  return name;
}

// Addresses a server-side fetch must never reach unless the operator allows it: loopback,
// private (RFC 1918, RFC 4193), link-local, carrier-grade NAT, unspecified, multicast.
bool internalAddress(const Poco::Net::IPAddress& a) {
  if (a.isLoopback() || a.isLinkLocal() || a.isSiteLocal() || a.isWildcard() || a.isMulticast() ||
      a.isBroadcast()) {
    return true;
  }
  const auto* bytes = static_cast<const unsigned char*>(a.addr());
  if (a.family() == Poco::Net::IPAddress::IPv4) {
    if (bytes[0] == 0) return true;                               // 0.0.0.0/8
    if (bytes[0] == 100 && (bytes[1] & 0xC0) == 64) return true;  // 100.64.0.0/10
    if (bytes[0] == 169 && bytes[1] == 254) return true;          // link-local
    return false;
  }
  if ((bytes[0] & 0xFE) == 0xFC) return true;  // fc00::/7 unique local
  if (a.isIPv4Mapped() || a.isIPv4Compatible()) {
    return internalAddress(Poco::Net::IPAddress(bytes + 12, 4));
  }
  return false;
}

}  // namespace

class Directory : public sdk::IdentityDirectory {
 public:
  explicit Directory(sdk::Database& db) : db_(db) {}

  std::optional<sdk::IdentityRef> find(const std::string& account_id,
                                       const std::string& identity_uuid) override {
    if (!sdk::isUuid(identity_uuid)) return std::nullopt;
    const std::string uuid = Poco::toLower(identity_uuid);
    {
      std::lock_guard lock(mutex_);
      auto it = cache_.find(uuid);
      if (it != cache_.end() && sdk::nowMicros() - it->second.at_us < 1000000) {
        if (it->second.account_id != account_id) return std::nullopt;
        return it->second.ref;
      }
    }
    Poco::Data::Session s = db_.session();
    std::vector<Row> rows;
    std::string u = uuid;
    s << std::string(kColumns) + "WHERE uuid = ?", use(u), into(rows), now;
    if (rows.empty()) return std::nullopt;
    Identity i = toIdentity(rows.front());
    sdk::IdentityRef ref{i.uuid, i.name};
    {
      std::lock_guard lock(mutex_);
      if (cache_.size() > 100000) cache_.clear();
      cache_[uuid] = {i.account_id, ref, sdk::nowMicros()};
    }
    if (i.account_id != account_id) return std::nullopt;
    return ref;
  }

  void forget(const std::string& uuid) {
    std::lock_guard lock(mutex_);
    cache_.erase(uuid);
  }

 private:
  struct Entry {
    std::string account_id;
    sdk::IdentityRef ref;
    std::int64_t at_us;
  };
  sdk::Database& db_;
  std::mutex mutex_;
  std::unordered_map<std::string, Entry> cache_;  // a second at most: names change rarely
};

class IdentitiesPlugin : public sdk::Plugin {
 public:
  IdentitiesPlugin() {
    info_.name = "identities";
    info_.version = "0.1.0";
    info_.description = "Identities: the personas agents act as, and their voice-agent settings.";
    info_.events = {
        {"identity.created", "An identity was created; object: the identity as GET shows it.", {}},
        {"identity.updated", "An identity was changed; object: the identity as GET shows it.", {}},
    };
    info_.offers_services = {sdk::kIdentityDirectoryService.name};
    info_.uses_services = {sdk::kInboxProvisioningService.name};
    info_.config = {
        {"identities.voice.allow_private_urls", "false",
         "let voice-agent response URLs point at loopback or private addresses", false},
    };
  }

  const sdk::PluginInfo& info() const override { return info_; }

  void configure(sdk::PluginContext& context) override {
    context_ = &context;
    allow_private_urls_ = context.config().getBool("identities.voice.allow_private_urls", false);
  }

  std::vector<sdk::Migration> migrations() const override {
    return {sdk::Migration::portable(
        1, "identities and their voice-agent settings",
        {"CREATE TABLE identities (uuid CHAR(36) NOT NULL PRIMARY KEY, "
         "account_id CHAR(36) NOT NULL, name VARCHAR(400) NOT NULL, "
         "created_us BIGINT NOT NULL, updated_us BIGINT NOT NULL)",
         "CREATE INDEX identities_account ON identities (account_id, created_us)",
         "CREATE TABLE identity_voice_agents (identity_uuid CHAR(36) NOT NULL PRIMARY KEY, "
         "response_url VARCHAR(2048) NOT NULL, enabled SMALLINT NOT NULL, "
         "created_us BIGINT NOT NULL, updated_us BIGINT NOT NULL)"})};
  }

  void registerRoutes(sdk::RouteRegistry& routes) override {
    using sdk::AuthNeed;
    using sdk::BodyKind;
    auto add = [&](const char* method, const char* pattern, AuthNeed need, const char* summary,
                   sdk::Handler h) {
      routes.add({method, pattern, need, BodyKind::kJson, 0, summary, std::move(h)});
    };
    add("GET", "/api/identities/", AuthNeed::kAnyKey, "List identities.",
        [this](sdk::Request& r) { return list(r); });
    add("POST", "/api/identities/", AuthNeed::kAccount, "Create an identity.",
        [this](sdk::Request& r) { return create(r); });
    for (const char* method : {"GET", "PUT", "PATCH"}) {
      add(method, "/api/identities/{uuid}/", AuthNeed::kAnyKey, "An identity.",
          [this](sdk::Request& r) { return one(r); });
      add(method, "/api/identities/{uuid}/voice-agent/", AuthNeed::kAnyKey,
          "An identity's voice-agent settings.", [this](sdk::Request& r) { return voice(r); });
    }
    add("POST", "/api/identities/{uuid}/provision-phone/", AuthNeed::kAnyKey,
        "Give an identity a phone number.", [this](sdk::Request& r) { return provisionPhone(r); });
  }

  void registerServices(sdk::ServiceRegistry& services) override {
    directory_ = std::make_shared<Directory>(context_->database());
    services.offer(sdk::kIdentityDirectoryService, directory_);
  }

  void start() override { inboxes_ = context_->services().find(sdk::kInboxProvisioningService); }
  void stop() override {}

 private:
  // The identity a {uuid} route names, fenced like the kernel fences `identity=`: an identity key
  // reaches only its own (403 otherwise); another account's or a missing one is 404.
  Identity target(const sdk::Request& r) {
    const std::string uuid = Poco::toLower(r.params.at("uuid"));
    if (r.principal.kind == sdk::PrincipalKind::kIdentity &&
        uuid != Poco::toLower(r.principal.bound_identity)) {
      throw sdk::HttpError(403, "permission_denied",
                           "This identity key is bound to another identity.");
    }
    if (!sdk::isUuid(uuid)) throw sdk::HttpError::notFound("identity");
    auto found = load(uuid);
    if (!found || found->account_id != r.principal.account_id) {
      throw sdk::HttpError::notFound("identity");
    }
    return *found;
  }

  std::optional<Identity> load(const std::string& uuid) {
    Poco::Data::Session s = context_->database().session();
    std::vector<Row> rows;
    std::string u = uuid;
    s << std::string(kColumns) + "WHERE uuid = ?", use(u), into(rows), now;
    if (rows.empty()) return std::nullopt;
    return toIdentity(rows.front());
  }

  sdk::Response list(sdk::Request& r) {
    const sdk::PageRequest page = sdk::pageRequest(r);
    Poco::JSON::Array::Ptr results = new Poco::JSON::Array;
    long count = 0;
    if (r.principal.kind == sdk::PrincipalKind::kIdentity) {
      auto own = load(Poco::toLower(r.principal.bound_identity));
      if (own && own->account_id == r.principal.account_id) {
        count = 1;
        if (page.offset == 0) results->add(json(*own));
      }
    } else {
      Poco::Data::Session s = context_->database().session();
      std::string account = r.principal.account_id;
      s << "SELECT COUNT(*) FROM identities WHERE account_id = ?", use(account), into(count), now;
      std::vector<Row> rows;
      int limit = page.limit, offset = page.offset;
      s << std::string(kColumns) +
               "WHERE account_id = ? ORDER BY created_us, uuid LIMIT ? OFFSET ?",
          use(account), use(limit), use(offset), into(rows), now;
      std::vector<Identity> found;
      std::vector<std::string> ids;
      for (auto& row : rows) {
        found.push_back(toIdentity(row));
        ids.push_back(found.back().uuid);
      }
      auto emails =
          inboxes_ ? inboxes_->primaryInboxes(ids) : std::map<std::string, sdk::InboxAddress>();
      for (const auto& i : found) {
        auto e = emails.find(i.uuid);
        results->add(identityJson(
            i, e == emails.end() ? std::nullopt : std::optional<sdk::InboxAddress>(e->second)));
      }
    }
    return sdk::Response::json(200, sdk::pageBody(r, page, count, results));
  }

  sdk::Response create(sdk::Request& r) {
    auto name = r.stringField("name");
    if (!name) throw sdk::HttpError::invalid("name", "this field is required");
    Identity i;
    i.name = validName(*name);
    std::string identifier = r.stringField("email_identifier").value_or("");
    if (!identifier.empty() ||
        (r.json && r.json->has("email_identifier") && !r.json->isNull("email_identifier"))) {
      // Checked here too, not only by the email plugin: a bad identifier is 400 even on a
      // server without email (where any identifier is otherwise 503).
      if (!sdk::isValidInboxLocalPart(identifier)) {
        throw sdk::HttpError::invalid("email_identifier",
                                      "1-64 of a-z 0-9 . _ -, starting and ending with a letter "
                                      "or digit, no two dots in a row");
      }
    }
    std::string domain = Poco::toLower(Poco::trim(r.stringField("domain").value_or("")));
    if ((!identifier.empty() || !domain.empty()) && !inboxes_) {
      throw sdk::HttpError(503, "service_unavailable",
                           "Email is not enabled on this server, so no inbox can be made.");
    }
    if (r.boolField("provision_phone").value_or(false)) throw noPhones();
    i.uuid = sdk::newUuid();
    i.account_id = r.principal.account_id;
    i.created_us = i.updated_us = sdk::nowMicros();
    Poco::JSON::Object::Ptr body;
    context_->database().transaction([&](Poco::Data::Session& s) {
      Poco::Int64 at = i.created_us;
      s << "INSERT INTO identities (uuid, account_id, name, created_us, updated_us) VALUES (?, ?, "
           "?, ?, ?)",
          use(i.uuid), use(i.account_id), use(i.name), use(at), bind(at), now;
      // The inbox in the same transaction: a taken address leaves no identity behind.
      std::optional<sdk::InboxAddress> email;
      if (inboxes_) {
        email = inboxes_->createPrimary(s, i.account_id, i.uuid, i.name, identifier, domain);
      }
      body = identityJson(i, email);
      publish(s, "identity.created", i, body);
    });
    return sdk::Response::json(201, body);
  }

  sdk::Response one(sdk::Request& r) {
    Identity i = target(r);
    if (r.method == "GET") return sdk::Response::json(200, json(i));
    auto name = r.stringField("name");
    if (r.method == "PUT" && !name) throw sdk::HttpError::invalid("name", "this field is required");
    if (name) i.name = validName(*name);
    i.updated_us = sdk::nowMicros();
    Poco::JSON::Object::Ptr body = json(i);
    context_->database().transaction([&](Poco::Data::Session& s) {
      Poco::Int64 at = i.updated_us;
      s << "UPDATE identities SET name = ?, updated_us = ? WHERE uuid = ?", use(i.name), use(at),
          use(i.uuid), now;
      publish(s, "identity.updated", i, body);
    });
    directory_->forget(i.uuid);
    return sdk::Response::json(200, body);
  }

  static sdk::HttpError noPhones() {
    return sdk::HttpError(503, "service_unavailable",
                          "No phone number can be provisioned now: SMS is not enabled on this "
                          "server.");
  }

  sdk::Response provisionPhone(sdk::Request& r) {
    target(r);
    if (auto country = r.stringField("country_code")) {
      if (country->size() != 2 || !std::isalpha(static_cast<unsigned char>((*country)[0])) ||
          !std::isalpha(static_cast<unsigned char>((*country)[1]))) {
        throw sdk::HttpError::invalid("country_code", "an ISO 3166 alpha-2 code such as US");
      }
    }
    throw noPhones();
  }

  // response_url: http(s), no credentials, and (unless allowed) resolving only to public
  // addresses, so svcd cannot be aimed at the operator's own network.
  std::string checkedUrl(const std::string& raw) {
    if (raw.size() > 2048) throw sdk::HttpError::invalid("response_url", "at most 2048 characters");
    Poco::URI uri;
    try {
      uri = Poco::URI(raw);
    } catch (const Poco::Exception&) {
      throw sdk::HttpError::invalid("response_url", "must be an absolute http or https URL");
    }
    if ((uri.getScheme() != "http" && uri.getScheme() != "https") || uri.getHost().empty()) {
      throw sdk::HttpError::invalid("response_url", "must be an absolute http or https URL");
    }
    if (!uri.getUserInfo().empty()) {
      throw sdk::HttpError::invalid("response_url", "must not carry credentials");
    }
    if (allow_private_urls_) return raw;
    std::vector<Poco::Net::IPAddress> addresses;
    Poco::Net::IPAddress literal;
    if (Poco::Net::IPAddress::tryParse(uri.getHost(), literal)) {
      addresses.push_back(literal);
    } else {
      try {
        addresses = Poco::Net::DNS::hostByName(uri.getHost()).addresses();
      } catch (const Poco::Exception&) {
        throw sdk::HttpError::invalid("response_url", "the host name does not resolve");
      }
    }
    if (addresses.empty()) {
      throw sdk::HttpError::invalid("response_url", "the host name does not resolve");
    }
    for (const auto& a : addresses) {
      if (internalAddress(a)) {
        throw sdk::HttpError::invalid("response_url",
                                      "must not point at a loopback, private or link-local "
                                      "address");
      }
    }
    return raw;
  }

  sdk::Response voice(sdk::Request& r) {
    Identity i = target(r);
    Poco::Data::Session s = context_->database().session();
    using VoiceRow = Poco::Tuple<std::string, int, Poco::Int64>;
    std::vector<VoiceRow> rows;
    s << "SELECT response_url, enabled, updated_us FROM identity_voice_agents WHERE "
         "identity_uuid = ?",
        use(i.uuid), into(rows), now;
    std::optional<std::string> url;
    bool enabled = false;
    std::int64_t updated = 0;
    if (!rows.empty()) {
      url = rows.front().get<0>();
      enabled = rows.front().get<1>() != 0;
      updated = rows.front().get<2>();
    }
    if (r.method != "GET") {
      auto new_url = r.stringField("response_url");
      auto new_enabled = r.boolField("enabled");
      if (r.method == "PUT" && !new_url) {
        throw sdk::HttpError::invalid("response_url", "this field is required");
      }
      if (new_url) url = checkedUrl(*new_url);
      if (new_enabled) {
        enabled = *new_enabled;
      } else if (r.method == "PUT") {
        enabled = true;  // setting a URL with PUT turns the agent on unless told otherwise
      }
      if (!url) throw sdk::HttpError::invalid("response_url", "set a response_url first");
      updated = sdk::nowMicros();
      context_->database().transaction([&](Poco::Data::Session& t) {
        std::string u = i.uuid, address = *url;
        int on = enabled ? 1 : 0;
        Poco::Int64 at = updated;
        Poco::Data::Statement update =
            (t << "UPDATE identity_voice_agents SET response_url = ?, enabled = ?, updated_us = "
                  "? WHERE identity_uuid = ?",
             use(address), use(on), use(at), use(u));
        if (update.execute() == 0) {
          t << "INSERT INTO identity_voice_agents (identity_uuid, response_url, enabled, "
               "created_us, updated_us) VALUES (?, ?, ?, ?, ?)",
              use(u), use(address), use(on), use(at), bind(at), now;
        }
      });
    }
    Poco::JSON::Object::Ptr o = new Poco::JSON::Object;
    o->set("response_url", url ? Poco::Dynamic::Var(*url) : Poco::Dynamic::Var());
    o->set("enabled", enabled);
    o->set("updated_dt",
           updated ? Poco::Dynamic::Var(sdk::isoTimestamp(updated)) : Poco::Dynamic::Var());
    return sdk::Response::json(200, o);
  }

  // The identity with its primary inbox, as every identity route shows it.
  Poco::JSON::Object::Ptr json(const Identity& i) {
    std::optional<sdk::InboxAddress> email;
    if (inboxes_) {
      auto found = inboxes_->primaryInboxes({i.uuid});
      if (auto it = found.find(i.uuid); it != found.end()) email = it->second;
    }
    return identityJson(i, email);
  }

  void publish(Poco::Data::Session& s, const std::string& type, const Identity& i,
               const Poco::JSON::Object::Ptr& body) {
    context_->events().publish(type, i.account_id, i.uuid, body, &s);
  }

  sdk::PluginInfo info_;
  sdk::PluginContext* context_ = nullptr;
  bool allow_private_urls_ = false;
  std::shared_ptr<Directory> directory_;
  std::shared_ptr<sdk::InboxProvisioning> inboxes_;
};

}  // namespace svc::plugins::identities

SVC_PLUGIN(svc::plugins::identities::IdentitiesPlugin)
