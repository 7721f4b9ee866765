#include "field_errors.h"

namespace svc::plugins::passwords {

void FieldErrors::add(const std::string& field, const std::string& message) {
  errors_.emplace_back(field, message);
}

void FieldErrors::throwIfAny() const {
  if (errors_.empty()) return;
  std::string detail = "The request is invalid:";
  for (std::size_t i = 0; i < errors_.size(); ++i) {
    detail += (i ? "; " : " ") + errors_[i].first + ": " + errors_[i].second;
  }
  sdk::HttpError e(400, "invalid", detail + ".");
  for (const auto& [field, message] : errors_) e.field(field, message);
  throw e;
}

}  // namespace svc::plugins::passwords
