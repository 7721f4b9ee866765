#include "contact_routes.h"

#include "contact_fields.h"
#include "contact_search.h"

#include <svc/sdk/addresses.h>
#include <svc/sdk/pagination.h>
#include <svc/sdk/util.h>

#include <Poco/JSON/Array.h>
#include <Poco/String.h>

namespace svc::plugins::contacts {

namespace {

// The most characters a search may have: longer than any field it could be a substring of.
constexpr std::size_t kMaxQueryCharacters = 254;

ContactScope scopeOf(const sdk::Request& r) {
  return {r.principal.account_id, sdk::scopeIdentity(r)};
}

sdk::HttpError needsEmailOrPhone() {
  return sdk::HttpError(400, "invalid",
                        "A contact needs an email or a phone_number (or both); see errors.")
      .field("email", "give an email or a phone_number")
      .field("phone_number", "give an email or a phone_number");
}

void apply(const ContactFields& f, ContactRow& c) {
  if (f.email) c.email = *f.email;
  if (f.phone_number) c.phone_number = *f.phone_number;
  if (f.display_name) c.display_name = *f.display_name;
  if (f.nickname) c.nickname = *f.nickname;
}

Poco::JSON::Array::Ptr jsonArray(const std::vector<ContactRow>& rows) {
  Poco::JSON::Array::Ptr out = new Poco::JSON::Array;
  for (const auto& c : rows) out->add(ContactStore::json(c));
  return out;
}

}  // namespace

void ContactRoutes::registerIn(sdk::RouteRegistry& routes) {
  using sdk::AuthNeed;
  using sdk::Schema;
  const Schema contact = contactSchema(), input = contactInputSchema();
  const sdk::RouteError taken{409, "conflict",
                              "the identity has a contact with that email or phone number"};
  auto add = [&](const char* method, const char* pattern, AuthNeed need, const char* summary,
                 sdk::Handler h, std::optional<Schema> request, std::vector<sdk::Param> query,
                 std::map<int, Schema> responses, std::vector<sdk::RouteError> errors = {}) {
    routes.add({method, pattern, need, sdk::BodyKind::kJson, 0, summary, std::move(h),
                std::move(request), std::move(query), std::move(responses), std::move(errors)});
  };
  add("POST", "/api/contacts/", AuthNeed::kIdentity,
      "Add a contact to the identity (an email or a phone_number, or both).",
      sdk::bindHandler(*this, &ContactRoutes::create), input, {}, {{201, contact}}, {taken});
  add("GET", "/api/contacts/", AuthNeed::kAnyKey, "Contacts, newest first.",
      sdk::bindHandler(*this, &ContactRoutes::list), std::nullopt, sdk::pageParams(),
      {{200, sdk::pageOf(contact, "ContactList")}});
  add("GET", "/api/contacts/find/", AuthNeed::kIdentity,
      "The identity's contact with an email (any case) or phone_number.",
      sdk::bindHandler(*this, &ContactRoutes::find), std::nullopt,
      {{"email", Schema::string(), false, "An email address (give this or phone_number)."},
       {"phone_number", Schema::string(), false, "A phone number (give this or email)."}},
      {{200, contact}});
  std::vector<sdk::Param> search = {
      {"q",
       Schema::string()
           .minLength(1)
           .maxLength(kMaxQueryCharacters)
           .pattern("^[^\\x00-\\x1f\\x7f]*$", "must be UTF-8 text without control characters"),
       true, "Text in the email, display name, nickname or phone number (any case)."}};
  for (auto& p : sdk::pageParams()) search.push_back(std::move(p));
  add("GET", "/api/contacts/search/", AuthNeed::kAnyKey,
      "Contacts whose email, display name, nickname or phone number contains q.",
      sdk::bindHandler(*this, &ContactRoutes::search), std::nullopt, search,
      {{200, sdk::pageOf(contact, "ContactSearchPage")}});
  const auto one = sdk::bindHandler(*this, &ContactRoutes::one);
  add("GET", "/api/contacts/{uuid}/", AuthNeed::kAnyKey, "One contact.", one, std::nullopt, {},
      {{200, contact}});
  add("PATCH", "/api/contacts/{uuid}/", AuthNeed::kAnyKey,
      "Change a contact's fields (null clears; an email or a phone_number must remain).", one,
      input, {}, {{200, contact}}, {taken});
  add("DELETE", "/api/contacts/{uuid}/", AuthNeed::kAnyKey, "Delete a contact.", one, std::nullopt,
      {}, {{204, Schema::any()}});
}

sdk::Response ContactRoutes::create(sdk::Request& r) {
  const ContactFields fields = readContactFields(r.json);
  ContactRow c;
  apply(fields, c);
  if (c.email.empty() && c.phone_number.empty()) throw needsEmailOrPhone();
  c.id = sdk::newUuid();
  c.account_id = r.principal.account_id;
  c.identity_uuid = Poco::toLower(r.identity->uuid);
  c.created_us = c.updated_us = sdk::nowMicros();
  // The unique indexes decide, not a read before: two creates racing get one 201 and one 409.
  store_.database().transaction([&](Poco::Data::Session& tx) { store_.insert(tx, c); });
  return sdk::Response::json(201, ContactStore::json(c));
}

sdk::Response ContactRoutes::list(sdk::Request& r) {
  const auto page = sdk::pageRequest(r);
  const ContactScope scope = scopeOf(r);
  Poco::Data::Session s = store_.database().session();
  const long count = store_.count(s, scope);
  auto rows = store_.list(s, scope, page.limit, page.offset);
  return sdk::Response::json(200, sdk::pageBody(r, page, count, jsonArray(rows)));
}

sdk::Response ContactRoutes::find(sdk::Request& r) {
  auto email = r.queryParam("email");
  auto phone = r.queryParam("phone_number");
  if (email.has_value() == phone.has_value()) {
    throw sdk::HttpError(400, "invalid", "Give exactly one of email and phone_number.")
        .field(email ? "phone_number" : "email", "give exactly one of email and phone_number");
  }
  const std::string identity = Poco::toLower(r.identity->uuid);
  Poco::Data::Session s = store_.database().session();
  std::optional<ContactRow> found;
  if (email) {
    const std::string address = Poco::trim(*email);
    if (!sdk::isValidEmailAddress(address)) {
      throw sdk::HttpError::invalid("email", "must be an email address such as name@example.com");
    }
    found = store_.byEmail(s, identity, address);
  } else {
    // A `+` left unencoded in a query string arrives as a space: read it as the `+` it was.
    std::string number = *phone;
    if (!number.empty() && number[0] == ' ') number[0] = '+';
    auto e164 = sdk::normalizeE164(number);
    if (!e164) {
      throw sdk::HttpError::invalid("phone_number",
                                    "must be a phone number in E.164 form, such as +12025550123");
    }
    found = store_.byPhone(s, identity, *e164);
  }
  if (!found || found->account_id != r.principal.account_id) {
    throw sdk::HttpError::notFound("contact");
  }
  return sdk::Response::json(200, ContactStore::json(*found));
}

sdk::Response ContactRoutes::search(sdk::Request& r) {
  // Present, 1-254 characters of text: the declaration's. Folding can lengthen it.
  const std::string q = r.queryParam("q").value_or("");
  const std::string folded = foldCase(q);
  if (characterCount(folded) > kMaxQueryCharacters) {
    throw sdk::HttpError::invalid(
        "q", "must be at most " + std::to_string(kMaxQueryCharacters) + " characters");
  }
  const auto page = sdk::pageRequest(r);
  const ContactScope scope = scopeOf(r);
  Poco::Data::Session s = store_.database().session();
  // A query as common as `.com` matches most rows: counting them all on every call would cost a
  // scan, so at most exact_count_limit are counted (count_is_exact says when there are more).
  const auto found = store_.search(s, scope, folded, page, exact_count_limit_);
  Poco::JSON::Object::Ptr out = sdk::pageBody(r, page, found.count, jsonArray(found.rows));
  out->set("count_is_exact", found.exact);
  return sdk::Response::json(200, out);
}

sdk::Response ContactRoutes::one(sdk::Request& r) {
  Poco::Data::Session s = store_.database().session();
  auto c = store_.byId(s, r.params.at("uuid"));
  if (!c || !sdk::visibleTo(r, c->account_id, c->identity_uuid)) {
    throw sdk::HttpError::notFound("contact");
  }
  if (r.method == "GET") return sdk::Response::json(200, ContactStore::json(*c));
  if (r.method == "DELETE") {
    // The row as it is inside the transaction: a PATCH committed since the read above changed
    // its grams, and those are the ones to delete.
    store_.database().transaction([&](Poco::Data::Session& tx) {
      if (auto now = store_.byId(tx, c->id, true)) store_.remove(tx, *now);
    });
    return sdk::Response::noContent();
  }
  const ContactFields fields = readContactFields(r.json);
  // Applied to the row as it is inside the transaction: a PATCH of the nickname racing one of
  // the email keeps both.
  store_.database().transaction([&](Poco::Data::Session& tx) {
    auto before = store_.byId(tx, c->id, true);
    if (!before) throw sdk::HttpError::notFound("contact");
    c = before;
    apply(fields, *c);
    if (c->email.empty() && c->phone_number.empty()) throw needsEmailOrPhone();
    c->updated_us = sdk::nowMicros();
    store_.update(tx, *before, *c);
  });
  return sdk::Response::json(200, ContactStore::json(*c));
}

}  // namespace svc::plugins::contacts
