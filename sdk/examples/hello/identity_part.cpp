#include "identity_part.h"

#include <svc/sdk/util.h>

#include <Poco/Data/Session.h>
#include <Poco/Tuple.h>

using namespace Poco::Data::Keywords;

namespace hello {

HelloIdentityPart::HelloIdentityPart(svc::sdk::PluginContext& context, std::string default_greeting)
    : context_(context), default_greeting_(std::move(default_greeting)) {}

void HelloIdentityPart::validate(const svc::sdk::Request& request) {
  auto greeting = request.stringField("hello_greeting");
  if (!greeting) return;
  std::size_t characters = 0;  // UTF-8 (the kernel has checked the body): count lead bytes
  for (unsigned char c : *greeting) characters += (c & 0xC0) != 0x80;
  if (characters == 0 || characters > 40 || svc::sdk::hasControlCharacter(*greeting)) {
    throw svc::sdk::HttpError::invalid("hello_greeting", "1-40 characters, no control characters");
  }
}

Poco::Dynamic::Var HelloIdentityPart::provision(Poco::Data::Session& transaction,
                                                const svc::sdk::IdentityInfo& identity,
                                                const svc::sdk::Request& request) {
  auto greeting = request.stringField("hello_greeting");
  if (!greeting) return member(default_greeting_);
  std::string uuid = identity.uuid, text = *greeting;
  transaction << "INSERT INTO hello_greetings (identity_uuid, greeting) VALUES (?, ?)", use(uuid),
      use(text), now;
  return member(text);
}

std::map<std::string, Poco::Dynamic::Var> HelloIdentityPart::describe(
    const std::vector<std::string>& identity_uuids) {
  std::map<std::string, Poco::Dynamic::Var> out;
  Poco::Data::Session s = context_.database().session();
  for (const auto& uuid : identity_uuids) {
    std::vector<std::string> found;
    std::string u = uuid;
    s << "SELECT greeting FROM hello_greetings WHERE identity_uuid = ?", use(u), into(found), now;
    out[uuid] = member(found.empty() ? default_greeting_ : found.front());
  }
  return out;
}

svc::sdk::Response HelloIdentityPart::act(const std::string&,
                                          const svc::sdk::IdentityInfo& identity,
                                          svc::sdk::Request&) {
  auto described = describe({identity.uuid});
  const std::string greeting =
      described[identity.uuid].extract<Poco::JSON::Object::Ptr>()->getValue<std::string>(
          "greeting");
  Poco::JSON::Object::Ptr body = new Poco::JSON::Object;
  body->set("message", greeting + ", " + identity.name + "!");
  context_.events().publish("hello.greeted", identity.account_id, identity.uuid, body, nullptr);
  return svc::sdk::Response::json(201, body);
}

Poco::Dynamic::Var HelloIdentityPart::member(const std::string& greeting) const {
  Poco::JSON::Object::Ptr o = new Poco::JSON::Object;
  o->set("greeting", greeting);
  return o;
}

}  // namespace hello
