// Reading mail: threads (/api/email-inbox/) and messages (/api/email-messages/), with their list
// filters, and marking a message read.
#pragma once

#include "mail_store.h"

#include <svc/sdk/http.h>
#include <svc/sdk/storage.h>

#include <Poco/Data/Session.h>
#include <Poco/Data/Statement.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace svc::plugins::email {

/// A list's WHERE clause and what it binds, read from the request's query and scope.
struct ThreadFilter {
  std::string where;               ///< `WHERE account_id = ? ...`
  std::vector<std::string> binds;  ///< In the order of the placeholders.
};
/// @return the filter of a thread list: the account, the scope's identity, `inbox` and
/// `has_unread`. @throws HttpError 400 naming the parameter when one is not valid.
ThreadFilter threadFilter(const sdk::Request& r);

/// The WHERE clause of a message list. Placeholders bind in this order: binds[0], after (when
/// set), binds[1...], is_read (when set): bind() does it.
struct MessageFilter {
  std::string where;
  std::vector<std::string> binds;
  std::optional<std::int64_t> after;  ///< created_after, in microseconds.
  std::optional<int> is_read;         ///< 1 or 0.
  /// Binds the filter's values to q, which must outlive nothing here but this filter.
  void bind(Poco::Data::Statement& q);
};
/// @return the filter of a message list: the identity (when scoped) or the account, then
/// created_after, direction, thread_id, from_email, inbox and is_read.
/// @throws HttpError 400 naming the parameter when one is not valid.
MessageFilter messageFilter(const sdk::Request& r);

class Messages {
 public:
  /// @param exact_count_limit message lists count exactly up to this many.
  Messages(sdk::Database& database, MailStore& store, long exact_count_limit);

  sdk::Response listThreads(sdk::Request& r);
  sdk::Response oneThread(sdk::Request& r);
  sdk::Response list(sdk::Request& r);
  /// GET, or PUT/PATCH of is_read.
  sdk::Response one(sdk::Request& r);

  /// @return the message named by the path's id when the request may see it.
  /// @throws HttpError 404.
  MessageRow visibleMessage(const sdk::Request& r, Poco::Data::Session& s);

 private:
  sdk::Database& database_;
  MailStore& store_;
  long exact_count_limit_;
};

}  // namespace svc::plugins::email
