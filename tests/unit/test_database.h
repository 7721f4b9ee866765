// A unit test's temporary directory and database: SQLite in the directory, or a new MariaDB
// database on the server SVC_TEST_MYSQL_URL names (tools/test.sh starts one), dropped afterwards.
#pragma once

#include <svc/sdk/util.h>

#include <Poco/Data/MySQL/Connector.h>
#include <Poco/Data/Session.h>
#include <Poco/Environment.h>
#include <Poco/File.h>
#include <Poco/TemporaryFile.h>
#include <Poco/URI.h>

#include <openssl/rand.h>

#include <string>

namespace svc::test {

struct TempDir {
  TempDir() : path(Poco::TemporaryFile::tempName()) { Poco::File(path).createDirectories(); }
  ~TempDir() { Poco::File(path).remove(true); }
  std::string path;
};

struct TestDatabase {
  TestDatabase(const std::string& kind, const std::string& dir) {
    if (kind == "sqlite") {
      url = "sqlite:" + dir + "/t.db";
      return;
    }
    server = Poco::Environment::get("SVC_TEST_MYSQL_URL", "");
    if (server.empty()) return;
    unsigned char r[4];
    RAND_bytes(r, sizeof r);
    name = "svc_u_" + sdk::hexEncode(std::string(reinterpret_cast<char*>(r), sizeof r));
    admin() << "CREATE DATABASE " + name, Poco::Data::Keywords::now;
    url = server + "/" + name;
  }
  ~TestDatabase() {
    if (!name.empty()) admin() << "DROP DATABASE " + name, Poco::Data::Keywords::now;
  }
  Poco::Data::Session admin() {
    Poco::Data::MySQL::Connector::registerConnector();
    Poco::URI uri(server);
    const std::string info = uri.getUserInfo();
    return Poco::Data::Session("MySQL", "host=" + uri.getHost() +
                                            ";port=" + std::to_string(uri.getPort()) +
                                            ";user=" + info.substr(0, info.find(':')) +
                                            ";password=" + info.substr(info.find(':') + 1));
  }
  std::string server, name, url;
};

}  // namespace svc::test
