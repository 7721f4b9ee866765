// Route matching over a realistic route table, and an in-process request-to-response round trip
// through the kernel's pipeline (matching, body parsing, authentication hook, handler, error
// mapping).
#include "pipeline.h"

#include <svc/sdk/auth.h>
#include <svc/sdk/schema.h>

#include <benchmark/benchmark.h>

namespace {

using namespace svc;

// The contract's route table, near enough: ~70 routes with parameters in the usual places.
const char* kRoutes[][2] = {
    {"POST", "/api/auth/device/"},
    {"POST", "/api/auth/device/token/"},
    {"POST", "/api/auth/token/refresh/"},
    {"POST", "/api/auth/logout/"},
    {"GET", "/api/auth/jwks/"},
    {"POST", "/api/auth/keys/"},
    {"GET", "/api/auth/keys/"},
    {"POST", "/api/auth/keys/identity/"},
    {"DELETE", "/api/auth/keys/{id}/"},
    {"GET", "/api/health/whoami/"},
    {"GET", "/api/health/"},
    {"GET", "/api/identities/"},
    {"POST", "/api/identities/"},
    {"GET", "/api/identities/{uuid}/"},
    {"PUT", "/api/identities/{uuid}/"},
    {"PATCH", "/api/identities/{uuid}/"},
    {"POST", "/api/identities/{uuid}/provision-phone/"},
    {"GET", "/api/identities/{uuid}/voice-agent/"},
    {"PUT", "/api/identities/{uuid}/voice-agent/"},
    {"GET", "/api/domains/"},
    {"POST", "/api/domains/"},
    {"POST", "/api/domains/{name}/verify/"},
    {"GET", "/api/email/"},
    {"POST", "/api/email/"},
    {"GET", "/api/email/check-availability/"},
    {"GET", "/api/email/{id}/"},
    {"GET", "/api/email-inbox/"},
    {"GET", "/api/email-inbox/{id}/"},
    {"GET", "/api/email-messages/"},
    {"POST", "/api/email-messages/compose/"},
    {"GET", "/api/email-messages/{id}/"},
    {"PUT", "/api/email-messages/{id}/"},
    {"PATCH", "/api/email-messages/{id}/"},
    {"POST", "/api/email-messages/{id}/forward/"},
    {"POST", "/api/email-messages/{id}/reply/"},
    {"POST", "/api/email-messages/{id}/reply-all/"},
    {"POST", "/api/email-attachments/"},
    {"GET", "/api/email-attachments/{id}/"},
    {"GET", "/api/email-attachments/{id}/download/"},
    {"GET", "/api/sms-inbox/"},
    {"GET", "/api/sms-inbox/{id}/"},
    {"GET", "/api/messages/"},
    {"POST", "/api/messages/send/"},
    {"GET", "/api/messages/{id}/"},
    {"PUT", "/api/messages/{id}/"},
    {"PATCH", "/api/messages/{id}/"},
    {"GET", "/api/phone/"},
    {"GET", "/api/phone/{id}/"},
    {"GET", "/api/contacts/"},
    {"POST", "/api/contacts/"},
    {"GET", "/api/contacts/find/"},
    {"GET", "/api/contacts/search/"},
    {"GET", "/api/contacts/{uuid}/"},
    {"PATCH", "/api/contacts/{uuid}/"},
    {"DELETE", "/api/contacts/{uuid}/"},
    {"GET", "/api/passwords/"},
    {"POST", "/api/passwords/"},
    {"GET", "/api/passwords/generate-password/"},
    {"GET", "/api/passwords/{uuid}/"},
    {"PUT", "/api/passwords/{uuid}/"},
    {"PATCH", "/api/passwords/{uuid}/"},
    {"DELETE", "/api/passwords/{uuid}/"},
    {"GET", "/api/secrets/"},
    {"POST", "/api/secrets/"},
    {"GET", "/api/secrets/{uuid}/"},
    {"PUT", "/api/secrets/{uuid}/"},
    {"PATCH", "/api/secrets/{uuid}/"},
    {"DELETE", "/api/secrets/{uuid}/"},
    {"GET", "/api/encryption/"},
    {"PUT", "/api/encryption/"},
    {"GET", "/api/events/stream/"},
};

class AllowAll : public sdk::Authenticator {
 public:
  std::optional<sdk::Principal> authenticate(const sdk::Credentials&) override {
    sdk::Principal p;
    p.kind = sdk::PrincipalKind::kManagement;
    p.account_id = "aaaaaaaa-0000-4000-8000-000000000000";
    return p;
  }
};

// A contact's shape, as the contacts plugin declares it (near enough): what the kernel checks
// before the handler runs on the declared route.
void declare(sdk::Route& route) {
  using sdk::Schema;
  const auto name = Schema::string().nullable().maxLength(200).pattern(
      "^[^\\x00-\\x1f\\x7f]*$", "must not contain control characters");
  route.request = Schema::object("ContactInput")
                      .optional("email", Schema::string().nullable().format("email"))
                      .optional("phone_number", Schema::string().nullable().format("e164"))
                      .optional("display_name", name)
                      .optional("nickname", name);
  route.query = std::vector<sdk::Param>{};
}

struct Fixture {
  kernel::Router router;
  kernel::ServiceTable services;
  kernel::Runtime runtime;
  Fixture() {
    for (auto& r : kRoutes) {
      sdk::Route route;
      route.method = r[0];
      route.pattern = r[1];
      route.auth =
          std::string(r[1]) == "/api/health/" ? sdk::AuthNeed::kNone : sdk::AuthNeed::kAnyKey;
      route.handler = [](sdk::Request& req) {
        Poco::JSON::Object::Ptr o = new Poco::JSON::Object;
        o->set("status", "ok");
        o->set("id", req.params.empty() ? std::string() : req.params.begin()->second);
        return sdk::Response::json(200, o);
      };
      if (route.method == "POST" && route.pattern == "/api/contacts/") declare(route);
      router.add(std::move(route), "bench");
    }
    kernel::OwnedServices(services, "bench")
        .offer(sdk::kAuthenticatorService, std::make_shared<AllowAll>());
    runtime.router = &router;
    runtime.services = &services;
  }
};

Fixture& fixture() {
  static Fixture f;
  return f;
}

void BM_RouteMatchStatic(benchmark::State& state) {
  auto& f = fixture();
  for (auto _ : state) benchmark::DoNotOptimize(f.router.match("GET", "/api/health/"));
}
BENCHMARK(BM_RouteMatchStatic);

void BM_RouteMatchWithParameter(benchmark::State& state) {
  auto& f = fixture();
  for (auto _ : state) {
    benchmark::DoNotOptimize(f.router.match(
        "POST", "/api/email-messages/0f8fad5b-d9cb-469f-a165-70867728950e/reply-all/"));
  }
}
BENCHMARK(BM_RouteMatchWithParameter);

void BM_RouteMatchMiss(benchmark::State& state) {
  auto& f = fixture();
  for (auto _ : state) benchmark::DoNotOptimize(f.router.match("GET", "/api/nothing/here/"));
}
BENCHMARK(BM_RouteMatchMiss);

void BM_RoundTripHealth(benchmark::State& state) {
  auto& f = fixture();
  kernel::Pipeline pipeline(f.runtime);
  for (auto _ : state) {
    sdk::Request req;
    req.method = "GET";
    req.path = "/api/health/";
    req.request_id = "bench";
    std::string route;
    benchmark::DoNotOptimize(pipeline.dispatch(req, route));
  }
}
BENCHMARK(BM_RoundTripHealth);

void BM_RoundTripAuthenticatedJsonPost(benchmark::State& state) {
  auto& f = fixture();
  kernel::Pipeline pipeline(f.runtime);
  const std::string body =
      R"({"to_email":["a@example.com"],"subject":"Hello","content":"Hi there"})";
  for (auto _ : state) {
    sdk::Request req;
    req.method = "POST";
    req.path = "/api/email-messages/0f8fad5b-d9cb-469f-a165-70867728950e/reply/";
    req.request_id = "bench";
    req.content_type = "application/json";
    req.body = body;
    req.headers["authorization"] = "Bearer x";
    std::string route;
    benchmark::DoNotOptimize(pipeline.dispatch(req, route));
  }
}
BENCHMARK(BM_RoundTripAuthenticatedJsonPost);

// The same contact body to a route that declares its shape and to one that does not: the
// difference is what checking a declaration costs a key-authenticated JSON POST.
void roundTripContact(benchmark::State& state, const char* path) {
  auto& f = fixture();
  kernel::Pipeline pipeline(f.runtime);
  const std::string body = R"({"email":"ada@example.com","phone_number":"+44 20 7946 0018",)"
                           R"("display_name":"Ada Lovelace","nickname":"Ada"})";
  for (auto _ : state) {
    sdk::Request req;
    req.method = "POST";
    req.path = path;
    req.request_id = "bench";
    req.content_type = "application/json";
    req.body = body;
    req.headers["authorization"] = "Bearer x";
    std::string route;
    const sdk::Response answer = pipeline.dispatch(req, route);
    if (answer.status != 200) state.SkipWithError(answer.body.c_str());
    benchmark::DoNotOptimize(answer);
  }
}
void BM_RoundTripPostDeclared(benchmark::State& state) {
  roundTripContact(state, "/api/contacts/");
}
BENCHMARK(BM_RoundTripPostDeclared);
void BM_RoundTripPostUndeclared(benchmark::State& state) {
  roundTripContact(state, "/api/passwords/");
}
BENCHMARK(BM_RoundTripPostUndeclared);

}  // namespace

BENCHMARK_MAIN();
