// Typed services: a key carries its interface and versioned name; a lookup under another
// interface, or a required service nobody offers, fails with a message naming both sides.
#include "services.h"

#include <svc/sdk/accounts.h>
#include <svc/sdk/auth.h>
#include <svc/sdk/plans.h>

#include <gtest/gtest.h>

namespace svc::kernel {
namespace services_test {
// Another interface offered under a name some other plugin expects as PlanService (in a named
// namespace: compilers spell anonymous ones differently).
class Clock {
 public:
  virtual ~Clock() = default;
  virtual long now() = 0;
};
}  // namespace services_test

namespace {
using services_test::Clock;
class FixedClock : public Clock {
 public:
  long now() override { return 42; }
};

class AlwaysActive : public sdk::PlanService {
 public:
  bool isActive(const std::string&) override { return true; }
};

inline constexpr sdk::ServiceKey<Clock> kClockAsPlans{"svc.plans.v1"};
inline constexpr sdk::ServiceKey<sdk::PlanService> kPlansV2{"svc.plans.v2"};

std::string errorOf(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const sdk::ServiceError& e) {
    return e.what();
  }
  return "(no ServiceError)";
}

TEST(ServiceKeys, CarryTheInterfacesNameAsTheirTypeTag) {
  EXPECT_EQ(sdk::kPlanService.type(), "svc::sdk::PlanService");
  EXPECT_EQ(sdk::kAuthenticatorService.type(), "svc::sdk::Authenticator");
  EXPECT_EQ(kClockAsPlans.type(), "svc::kernel::services_test::Clock");
  EXPECT_STREQ(sdk::kPlanService.name, "svc.plans.v1");
}

TEST(ServiceKeys, TypeNamesAreReadFromGccAndClangSignatures) {
  EXPECT_EQ(sdk::typeNameFromSignature(
                "const string& svc::sdk::serviceTypeTag() [with T = ns::Map<int, char>; "
                "std::string = std::__cxx11::basic_string<char>]"),
            "ns::Map<int, char>");
  EXPECT_EQ(sdk::typeNameFromSignature(
                "const std::string &svc::sdk::serviceTypeTag() [T = ns::Array<int[3]>]"),
            "ns::Array<int[3]>");
  EXPECT_EQ(sdk::typeNameFromSignature("no template here"), "no template here");
}

TEST(Services, AnOfferIsFoundUnderItsKeyAndOwner) {
  ServiceTable table;
  OwnedServices auth(table, "auth"), email(table, "email");
  auto plans = std::make_shared<AlwaysActive>();
  auth.offer(sdk::kPlanService, plans);
  EXPECT_EQ(email.find(sdk::kPlanService), plans);
  EXPECT_EQ(email.require(sdk::kPlanService), plans);
  EXPECT_EQ(table.find(sdk::kPlanService), plans);
  EXPECT_EQ(table.owners().at("svc.plans.v1"), "auth");
  EXPECT_EQ(email.find(sdk::kAuthenticatorService), nullptr);  // optional and absent: null
}

TEST(Services, FindingUnderAnotherInterfaceFailsNamingBothSides) {
  ServiceTable table;
  OwnedServices auth(table, "auth"), other(table, "other");
  auth.offer(sdk::kPlanService, std::make_shared<AlwaysActive>());
  std::string why = errorOf([&] { other.find(kClockAsPlans); });
  EXPECT_EQ(why,
            "service 'svc.plans.v1' was requested as svc::kernel::services_test::Clock but plugin "
            "'auth' offered it as svc::sdk::PlanService");
  EXPECT_EQ(errorOf([&] { other.require(kClockAsPlans); }), why);

  // And the other way round: the offer is recorded as the key's interface.
  ServiceTable second;
  OwnedServices(second, "clocks").offer(kClockAsPlans, std::make_shared<FixedClock>());
  why = errorOf([&] { OwnedServices(second, "email").find(sdk::kPlanService); });
  EXPECT_NE(why.find("requested as svc::sdk::PlanService"), std::string::npos) << why;
  EXPECT_NE(why.find("plugin 'clocks' offered it as svc::kernel::services_test::Clock"),
            std::string::npos)
      << why;
}

TEST(Services, RequiringAMissingServiceFailsNamingWhatIsOffered) {
  ServiceTable table;
  OwnedServices email(table, "email");
  EXPECT_EQ(errorOf([&] { email.require(sdk::kPlanService); }),
            "service 'svc.plans.v1' (svc::sdk::PlanService) is not offered by any enabled plugin; "
            "offered: none");
  OwnedServices(table, "auth").offer(sdk::kPlanService, std::make_shared<AlwaysActive>());
  // Another version of the interface is another name: v2 is missing, and v1 is named beside it.
  EXPECT_EQ(errorOf([&] { email.require(kPlansV2); }),
            "service 'svc.plans.v2' (svc::sdk::PlanService) is not offered by any enabled plugin; "
            "offered: 'svc.plans.v1' (svc::sdk::PlanService, by plugin 'auth')");
}

TEST(Services, OfferingANameTwiceIsRefusedNamingTheFirstOwner) {
  ServiceTable table;
  OwnedServices(table, "auth").offer(sdk::kPlanService, std::make_shared<AlwaysActive>());
  try {
    OwnedServices(table, "billing").offer(sdk::kPlanService, std::make_shared<AlwaysActive>());
    FAIL() << "a second offer was accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "service 'svc.plans.v1' is already offered by plugin 'auth'");
  }
}

TEST(Services, APluginOffersOnlyWhatItDeclares) {
  ServiceTable table;
  sdk::PluginInfo info;
  info.name = "auth";
  info.offers_services = {sdk::kPlanService.name};
  OwnedServices auth(table, "auth", &info);
  auth.offer(sdk::kPlanService, std::make_shared<AlwaysActive>());
  try {
    auth.offer(kPlansV2, std::make_shared<AlwaysActive>());
    FAIL() << "an undeclared offer was accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(),
                 "plugin 'auth' offers service 'svc.plans.v2' without declaring it in "
                 "PluginInfo::offers_services");
  }
  EXPECT_EQ(table.findRaw("svc.plans.v2"), nullptr);
}

TEST(Services, AnUndeclaredLookupStillFindsTheService) {
  ServiceTable table;
  OwnedServices(table, "auth").offer(sdk::kPlanService, std::make_shared<AlwaysActive>());
  sdk::PluginInfo info;
  info.name = "email";  // declares no use of plans: logged once, still served
  OwnedServices email(table, "email", &info);
  EXPECT_NE(email.find(sdk::kPlanService), nullptr);
  EXPECT_NE(email.find(sdk::kPlanService), nullptr);
}

}  // namespace
}  // namespace svc::kernel
