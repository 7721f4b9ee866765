#include "rotation.h"

#include <Poco/Exception.h>
#include <Poco/JSON/Array.h>

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <thread>

namespace svc::plugins::vault {

namespace {
constexpr int kBatch = 200;
}

Rotation::Rotation(VaultStore& store, VaultService& service, AtRestCipher& cipher, int settle_ms)
    : store_(store), service_(service), cipher_(cipher), settle_ms_(settle_ms) {}

long Rotation::pass(const std::string& key_id, std::set<Place>& failed) {
  long moved = 0;
  for (;;) {
    // Another rotation (here or in another svcd) made a newer key: this one's job is its now.
    if (cipher_.currentKeyId() != key_id) {
      throw RotationSuperseded("another rotation replaced master key " + key_id + " meanwhile");
    }
    std::vector<ValueRow> batch;
    {
      Poco::Data::Session s = store_.database().session();
      batch = store_.notUnderKey(s, key_id, kBatch + static_cast<int>(failed.size()));
    }
    batch.erase(std::remove_if(batch.begin(), batch.end(),
                               [&](const ValueRow& v) {
                                 return failed.count({v.holder, v.record, v.field}) > 0;
                               }),
                batch.end());
    if (batch.empty()) return moved;
    // In key order, as writers lock a record's fields; a batch that still meets a deadlock with
    // one (MariaDB picks a victim) is simply tried again.
    for (int attempt = 1;; ++attempt) {
      long moved_here = 0;
      try {
        store_.database().transaction([&](Poco::Data::Session& tx) {
          moved_here = 0;  // the database may run this more than once (a retried conflict)
          for (const auto& was : batch) {
            std::string plain;
            try {
              plain = service_.openRow(was);
            } catch (const std::runtime_error&) {
              failed.insert({was.holder, was.record, was.field});  // logged by open()
              continue;
            }
            ValueRow now = was;
            service_.seal(now, plain);
            // A write since the read already used the new key: leave it.
            if (store_.reseal(tx, was, now.key_id, now.sealed)) ++moved_here;
          }
        });
      } catch (const Poco::Exception&) {
        if (attempt == 3) throw;
        continue;
      }
      moved += moved_here;
      break;
    }
  }
}

RotationResult Rotation::run() {
  std::lock_guard lock(running_);
  RotationResult result;
  // Keys that were already old before this rotation may go once nothing uses them; the key
  // current until now stays one rotation longer, for writes that sealed under it and commit late.
  std::vector<std::string> older = cipher_.keyIds();
  older.erase(older.begin());
  result.key_id = cipher_.rotate();
  std::set<Place> failed;
  result.reencrypted = pass(result.key_id, failed);
  // Other svcd on this database notice the new key within a second; what they wrote under the
  // old one meanwhile is moved by a last pass.
  std::this_thread::sleep_for(std::chrono::milliseconds(settle_ms_));
  result.reencrypted += pass(result.key_id, failed);
  result.failed = static_cast<long>(failed.size());
  std::vector<std::string> in_use;
  {
    Poco::Data::Session s = store_.database().session();
    in_use = store_.keyIdsInUse(s);
  }
  result.retired = cipher_.retire(older, in_use);
  return result;
}

sdk::Response Rotation::handle(sdk::Request&) {
  RotationResult r;
  try {
    r = run();
  } catch (const RotationSuperseded& e) {
    throw sdk::HttpError(409, "conflict",
                         std::string("The rotation stopped: ") + e.what() +
                             ". Run it again when no other rotation runs.");
  }
  Poco::JSON::Object::Ptr body = new Poco::JSON::Object;
  body->set("key_id", r.key_id);
  body->set("reencrypted", r.reencrypted);
  body->set("failed", r.failed);
  Poco::JSON::Array::Ptr retired = new Poco::JSON::Array;
  for (const auto& id : r.retired) retired->add(id);
  body->set("retired", retired);
  return sdk::Response::json(200, body);
}

}  // namespace svc::plugins::vault
