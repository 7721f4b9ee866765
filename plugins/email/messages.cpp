#include "messages.h"

#include "bounces/bounce_store.h"
#include "request_scope.h"

#include <svc/sdk/pagination.h>
#include <svc/sdk/util.h>

#include <Poco/JSON/Array.h>
#include <Poco/String.h>
#include <Poco/Tuple.h>

#include <algorithm>

using namespace Poco::Data::Keywords;

namespace svc::plugins::email {

namespace {

using ThreadTuple = Poco::Tuple<std::string, std::string, std::string, std::string, std::string,
                                int, int, std::string, std::string, Poco::Int64, int>;

Poco::JSON::Object::Ptr threadJson(const ThreadTuple& t) {
  Poco::JSON::Object::Ptr o = new Poco::JSON::Object;
  o->set("thread_id", t.get<0>());
  o->set("inbox", t.get<1>());
  o->set("identity", t.get<2>());
  o->set("subject", t.get<3>());
  o->set("preview", t.get<4>());
  o->set("message_count", t.get<5>());
  o->set("unread_count", t.get<6>());
  Poco::JSON::Array::Ptr names = new Poco::JSON::Array, people = new Poco::JSON::Array;
  for (const auto& n : parseJsonList(t.get<7>())) names->add(n);
  for (const auto& p : parseJsonList(t.get<8>())) people->add(p);
  o->set("attachment_names", names);
  o->set("participants", people);
  o->set("latest_dt", sdk::isoTimestamp(t.get<9>()));
  o->set("quarantined", t.get<10>() != 0);
  return o;
}

}  // namespace

ThreadFilter threadFilter(const sdk::Request& r) {
  ThreadFilter f{"WHERE account_id = ?", {r.principal.account_id}};
  if (std::string identity = sdk::scopeIdentity(r); !identity.empty()) {
    f.where += " AND identity_uuid = ?";
    f.binds.push_back(identity);
  }
  // The parameters' shapes were checked against the route's declaration (email_routes.cpp).
  if (auto inbox = r.queryParam("inbox")) {
    f.where += " AND inbox_id = ?";
    f.binds.push_back(Poco::toLower(*inbox));
  }
  if (auto unread = r.boolQuery("has_unread")) {
    f.where += *unread ? " AND unread_count > 0" : " AND unread_count = 0";
  }
  const std::string quarantined = r.queryParam("quarantined").value_or("false");
  if (quarantined != "include") {
    f.where += quarantined == "true" ? " AND quarantined = 1" : " AND quarantined = 0";
  }
  return f;
}

MessageFilter messageFilter(const sdk::Request& r) {
  MessageFilter f;
  // The identity index serves a scoped list (the kernel checked that the identity is the
  // account's, and its messages are only ever the account's), the account index the rest.
  // Nothing outside the index in the condition: counting stays an index-only scan.
  if (std::string identity = sdk::scopeIdentity(r); !identity.empty()) {
    f.where = "WHERE identity_uuid = ?";
    f.binds = {identity};
  } else {
    f.where = "WHERE account_id = ?";
    f.binds = {r.principal.account_id};
  }
  // The parameters' shapes were checked against the route's declaration (email_routes.cpp).
  if (auto raw = r.queryParam("created_after")) {
    f.after = sdk::parseIsoMicros(*raw).value_or(0);
    f.where += " AND created_us > ?";
  }
  if (auto d = r.queryParam("direction")) {
    f.where += " AND direction = ?";
    f.binds.push_back(*d);
  }
  if (auto is_read = r.boolQuery("is_read")) f.is_read = *is_read ? 1 : 0;
  if (auto t = r.queryParam("thread_id")) {
    f.where += " AND thread_id = ?";
    f.binds.push_back(Poco::toLower(*t));
  }
  if (auto from = r.queryParam("from_email")) {
    f.where += " AND from_email = ?";
    f.binds.push_back(Poco::trim(*from));
  }
  if (auto i = r.queryParam("inbox")) {
    f.where += " AND inbox_id = ?";
    f.binds.push_back(Poco::toLower(*i));
  }
  // Quarantined mail is left out unless asked for; the *_q indexes lead with the flag, so the
  // default list still counts from the index alone.
  const std::string quarantined = r.queryParam("quarantined").value_or("false");
  if (quarantined != "include") {
    f.where.insert(f.where.find(" = ?") + 4,
                   quarantined == "true" ? " AND quarantined = 1" : " AND quarantined = 0");
  }
  if (auto authenticated = r.boolQuery("authenticated")) {
    f.where += *authenticated ? " AND auth_verdict = 'pass'" : " AND auth_verdict <> 'pass'";
  }
  if (f.is_read) f.where += " AND is_read = ?";
  return f;
}

void MessageFilter::bind(Poco::Data::Statement& q) {
  q, use(binds[0]);
  if (after) q, use(*after);
  for (std::size_t i = 1; i < binds.size(); ++i) q, use(binds[i]);
  if (is_read) q, use(*is_read);
}

Messages::Messages(sdk::Database& database, MailStore& store, long exact_count_limit)
    : database_(database), store_(store), exact_count_limit_(exact_count_limit) {}

sdk::Response Messages::listThreads(sdk::Request& r) {
  const auto page = sdk::pageRequest(r);
  ThreadFilter f = threadFilter(r);
  Poco::Data::Session s = database_.session();
  long count = 0;
  {
    Poco::Data::Statement q = (s << "SELECT COUNT(*) FROM email_threads " + f.where);
    for (auto& b : f.binds) q, use(b);
    q, into(count), now;
  }
  std::vector<ThreadTuple> rows;
  int limit = page.limit, offset = page.offset;
  Poco::Data::Statement q =
      (s << "SELECT id, inbox_id, identity_uuid, subject, preview, message_count, "
            "unread_count, attachment_names, participants, latest_us, quarantined FROM "
            "email_threads " +
                f.where + " ORDER BY latest_us DESC, id LIMIT ? OFFSET ?");
  for (auto& b : f.binds) q, use(b);
  q, use(limit), use(offset), into(rows), now;
  Poco::JSON::Array::Ptr results = new Poco::JSON::Array;
  for (const auto& t : rows) results->add(threadJson(t));
  return sdk::Response::json(200, sdk::pageBody(r, page, count, results));
}

sdk::Response Messages::oneThread(sdk::Request& r) {
  std::string id = Poco::toLower(r.params.at("id"));
  if (!sdk::isUuid(id)) throw sdk::HttpError::notFound("thread");
  Poco::Data::Session s = database_.session();
  using T = Poco::Tuple<std::string, std::string, std::string>;
  std::vector<T> rows;
  s << "SELECT account_id, identity_uuid, subject FROM email_threads WHERE id = ?", use(id),
      into(rows), now;
  if (rows.empty() || !sdk::visibleTo(r, rows.front().get<0>(), rows.front().get<1>())) {
    throw sdk::HttpError::notFound("thread");
  }
  Poco::Data::Statement select = (s << std::string(MailStore::messageColumns()) +
                                           "WHERE thread_id = ? ORDER BY created_us, id",
                                  use(id));
  Poco::JSON::Array::Ptr messages = new Poco::JSON::Array;
  for (auto& m : MailStore::readMessages(select)) {
    store_.loadBodies(s, m);
    messages->add(store_.messageJson(s, m, true));
  }
  Poco::JSON::Object::Ptr o = new Poco::JSON::Object;
  o->set("thread_id", id);
  o->set("subject", rows.front().get<2>());
  o->set("messages", messages);
  return sdk::Response::json(200, o);
}

sdk::Response Messages::list(sdk::Request& r) {
  const auto page = sdk::pageRequest(r);
  MessageFilter f = messageFilter(r);
  Poco::Data::Session s = database_.session();
  // From the middle of a mailbox of a million, an exact count is half a million index entries
  // on every poll: at most email.messages.exact_count are counted.
  const auto counted = sdk::cappedCount(exact_count_limit_, page, [&](std::int64_t limit) {
    long n = 0;
    Poco::Int64 probe = limit;
    Poco::Data::Statement q = (s << "SELECT COUNT(*) FROM (SELECT 1 FROM email_messages " +
                                        f.where + " LIMIT ?) AS counted");
    f.bind(q);
    q, use(probe), into(n), now;
    return n;
  });
  int limit = page.limit, offset = page.offset;
  // Lists leave out the bodies: they are not read from the table at all.
  Poco::Data::Statement q = (s << std::string(MailStore::messageColumns()) + f.where +
                                      " ORDER BY created_us, id LIMIT ? OFFSET ?");
  f.bind(q);
  q, use(limit), use(offset);
  Poco::JSON::Array::Ptr results = new Poco::JSON::Array;
  const auto rows = MailStore::readMessages(q);
  // The page's bounces in one query, not one per bounced message.
  std::vector<std::string> bounced;
  for (const auto& m : rows) {
    if (m.status == "bounced") bounced.push_back(m.id);
  }
  const auto bounces = BounceStore::json(s, bounced);
  for (const auto& m : rows) results->add(store_.messageJson(s, m, false, &bounces));
  Poco::JSON::Object::Ptr body = sdk::pageBody(r, page, counted.count, results);
  body->set("count_is_exact", counted.exact);
  return sdk::Response::json(200, body);
}

MessageRow Messages::visibleMessage(const sdk::Request& r, Poco::Data::Session& s) {
  auto m = store_.message(s, r.params.at("id"));
  if (!m || !sdk::visibleTo(r, m->account_id, m->identity_uuid))
    throw sdk::HttpError::notFound("message");
  return *m;
}

sdk::Response Messages::one(sdk::Request& r) {
  Poco::Data::Session s = database_.session();
  MessageRow m = visibleMessage(r, s);
  if (r.method != "GET") {
    // PUT's declaration requires is_read; PATCH's takes it or nothing.
    if (auto is_read = r.boolField("is_read")) {
      database_.transaction([&](Poco::Data::Session& tx) {
        auto fresh = store_.message(tx, m.id);
        if (fresh) m = store_.setRead(tx, *fresh, *is_read);
      });
    }
  }
  return sdk::Response::json(200, store_.messageJson(s, m, true));
}

}  // namespace svc::plugins::email
