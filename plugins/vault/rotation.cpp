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
      throw RotationSuperseded("another rotation replaced data key " + key_id + " meanwhile");
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
      std::set<Place> failed_here;
      try {
        // Safe to run again (the kernel retries a transaction a deadlock or a Galera
        // certification failure ended): its counts start over, and a value resealed by a run
        // that did not commit is still as read.
        store_.database().transaction([&](Poco::Data::Session& tx) {
          moved_here = 0;
          failed_here.clear();
          for (const auto& was : batch) {
            std::string plain;
            try {
              plain = service_.openRow(was);
            } catch (const std::runtime_error&) {
              failed_here.insert({was.holder, was.record, was.field});  // logged by open()
              continue;
            }
            ValueRow now = was;
            service_.seal(tx, now, plain);
            // A write since the read already used the new key: leave it. A seal under a key
            // newer than this rotation's means another rotation began: its pass moves the rest.
            if (store_.reseal(tx, was, now.key_id, now.sealed)) ++moved_here;
          }
        });
      } catch (const Poco::Exception&) {
        if (attempt == 3) throw;
        continue;
      }
      moved += moved_here;
      failed.insert(failed_here.begin(), failed_here.end());
      break;
    }
  }
}

RotationResult Rotation::run() {
  std::lock_guard lock(running_);
  RotationResult result;
  // The new data key is current in the database: every svcd seals under it from its next write.
  result.key_id = cipher_.rotate();
  std::set<Place> failed;
  result.reencrypted = pass(result.key_id, failed);
  // A write another svcd began before the rotation committed may commit under the old key a
  // moment later: a last pass moves it.
  std::this_thread::sleep_for(std::chrono::milliseconds(settle_ms_));
  result.reencrypted += pass(result.key_id, failed);
  result.failed = static_cast<long>(failed.size());
  // Data keys that were already old go once no value uses them; the one current until now stays
  // one rotation longer, for writes that sealed under it and commit late.
  result.retired = cipher_.retire();
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
