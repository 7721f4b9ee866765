#include "sms_messages.h"

#include "phone_text.h"

#include <svc/sdk/pagination.h>
#include <svc/sdk/util.h>

#include <Poco/JSON/Array.h>
#include <Poco/String.h>
#include <Poco/Tuple.h>

#include <algorithm>

using namespace Poco::Data::Keywords;

namespace svc::plugins::sms {

namespace {

using ConversationTuple = Poco::Tuple<std::string, std::string, std::string, std::string,
                                      std::string, int, int, Poco::Int64>;

Poco::JSON::Object::Ptr conversationJson(const ConversationTuple& t) {
  Poco::JSON::Object::Ptr o = new Poco::JSON::Object;
  o->set("conversation_id", t.get<0>());
  o->set("phone", t.get<1>());
  o->set("identity", t.get<2>());
  o->set("phone_number", t.get<3>());
  o->set("preview", t.get<4>());
  o->set("message_count", t.get<5>());
  o->set("unread_count", t.get<6>());
  o->set("latest_dt", sdk::isoTimestamp(t.get<7>()));
  return o;
}

constexpr const char* kConversationColumns =
    "SELECT id, phone_id, identity_uuid, other_number, preview, message_count, unread_count, "
    "latest_us FROM sms_conversations ";

}  // namespace

std::optional<std::pair<std::string, std::string>> parseConversationId(const std::string& id) {
  const auto sep = id.find('_');
  if (sep == std::string::npos) return std::nullopt;
  std::string phone = Poco::toLower(id.substr(0, sep));
  std::string other = id.substr(sep + 1);
  if (!sdk::isUuid(phone) || other.empty() || other.size() > 32 ||
      sdk::hasControlCharacter(other)) {
    return std::nullopt;
  }
  return std::make_pair(phone, other);
}

sdk::Response SmsMessages::list(sdk::Request& r) {
  const auto page = sdk::pageRequest(r);
  std::string where;
  std::vector<std::string> binds;
  // The identity index serves a scoped list, the account index the rest.
  if (std::string identity = sdk::scopeIdentity(r); !identity.empty()) {
    where = "WHERE identity_uuid = ?";
    binds = {identity};
  } else {
    where = "WHERE account_id = ?";
    binds = {r.principal.account_id};
  }
  std::optional<Poco::Int64> after;
  // The parameters' shapes were checked against the route's declaration (sms_routes.cpp).
  if (auto raw = r.queryParam("created_after")) {
    after = sdk::parseIsoMicros(*raw).value_or(0);
    where += " AND created_us > ?";
  }
  if (auto d = r.queryParam("direction")) {
    where += " AND direction = ?";
    binds.push_back(*d);
  }
  if (auto p = r.queryParam("phone")) {
    where += " AND phone_id = ?";
    binds.push_back(Poco::toLower(*p));
  }
  std::optional<int> is_read;
  if (auto v = r.boolQuery("is_read")) {
    is_read = *v ? 1 : 0;
    where += " AND is_read = ?";
  }
  auto bind = [&](Poco::Data::Statement& q) {
    q, use(binds[0]);
    if (after) q, use(*after);
    for (std::size_t i = 1; i < binds.size(); ++i) q, use(binds[i]);
    if (is_read) q, use(*is_read);
  };
  Poco::Data::Session s = store_.database().session();
  // Counted as email's list is: at most sms.messages.exact_count.
  const auto counted = sdk::cappedCount(config_.exact_count_limit, page, [&](std::int64_t limit) {
    long n = 0;
    Poco::Int64 probe = limit;
    Poco::Data::Statement q =
        (s << "SELECT COUNT(*) FROM (SELECT 1 FROM sms_messages " + where + " LIMIT ?) AS c");
    bind(q);
    q, use(probe), into(n), now;
    return n;
  });
  int limit = page.limit, offset = page.offset;
  // Newest first; but a cursor walks forward: with created_after the oldest newer ones come
  // first, so moving the cursor to the last one seen skips nothing.
  const std::string order =
      after ? " ORDER BY created_us, id" : " ORDER BY created_us DESC, id DESC";
  Poco::Data::Statement q =
      (s << std::string(SmsStore::messageColumns()) + where + order + " LIMIT ? OFFSET ?");
  bind(q);
  q, use(limit), use(offset);
  Poco::JSON::Array::Ptr results = new Poco::JSON::Array;
  for (const auto& m : SmsStore::readMessages(q)) results->add(SmsStore::messageJson(m, true));
  Poco::JSON::Object::Ptr out = sdk::pageBody(r, page, counted.count, results);
  out->set("count_is_exact", counted.exact);
  return sdk::Response::json(200, out);
}

sdk::Response SmsMessages::one(sdk::Request& r) {
  Poco::Data::Session s = store_.database().session();
  auto m = store_.message(s, r.params.at("id"));
  if (!m || !sdk::visibleTo(r, m->account_id, m->identity_uuid)) {
    throw sdk::HttpError::notFound("message");
  }
  if (r.method != "GET") {
    // PUT's declaration requires is_read; PATCH's takes it or nothing.
    if (auto is_read = r.boolField("is_read")) {
      store_.database().transaction([&](Poco::Data::Session& tx) {
        if (auto fresh = store_.message(tx, m->id)) m = store_.setRead(tx, *fresh, *is_read);
      });
    }
  }
  return sdk::Response::json(200, SmsStore::messageJson(*m, true));
}

sdk::Response SmsMessages::inbox(sdk::Request& r) {
  const auto page = sdk::pageRequest(r);
  std::string where = "WHERE account_id = ?";
  std::vector<std::string> binds = {r.principal.account_id};
  if (std::string identity = sdk::scopeIdentity(r); !identity.empty()) {
    where += " AND identity_uuid = ?";
    binds.push_back(identity);
  }
  if (auto p = r.queryParam("phone")) {  // a uuid, as the route declares
    where += " AND phone_id = ?";
    binds.push_back(Poco::toLower(*p));
  }
  if (auto unread = r.boolQuery("has_unread")) {
    where += *unread ? " AND unread_count > 0" : " AND unread_count = 0";
  }
  Poco::Data::Session s = store_.database().session();
  long count = 0;
  {
    Poco::Data::Statement q = (s << "SELECT COUNT(*) FROM sms_conversations " + where);
    for (auto& b : binds) q, use(b);
    q, into(count), now;
  }
  std::vector<ConversationTuple> rows;
  int limit = page.limit, offset = page.offset;
  Poco::Data::Statement q = (s << std::string(kConversationColumns) + where +
                                      " ORDER BY latest_us DESC, id LIMIT ? OFFSET ?");
  for (auto& b : binds) q, use(b);
  q, use(limit), use(offset), into(rows), now;
  Poco::JSON::Array::Ptr results = new Poco::JSON::Array;
  for (const auto& t : rows) results->add(conversationJson(t));
  return sdk::Response::json(200, sdk::pageBody(r, page, count, results));
}

sdk::Response SmsMessages::conversation(sdk::Request& r) {
  const std::string& raw = r.params.at("id");
  auto parsed = parseConversationId(raw);
  if (!parsed) {
    throw sdk::HttpError(400, "invalid_conversation_id",
                         "A conversation id has the form {phone_id}_{number}, such as "
                         "3f2b...-..._+12025550123, as conversation_id shows it.");
  }
  std::string id = parsed->first + "_" + parsed->second;
  Poco::Data::Session s = store_.database().session();
  std::vector<ConversationTuple> rows;
  std::string account = r.principal.account_id;  // another account's is as absent
  s << std::string(kConversationColumns) + "WHERE id = ? AND account_id = ?", use(id), use(account),
      into(rows), now;
  if (rows.empty() || !sdk::visibleTo(r, account, rows.front().get<2>())) {
    throw sdk::HttpError::notFound("conversation");
  }
  std::string phone = parsed->first, other = parsed->second;
  Poco::Data::Statement select =
      (s << std::string(SmsStore::messageColumns()) +
                "WHERE phone_id = ? AND other_number = ? ORDER BY created_us, id",
       use(phone), use(other));
  Poco::JSON::Array::Ptr messages = new Poco::JSON::Array;
  for (const auto& m : SmsStore::readMessages(select)) {
    messages->add(SmsStore::messageJson(m, true));
  }
  Poco::JSON::Object::Ptr o = conversationJson(rows.front());
  o->set("messages", messages);
  return sdk::Response::json(200, o);
}

}  // namespace svc::plugins::sms
