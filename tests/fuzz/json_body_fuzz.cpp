// Fuzzes the kernel's JSON body handling through Pipeline::dispatch: the input is the body of a
// POST with Content-Type application/json to a route whose handler reads typed fields the way
// plugins do (stringField, boolField) and echoes the parsed object back.
//
// Whatever the body, the answer is 200 or a 4xx (a 500 means the kernel or the SDK let a bad
// body through to code that threw), and it is valid JSON in valid UTF-8, because clients parse
// every answer and the error body echoes parts of the request.
#include "fuzz_check.h"
#include "pipeline.h"

#include <svc/sdk/util.h>

#include <Poco/JSON/Object.h>
#include <Poco/JSON/Parser.h>

#include <memory>

using namespace svc;

namespace {

struct World {
  kernel::Router router;
  kernel::ServiceTable services;
  kernel::Runtime runtime;
  World() {
    runtime.router = &router;
    runtime.services = &services;
    sdk::Route r;
    r.method = "POST";
    r.pattern = "/api/things/{id}/";
    r.auth = sdk::AuthNeed::kNone;
    r.handler = [](sdk::Request& req) {
      Poco::JSON::Object::Ptr o = new Poco::JSON::Object;
      o->set("id", req.params.at("id"));
      if (auto name = req.stringField("name")) o->set("name", *name);
      if (auto flag = req.boolField("enabled")) o->set("enabled", *flag);
      o->set("body", req.json);
      return sdk::Response::json(200, o);
    };
    router.add(std::move(r), "fuzz");
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static World* world = new World;  // built once; never destroyed (libFuzzer exits under it)
  sdk::Request req;
  req.method = "POST";
  req.path = "/api/things/t1/";
  req.request_id = "fuzz-request";
  req.content_type = "application/json";
  req.body.assign(reinterpret_cast<const char*>(data), size);
  std::string route;
  sdk::Response res = kernel::Pipeline(world->runtime).dispatch(req, route);

  if (res.status >= 500 || !(res.status == 200 || (res.status >= 400 && res.status < 500))) {
    std::fprintf(stderr, "status %d body %s\n", res.status, res.body.c_str());
    FUZZ_CHECK(false, "a JSON body was answered neither 200 nor 4xx");
  }
  FUZZ_CHECK(sdk::isValidUtf8(res.body), "the answer is not valid UTF-8");
  Poco::Dynamic::Var parsed;
  try {
    parsed = Poco::JSON::Parser().parse(res.body);
  } catch (const Poco::Exception& e) {
    std::fprintf(stderr, "answer %s: %s\n", res.body.c_str(), e.displayText().c_str());
    FUZZ_CHECK(false, "the answer is not valid JSON");
  }
  FUZZ_CHECK(parsed.type() == typeid(Poco::JSON::Object::Ptr), "the answer is not an object");
  auto object = parsed.extract<Poco::JSON::Object::Ptr>();
  if (res.status == 200) {
    // Accepted bodies are exactly the UTF-8 JSON objects (or the empty body).
    FUZZ_CHECK(sdk::isValidUtf8(req.body), "a body that is not UTF-8 was accepted");
    FUZZ_CHECK(object->has("body"), "the echo lost the body");
  } else {
    FUZZ_CHECK(object->has("code") && object->has("detail"), "an error outside the error shape");
  }
  return 0;
}
