#include "delivery_sweep.h"

#include <Poco/Data/Statement.h>

#include <string>
#include <vector>

using namespace Poco::Data::Keywords;

namespace svc::plugins::webhooks {

std::size_t DeliverySweep::prune(std::int64_t now_us) {
  std::size_t gone = 0;
  db_.transaction([&](Poco::Data::Session& tx) {
    // created_us: when the fan-out made it, no earlier than its event.
    Poco::Int64 before = now_us - retention_us_;
    Poco::Data::Statement q = (tx << "DELETE FROM webhook_deliveries WHERE state <> 'pending' "
                                     "AND created_us < ?",
                               use(before));
    gone = q.execute();
  });
  return gone;
}

std::size_t DeliverySweep::capPending(std::int64_t now_us) {
  std::vector<std::string> over;
  {
    Poco::Data::Session s = db_.session();
    long cap = kMaxPending;
    s << "SELECT d.webhook_id FROM webhook_deliveries d JOIN webhooks w ON w.id = d.webhook_id "
         "WHERE d.state = 'pending' AND w.enabled = 1 GROUP BY d.webhook_id HAVING COUNT(*) > ?",
        use(cap), into(over), now;
  }
  std::size_t disabled = 0;
  for (const auto& id : over) {
    // Counted once committed: the database may run the work more than once (a retried conflict).
    bool disabled_now = false;
    db_.transaction([&](Poco::Data::Session& tx) {
      disabled_now = false;
      auto hook = store_.find(tx, id);
      if (!hook || !hook->enabled) return;
      hook->enabled = false;
      hook->disabled_reason = "More than " + std::to_string(kMaxPending) +
                              " deliveries waited for the receiver; fix or speed it up, then "
                              "PATCH enabled=true to resume (the waiting ones are delivered "
                              "first, in order).";
      hook->updated_us = now_us;
      disabled_now = store_.update(tx, *hook, "webhook.disabled");
    });
    if (disabled_now) ++disabled;
  }
  return disabled;
}

}  // namespace svc::plugins::webhooks
