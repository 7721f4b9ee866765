#include "password_routes.h"

#include "entry_input.h"
#include "password_generator.h"

#include <svc/sdk/pagination.h>
#include <svc/sdk/util.h>

#include <Poco/JSON/Array.h>
#include <Poco/UTF8String.h>

namespace svc::plugins::passwords {

namespace {

// Answers that carry a password are nobody's to keep: no cache, no proxy.
sdk::Response secretJson(int status, const Poco::JSON::Object::Ptr& body) {
  return sdk::Response::noStore(sdk::Response::json(status, body));
}

// The protected fields a write sets: the ones it gives.
sdk::ProtectedFields protectedFields(const EntryFields& f) {
  sdk::ProtectedFields out;
  if (f.username) out["username"] = *f.username;
  if (f.password) out["password"] = *f.password;
  if (f.notes) out["notes"] = *f.notes;
  return out;
}

// The public key the client sealed the protected fields to, when it says (the vault refuses a
// write sealed to a key that is no longer the account's).
std::string sealedTo(const sdk::Request& r) {
  return r.header(sdk::kSealedToHeader).value_or("");
}

}  // namespace

sdk::Response PasswordEntries::list(sdk::Request& r) {
  const auto page = sdk::pageRequest(r);
  EntryFilter filter;
  filter.account = r.principal.account_id;
  filter.identity = sdk::scopeIdentity(r);
  if (auto d = r.queryParam("domain")) filter.domain = normalizeDomain(*d);
  if (auto q = r.queryParam("search"); q && !q->empty()) {
    if (!sdk::isValidUtf8(*q)) throw sdk::HttpError::invalid("search", "must be UTF-8 text");
    filter.search = Poco::UTF8::toLower(*q);
  }
  Poco::Data::Session s = store_.database().session();
  const long count = store_.count(s, filter);
  const auto rows = store_.list(s, filter, page.limit, page.offset);
  // `values=false`: names only (a dashboard's list, a script's inventory): nothing is decrypted
  // or sent.
  const bool values = r.boolQuery("values").value_or(true);
  const auto secrets =
      values ? store_.secrets(s, rows) : std::map<std::string, sdk::ProtectedFields>{};
  Poco::JSON::Array::Ptr results = new Poco::JSON::Array;
  for (const auto& row : rows) {
    auto it = secrets.find(row.uuid);
    const sdk::ProtectedFields none;
    results->add(PasswordStore::entryJson(row, !values               ? nullptr
                                               : it == secrets.end() ? &none
                                                                     : &it->second));
  }
  return secretJson(200, sdk::pageBody(r, page, count, results));
}

sdk::Response PasswordEntries::create(sdk::Request& r) {
  EntryFields f = readEntryFields(r, EntryWrite::kCreate);
  const std::string account = r.principal.account_id;
  if (!f.password) {
    if (store_.vault().endToEnd(account)) {
      throw sdk::HttpError::invalid(
          "password",
          "this field is required once the account has end-to-end encryption set up: generate "
          "the password on the client and send it sealed (e2e::...), the server must never know "
          "it");
    }
    f.password = generatePassword(GeneratorOptions{});
  }
  EntryRow row;
  row.uuid = sdk::newUuid();
  row.account_id = account;
  row.identity_uuid = sdk::scopeIdentity(r);
  row.domain = *f.domain;
  row.created_us = row.updated_us = sdk::nowMicros();
  sdk::ProtectedFields fields = {{"username", f.username.value_or("")},
                                 {"password", *f.password},
                                 {"notes", f.notes.value_or("")}};
  store_.database().transaction(
      [&](Poco::Data::Session& tx) { store_.insert(tx, row, fields, sealedTo(r)); });
  return secretJson(201, PasswordStore::entryJson(row, &fields));
}

sdk::Response PasswordEntries::one(sdk::Request& r) {
  std::optional<EntryRow> row;
  {
    Poco::Data::Session s = store_.database().session();
    row = store_.entry(s, r.params.at("uuid"));
  }
  if (!row || !sdk::visibleTo(r, row->account_id, row->identity_uuid)) {
    throw sdk::HttpError::notFound("password entry");
  }
  if (r.method == "DELETE") {
    store_.database().transaction([&](Poco::Data::Session& tx) { store_.remove(tx, *row); });
    return sdk::Response::noContent();
  }
  if (r.method == "PUT" || r.method == "PATCH") {
    const EntryFields f =
        readEntryFields(r, r.method == "PUT" ? EntryWrite::kReplace : EntryWrite::kPatch);
    const sdk::ProtectedFields changed = protectedFields(f);
    if (f.domain || !changed.empty()) {
      store_.database().transaction([&](Poco::Data::Session& tx) {
        row = store_.update(tx, *row, f.domain, changed, sealedTo(r));
      });
    }
  }
  Poco::Data::Session s = store_.database().session();
  auto secrets = store_.secrets(s, {*row});
  return secretJson(200, PasswordStore::entryJson(*row, &secrets[row->uuid]));
}

sdk::Response PasswordEntries::generate(sdk::Request& r) {
  Poco::JSON::Object::Ptr o = new Poco::JSON::Object;
  o->set("password", generatePassword(generatorOptions(r)));
  return secretJson(200, o);
}

}  // namespace svc::plugins::passwords
