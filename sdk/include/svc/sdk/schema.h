// Shapes: what a route's body, query parameters and answers look like, as JSON Schema (2020-12,
// the dialect of OpenAPI 3.1), built in code.
//
// A route declares them (Route::request, Route::query, Route::responses in routes.h). The kernel
// checks every request against the declaration before the handler runs and refuses, in one 400
// naming every problem, unknown fields and parameters, missing required ones, wrong types, values
// out of range and values outside an enum (listing the allowed ones). The same declarations make
// the API description, and the test suites check answers against them.
//
//   const auto secret_input = sdk::Schema::object("SecretInput")
//       .required("key", sdk::Schema::string().pattern("^[A-Za-z0-9_.:/-]{1,128}$",
//                                                      "must be 1-128 letters, digits or _.:/-"))
//       .required("value", sdk::Schema::string().minLength(1))
//       .optional("notes", sdk::Schema::string().nullable());
//   route.request = secret_input;                 // POST and PUT
//   patch_route.request = secret_input.partial();  // PATCH: every member optional
#pragma once

#include <Poco/Dynamic/Var.h>
#include <Poco/JSON/Object.h>

#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace svc::sdk {

class FieldErrors;

/// A JSON Schema, built with the static makers and the chained settings below. Copies are cheap
/// and independent.
class Schema {
 public:
  /// What a value must be.
  enum class Type { kAny, kString, kInteger, kNumber, kBoolean, kArray, kObject };

  /// @return a schema any value fits.
  static Schema any();
  /// @return a string.
  static Schema string();
  /// @return an integer.
  static Schema integer();
  /// @return a number.
  static Schema number();
  /// @return true or false.
  static Schema boolean();
  /// @param items what every element must be. @return an array.
  static Schema array(Schema items);
  /// @param name its name among the API description's components (`Secret`), or empty for an
  /// object described where it is used. @return an object that takes no member until declared.
  static Schema object(std::string name = "");
  /// @param values the strings allowed. @return a string that must be one of them.
  static Schema oneOf(std::vector<std::string> values);
  /// @param alternatives schemas of different JSON types (a string, or an array of them).
  /// @return a value that must fit the alternative of its type (JSON Schema's `anyOf`).
  static Schema anyOf(std::vector<Schema> alternatives);
  /// @param media_type what a non-JSON answer is (`application/xml`; `*/*` when it varies, as a
  /// download's does). @return the body of such an answer: described with its media type, and
  /// checked (by the test suites' response check) only for carrying that type.
  static Schema bytes(std::string media_type);
  /// @param make returns the schema, called each time it is used (from many threads), so it may
  /// grow after the route is registered: the identity, to which other plugins add members when
  /// they start. make() should return a copy of a schema it keeps (copies share their parts, and
  /// member() points into them). @return a schema that is whatever make() returns.
  static Schema late(std::function<Schema()> make);

  /// Declares a member that must be present. @return this.
  Schema& required(const std::string& name, Schema schema);
  /// Declares a member that may be absent. @return this.
  Schema& optional(const std::string& name, Schema schema);
  /// Lets an object take members it does not declare, each fitting schema (a map). @return this.
  Schema& additional(Schema schema);
  /// @param name the copy's component name ("" for none). @return a copy whose members are all
  /// optional: the PATCH of what a PUT replaces.
  Schema partial(std::string name = "") const;

  /// @return this, with null allowed too.
  Schema& nullable();
  /// Bounds a string's length in characters (Unicode code points). @return this.
  Schema& minLength(std::size_t n);
  Schema& maxLength(std::size_t n);
  /// @param regex what the whole string must match (ECMA-262 syntax as JSON Schema has it; use
  /// the subset PCRE shares). @param rule the message when it does not (`must be ...`).
  /// @return this.
  Schema& pattern(const std::string& regex, std::string rule);
  /// @param format `uuid`, `email`, `date-time`, `uri` or `e164` (any notation that normalizes to
  /// E.164), which are checked on non-empty strings (minLength(1) refuses ""); another is only
  /// described. @return this.
  Schema& format(std::string format);
  /// Bounds a number. @return this.
  Schema& minimum(double n);
  Schema& maximum(double n);
  /// Bounds an array's length. @return this.
  Schema& minItems(std::size_t n);
  Schema& maxItems(std::size_t n);
  /// @param text what it means, for the description. @return this.
  Schema& describe(std::string text);
  /// @param value an example, for the description. @return this.
  Schema& example(Poco::Dynamic::Var value);

  /// @return what a value must be.
  Type type() const;
  /// @return the media type of a bytes() answer; empty for JSON.
  const std::string& mediaType() const;
  /// @return the component name, or empty.
  const std::string& name() const;
  /// @return the members an object declares, in order, with whether each is required.
  std::vector<std::pair<std::string, bool>> members() const;
  /// @param name a member. @return its schema, or nullptr when the object does not declare it.
  const Schema* member(const std::string& name) const;

  /// @param components where named objects go (by name, written once) and are referred to with
  /// `$ref: #/components/schemas/<name>`; nullptr writes every object inline.
  /// @return the JSON Schema document.
  Poco::JSON::Object::Ptr json(
      std::map<std::string, Poco::JSON::Object::Ptr>* components = nullptr) const;

  /// Checks a value. @param value the value (as Poco's JSON parser gives it). @param at its path
  /// in the body (`records[2].uuid`), or its name. @param errors where each problem goes, under
  /// its path; at most kMaxProblems in all.
  void validate(const Poco::Dynamic::Var& value, const std::string& at, FieldErrors& errors) const;

  /// The most problems one check reports (an array of a million bad elements answers with these).
  static constexpr std::size_t kMaxProblems = 50;

  struct Node;

 private:
  explicit Schema(Type type);
  Node& edit();  // copies the node when shared

  std::shared_ptr<Node> node_;
};

/// A query parameter a route takes. Its schema is a string, integer, number, boolean or oneOf;
/// the text is converted (`true`/`false`/`1`/`0` for booleans) before it is checked.
struct Param {
  std::string name;
  Schema schema = Schema::string();
  bool required = false;
  std::string description;
};

/// @return `limit` and `offset`, the pagination parameters of every list (pagination.h).
std::vector<Param> pageParams();
/// @param item what the list holds. @param name the list's component name (`SecretList`).
/// @return a page of a list in the contract's shape: `{count, count_is_exact?, next, previous,
/// results}`.
Schema pageOf(const Schema& item, std::string name);

/// @param format a format Schema::format() checks. @return a value that passes the check (for
/// examples: `+15555550100` for e164), or "" for a format it does not check.
std::string formatExample(const std::string& format);

/// Checks query parameters against a route's declaration: unknown ones, repeated ones, missing
/// required ones and values that do not fit are each noted under the parameter's name.
/// @param declared the parameters. @param query the request's. @param errors where problems go.
void validateQuery(const std::vector<Param>& declared,
                   const std::multimap<std::string, std::string>& query, FieldErrors& errors);

}  // namespace svc::sdk
