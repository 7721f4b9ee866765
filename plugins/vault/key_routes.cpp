#include "key_routes.h"

#include <Poco/JSON/Array.h>

#include <algorithm>

namespace svc::plugins::vault {

namespace {

Poco::JSON::Array::Ptr array(const std::vector<std::string>& items) {
  Poco::JSON::Array::Ptr out = new Poco::JSON::Array;
  for (const auto& i : items) out->add(i);
  return out;
}

sdk::Response replacementAnswer(const std::string& state, const std::string& wrap_id,
                                const std::string& file, long data_keys) {
  Poco::JSON::Object::Ptr body = new Poco::JSON::Object;
  body->set("state", state);
  body->set("master_key_id", wrap_id);
  body->set("file", file);
  body->set("data_keys", data_keys);
  return sdk::Response::json(200, body);
}

}  // namespace

sdk::Response KeyRoutes::status(sdk::Request&) {
  const KeyStatus s = cipher_.status();
  Poco::JSON::Object::Ptr body = new Poco::JSON::Object;
  body->set("current_key_id", s.state.current_key);
  body->set("previous_key_id", s.state.previous_key);
  body->set("data_keys", array(s.data_keys));
  body->set("master_key_id", s.state.wrap_id);
  body->set("new_master_key_id", s.state.next_wrap_id);
  body->set("file", cipher_.path());
  body->set("file_keys", array(s.file_keys));
  const auto& f = s.file_keys;
  const auto has = [&](const std::string& id) {
    return !id.empty() && std::find(f.begin(), f.end(), id) != f.end();
  };
  body->set("file_holds_master_key", has(s.state.wrap_id));
  body->set("file_holds_new_master_key", has(s.state.next_wrap_id));
  return sdk::Response::json(200, body);
}

sdk::Response KeyRoutes::begin(sdk::Request&) {
  const Replacement r = cipher_.beginReplacement();
  return replacementAnswer("replacing", r.wrap_id, r.file, r.data_keys);
}

sdk::Response KeyRoutes::finish(sdk::Request&) {
  const Replacement r = cipher_.finishReplacement();
  return replacementAnswer("replaced", r.wrap_id, cipher_.path(), r.data_keys);
}

sdk::Response KeyRoutes::cancel(sdk::Request&) {
  const std::string dropped = cipher_.cancelReplacement();
  return replacementAnswer(dropped.empty() ? "none" : "cancelled", dropped, "", 0);
}

sdk::Schema KeyRoutes::statusSchema() {
  using sdk::Schema;
  return Schema::object("VaultKeys")
      .required("current_key_id", Schema::string().describe("the data key new values use"))
      .required("previous_key_id", Schema::string())
      .required("data_keys", Schema::array(Schema::string()))
      .required("master_key_id", Schema::string().describe("the key file's key that wraps them"))
      .required("new_master_key_id",
                Schema::string().describe("while a replacement runs, the new one; else empty"))
      .required("file", Schema::string().describe("this svcd's vault.master_key_file"))
      .required("file_keys", Schema::array(Schema::string()))
      .required("file_holds_master_key", Schema::boolean())
      .required("file_holds_new_master_key", Schema::boolean());
}

sdk::Schema KeyRoutes::replacementSchema() {
  using sdk::Schema;
  return Schema::object("MasterKeyReplacement")
      .required("state", Schema::oneOf({"replacing", "replaced", "cancelled", "none"}))
      .required("master_key_id", Schema::string())
      .required("file", Schema::string().describe("begin: the new key file, to copy everywhere"))
      .required("data_keys", Schema::integer());
}

}  // namespace svc::plugins::vault
