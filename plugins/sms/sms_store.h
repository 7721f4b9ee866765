// The sms plugin's tables and their rows: phones (a number held by one identity), messages (both
// directions, with carrier status), conversations (a phone and the other party, kept up to date
// with every message so the inbox lists without grouping) and calls. Writes publish their
// events in the same transaction.
#pragma once

#include "provider.h"

#include <svc/sdk/events.h>
#include <svc/sdk/storage.h>

#include <Poco/Data/Session.h>
#include <Poco/Data/Statement.h>
#include <Poco/JSON/Object.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace svc::plugins::sms {

struct PhoneRow {
  std::string id, account_id, identity_uuid, number, country_code, provider, provider_ref;
  std::int64_t created_us = 0;
};

struct SmsRow {
  std::string id, account_id, identity_uuid, phone_id, other_number, direction, from_number,
      to_number, body, encoding, status, error_code, error_message, carrier_ref, extracted_code;
  int segments = 1;
  bool is_read = false;
  std::int64_t created_us = 0, updated_us = 0;
  /// @return `{phone_id}_{other_number}`.
  std::string conversationId() const { return phone_id + "_" + other_number; }
};

/// @param direction incoming or outgoing. @param phone the number of ours it concerns.
/// @param other the other party. @param body the text. @return a new message row (not stored):
/// id, times, segments, encoding and extracted code filled in; status `received` (incoming) or
/// `queued`.
SmsRow newMessage(const std::string& direction, const PhoneRow& phone, const std::string& other,
                  const std::string& body);

class SmsStore {
 public:
  SmsStore(sdk::Database& database, sdk::EventBus& events);
  static std::vector<sdk::Migration> migrations();

  sdk::Database& database() { return db_; }

  std::optional<PhoneRow> phone(Poco::Data::Session& s, const std::string& id);
  std::optional<PhoneRow> phoneByNumber(Poco::Data::Session& s, const std::string& number);
  std::optional<PhoneRow> phoneOfIdentity(Poco::Data::Session& s, const std::string& identity);
  /// @param where `WHERE ...` with `?` for each bind. @return the phones, newest first.
  std::vector<PhoneRow> phones(Poco::Data::Session& s, const std::string& where,
                               std::vector<std::string> binds, int limit, int offset);
  long countPhones(Poco::Data::Session& s, const std::string& where,
                   std::vector<std::string> binds);
  /// Inserts a phone and publishes `phone.provisioned`.
  /// @throws Poco::Exception on a unique violation (number or identity held already).
  void insertPhone(Poco::Data::Session& tx, const PhoneRow& phone);

  /// Inserts a message, brings its conversation up to date, and publishes `sms.received` or
  /// (with publish_sent) `sms.sent`. @throws Poco::Exception on a duplicate carrier ref.
  void insertMessage(Poco::Data::Session& tx, const SmsRow& m, bool publish_sent);
  std::optional<SmsRow> message(Poco::Data::Session& s, const std::string& id);
  std::optional<SmsRow> messageByRef(Poco::Data::Session& s, const std::string& ref);
  /// Applies a delivery status (never moving a message back, even when reports race) and
  /// publishes `sms.updated` when it moved; with as_sent (the carrier's answer to sending), always
  /// `sms.sent`, once per message. @return the row as it now is.
  SmsRow applyDelivery(Poco::Data::Session& tx, SmsRow m, const Delivery& d, bool as_sent);
  /// Marks a message read or unread, with its conversation's count, and publishes `sms.updated`.
  SmsRow setRead(Poco::Data::Session& tx, SmsRow m, bool is_read);

  /// The message columns, in readMessages()'s order (`SELECT ... FROM sms_messages `).
  static const char* messageColumns();
  static std::vector<SmsRow> readMessages(Poco::Data::Statement& select);

  /// Records a call to a number and publishes `call.received`.
  void insertCall(Poco::Data::Session& tx, const PhoneRow& phone, const IncomingCall& call);

  static Poco::JSON::Object::Ptr phoneJson(const PhoneRow& p);
  /// @param with_body false for events (which never carry bodies).
  static Poco::JSON::Object::Ptr messageJson(const SmsRow& m, bool with_body);

 private:
  sdk::Database& db_;
  sdk::EventBus& events_;
};

}  // namespace svc::plugins::sms
