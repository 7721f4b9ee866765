// Validation that names every bad field at once: an agent fixes its request in one round trip,
// not one field per 400.
#pragma once

#include <svc/sdk/http.h>

#include <string>
#include <utility>
#include <vector>

namespace svc::plugins::passwords {

class FieldErrors {
 public:
  /// Notes a problem with a field.
  void add(const std::string& field, const std::string& message);
  /// Runs check (which may throw HttpError 400 `invalid`, as Request's readers do) and keeps its
  /// field errors instead of stopping there.
  template <class Check>
  void collect(Check&& check) {
    try {
      check();
    } catch (const sdk::HttpError& e) {
      if (e.status() != 400 || e.errors().empty()) throw;
      for (const auto& [field, messages] : e.errors()) {
        for (const auto& m : messages) add(field, m);
      }
    }
  }
  /// @throws HttpError 400 `invalid` with every field noted, when there is one.
  void throwIfAny() const;

 private:
  std::vector<std::pair<std::string, std::string>> errors_;
};

}  // namespace svc::plugins::passwords
