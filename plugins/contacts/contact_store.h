// The contacts plugin's tables: contacts (one identity's people, at most one per email address,
// compared case-insensitively, and one per phone number: the unique indexes keep that even when
// creates race, here or in another svcd), their search grams (contact_search.h), and each
// identity's settings (auto_contacts). Writes publish their events in the same transaction.
#pragma once

#include <svc/sdk/events.h>
#include <svc/sdk/pagination.h>
#include <svc/sdk/storage.h>

#include <Poco/Data/Session.h>
#include <Poco/JSON/Object.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace svc::plugins::contacts {

struct ContactRow {
  std::string id, account_id, identity_uuid, email, display_name, nickname, phone_number;
  std::int64_t created_us = 0, updated_us = 0;
};

/// Which contacts a read covers: an account's, or one identity's of it.
struct ContactScope {
  std::string account_id;
  std::string identity_uuid;  ///< empty: the whole account
};

class ContactStore {
 public:
  ContactStore(sdk::Database& database, sdk::EventBus& events);
  static std::vector<sdk::Migration> migrations();

  sdk::Database& database() { return db_; }

  /// @param for_update inside a write transaction: lock the row until it ends (MySQL's row
  /// lock; SQLite's writers are serialized already), so a read-modify-write loses no change.
  std::optional<ContactRow> byId(Poco::Data::Session& s, const std::string& id,
                                 bool for_update = false);
  /// @param email any case. @return the identity's contact with that address, or nullopt.
  std::optional<ContactRow> byEmail(Poco::Data::Session& s, const std::string& identity,
                                    const std::string& email);
  /// @param e164 a normalized number. @return the identity's contact with it, or nullopt.
  std::optional<ContactRow> byPhone(Poco::Data::Session& s, const std::string& identity,
                                    const std::string& e164);

  /// Inserts a contact with its grams and publishes `contact.created`.
  /// @throws HttpError 409 `conflict` when the identity has a contact with its email or number.
  void insert(Poco::Data::Session& tx, const ContactRow& c);
  /// Writes a contact's new fields (and grams) and publishes `contact.updated`.
  /// @param before the row as stored. @param after the same contact, changed.
  /// @throws HttpError 409 `conflict` as insert().
  void update(Poco::Data::Session& tx, const ContactRow& before, const ContactRow& after);
  /// Deletes a contact and publishes `contact.deleted` with it as it was.
  void remove(Poco::Data::Session& tx, const ContactRow& c);

  /// @return a page of the scope's contacts, newest first.
  std::vector<ContactRow> list(Poco::Data::Session& s, const ContactScope& scope, int limit,
                               int offset);
  long count(Poco::Data::Session& s, const ContactScope& scope);
  /// One page of a search and how many match.
  struct SearchPage {
    std::vector<ContactRow> rows;  ///< The page, newest first.
    long count = 0;                ///< How many match: exact, or at least this many.
    bool exact = true;             ///< Whether count is exact.
  };
  /// @param folded a case-folded query (foldCase), without line breaks. @param page the page.
  /// @param exact_count_limit a search matching many contacts counts at most this many.
  /// @return the scope's contacts matching it (contact_search.h says how).
  SearchPage search(Poco::Data::Session& s, const ContactScope& scope, const std::string& folded,
                    const sdk::PageRequest& page, long exact_count_limit);

  /// @return each of the identities' auto_contacts setting (false when never set).
  std::map<std::string, bool> autoContacts(Poco::Data::Session& s,
                                           const std::vector<std::string>& identities);
  void setAutoContacts(Poco::Data::Session& tx, const std::string& account,
                       const std::string& identity, bool on);

  static Poco::JSON::Object::Ptr json(const ContactRow& c);

  /// Sets how many contacts may hold a gram for it to select candidates (default 5000; more are
  /// common, and the search scans instead), so tests take both ways with few rows.
  void setRareGramForTest(long holders) { rare_gram_ = holders; }

 private:
  /// @return the keys of at most two of q's grams that the fewest contacts hold, when the
  /// rarest is held by fewer than rare_gram_; empty when every one is common (or q has none).
  std::vector<std::int64_t> rarestGrams(Poco::Data::Session& s, const std::string& account,
                                        const std::string& folded);
  void writeGrams(Poco::Data::Session& tx, const ContactRow& c);
  [[noreturn]] void conflict(const ContactRow& c, const std::string& why);

  sdk::Database& db_;
  sdk::EventBus& events_;
  // A gram more contacts than this hold is common: its candidates would cost more to read than
  // scanning the scope newest first until a page is full.
  long rare_gram_ = 5000;
};

}  // namespace svc::plugins::contacts
