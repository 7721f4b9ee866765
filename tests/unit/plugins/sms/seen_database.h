// A private SQLite database holding the twilio webhooks' table of requests seen, for tests.
#pragma once

#include "database.h"
#include "replay_guard.h"

#include <Poco/File.h>
#include <Poco/TemporaryFile.h>

#include <memory>
#include <string>

namespace svc::plugins::sms {

struct SeenDatabase {
  SeenDatabase()
      : dir(Poco::TemporaryFile::tempName()),
        db(std::make_unique<kernel::SqlDatabase>("sqlite:" + dir + "/t.db", 4)) {
    db->migrate("sms", {ReplayGuard::migration(1)});
  }
  ~SeenDatabase() {
    db.reset();
    Poco::File(dir).remove(true);
  }
  std::string dir;
  std::unique_ptr<kernel::SqlDatabase> db;
};

}  // namespace svc::plugins::sms
