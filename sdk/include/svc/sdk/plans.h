// Plans: whether an account may use features that need an active subscription.
//
// The auth plugin owns accounts and offers this service; a plugin with a paid feature (a second
// inbox, say) asks it and answers 402 `subscription_required` when the plan is not active.
#pragma once

#include <svc/sdk/services.h>

#include <string>

namespace svc::sdk {

/// Offered as kPlanService.
class PlanService {
 public:
  virtual ~PlanService();
  /// @param account_id the account. @return true when its plan is active.
  virtual bool isActive(const std::string& account_id) = 0;
};

/// The key of the PlanService.
inline constexpr ServiceKey<PlanService> kPlanService{"svc.plans.v1"};

}  // namespace svc::sdk
