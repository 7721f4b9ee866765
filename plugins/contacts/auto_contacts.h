// auto_contacts: when an identity has it on, the people it writes to (mail and SMS it sends)
// become its contacts, unless it has one with that address or number already.
//
// The plugin knows nothing of the email and sms plugins: it reads their `email.sent` and
// `sms.sent` events (to_email, cc, bcc; to_number). The event bus calls subscribers on the
// kernel's event thread, which must not block, so the subscriber only queues the recipients and a
// worker thread of its own writes the contacts. Several svcd on one database each see every
// event: the contacts' unique indexes make the insert "if absent", so one of them adds it.
//
// The setting is the identity's `contacts` member, `{"auto_contacts": false}` until set, through
// the identities plugin's extension point: `auto_contacts` in the create body or a PATCH.
#pragma once

#include "contact_store.h"

#include <svc/sdk/events.h>
#include <svc/sdk/identity_extensions.h>

#include <Poco/Logger.h>

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace svc::plugins::contacts {

/// Someone an identity wrote to: an email address or a phone number.
struct Correspondent {
  std::string email, phone_number;
};

/// What one sent message asks of the worker.
struct SentMessage {
  std::string account_id, identity_uuid;
  std::vector<Correspondent> to;
};

/// @param event any event. @return its recipients when it is an `email.sent` or `sms.sent` of a
/// message that did not fail, with valid addresses; nothing otherwise.
std::vector<Correspondent> sentTo(const sdk::Event& event);

/// The identity's `contacts` member and its one setting.
class ContactsIdentityExtension : public sdk::IdentityExtension {
 public:
  explicit ContactsIdentityExtension(ContactStore& store);
  const sdk::IdentityCapability& capability() const override { return capability_; }
  void validate(const sdk::Request& request) override;
  Poco::Dynamic::Var provision(Poco::Data::Session& transaction, const sdk::IdentityInfo& identity,
                               const sdk::Request& request) override;
  std::optional<Poco::Dynamic::Var> update(Poco::Data::Session& transaction,
                                           const sdk::IdentityInfo& identity,
                                           const sdk::Request& request) override;
  std::map<std::string, Poco::Dynamic::Var> describe(
      const std::vector<std::string>& identity_uuids) override;
  sdk::Response act(const std::string& action, const sdk::IdentityInfo& identity,
                    sdk::Request& request) override;

 private:
  ContactStore& store_;
  sdk::IdentityCapability capability_;
};

class AutoContacts {
 public:
  AutoContacts(ContactStore& store, Poco::Logger& logger) : store_(store), logger_(logger) {}
  ~AutoContacts();
  /// Subscribes to the bus and starts the worker.
  void start(sdk::EventBus& events);
  /// Unsubscribes and stops the worker (what is still queued is dropped: the messages are sent
  /// either way, and their contacts are a convenience).
  void stop();
  /// Adds the message's correspondents that the identity has no contact for yet, when its
  /// auto_contacts is on. Runs on the worker; public for tests.
  void handle(const SentMessage& message);

 private:
  void run();

  // Far more than a burst of sending makes; past it, recipients are dropped with a warning
  // rather than memory growing without bound behind a stuck database.
  static constexpr std::size_t kMaxQueued = 10000;

  ContactStore& store_;
  Poco::Logger& logger_;
  sdk::EventBus* events_ = nullptr;
  std::uint64_t subscription_ = 0;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<SentMessage> queue_;
  bool stopping_ = false;
  std::thread worker_;
};

}  // namespace svc::plugins::contacts
