#include "response_check.h"

#include <Poco/JSON/JSONException.h>
#include <Poco/JSON/Parser.h>

namespace svc::kernel {

sdk::Schema errorSchema() {
  using sdk::Schema;
  return Schema::object("Error")
      .required("detail", Schema::string().describe(
                              "What went wrong and what to do next, for a person or an agent."))
      .required("code", Schema::string().describe("A stable machine code: `not_found`..."))
      .optional("errors", Schema::object()
                              .additional(Schema::array(Schema::string()))
                              .describe("For 400 `invalid`: every bad field or parameter with "
                                        "what is wrong with it, all at once."))
      .optional("retry_after_seconds",
                Schema::integer().minimum(0).describe("For 429 and some 503: when to retry."))
      .optional("request_id",
                Schema::string().describe("For 500: quote it to the operator, who finds the "
                                          "failure in the log."))
      // A route may add members of its own (RouteError says which).
      .additional(Schema::any());
}

namespace {

bool isJson(const std::string& content_type) {
  return content_type.rfind("application/json", 0) == 0;
}

}  // namespace

std::optional<sdk::HttpError> responseMismatch(const sdk::Route& route,
                                               const sdk::Response& answer) {
  if (answer.on_hold || route.responses.empty()) return std::nullopt;
  const int status = answer.status;
  auto declared = route.responses.find(status);
  sdk::FieldErrors problems;
  std::optional<sdk::Schema> schema;
  if (declared != route.responses.end()) {
    schema = declared->second;
  } else if (status >= 400) {
    schema = errorSchema();
  } else if (status < 300) {
    problems.add("status", "answered " + std::to_string(status) +
                               ", which the route does not "
                               "declare");
  }
  if (schema && !schema->mediaType().empty() && status != 204) {
    // Bytes: only their media type is declared (`*/*`: any, as a download's).
    const std::string& want = schema->mediaType();
    if (answer.content_type.empty() || (want != "*/*" && answer.content_type.rfind(want, 0) != 0)) {
      problems.add("content_type",
                   "is '" + answer.content_type + "', not " + want + " as declared");
    }
  } else if (schema && schema->type() != sdk::Schema::Type::kAny && status != 204) {
    if (!isJson(answer.content_type)) {
      problems.add("content_type", "is " + answer.content_type + ", not JSON as declared");
    } else {
      try {
        Poco::JSON::Parser parser;
        schema->validate(parser.parse(answer.body), "body", problems);
      } catch (const Poco::Exception& e) {
        problems.add("body", "is not JSON: " + e.displayText());
      }
    }
  }
  try {
    problems.throwIfAny();
  } catch (const sdk::HttpError& e) {
    sdk::HttpError mismatch(500, "response_mismatch",
                            route.method + " " + route.pattern + " answered " +
                                std::to_string(status) +
                                " with a body its declaration does not allow (the route's "
                                "declaration or its handler is wrong).");
    for (const auto& [field, messages] : e.errors()) {
      for (const auto& m : messages) mismatch.field(field, m);
    }
    return mismatch;
  }
  return std::nullopt;
}

}  // namespace svc::kernel
