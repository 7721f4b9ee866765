// contacts: the people an identity deals with, one per email address and one per phone number,
// found by either and searched by any part of their name, address or number. Through the
// identities plugin's extension point each identity shows its `contacts` setting, auto_contacts,
// which turns the recipients of the mail and SMS it sends into contacts (auto_contacts.h).
//
// This is the module: what the plugin declares, and the wiring of its core (svc_contacts_core).
#include "auto_contacts.h"
#include "contact_fields.h"
#include "contact_routes.h"
#include "contact_store.h"
#include "dashboard_pages.h"

#include <svc/sdk/dashboard.h>
#include <svc/sdk/identity_extensions.h>
#include <svc/sdk/plugin.h>

#include <memory>
#include <stdexcept>

namespace svc::plugins::contacts {

class ContactsPlugin : public sdk::Plugin {
 public:
  ContactsPlugin() {
    info_.name = "contacts";
    info_.version = "0.1.0";
    info_.description = "Contacts: an identity's people, found by email or number, searched.";
    info_.events = {
        {"contact.created",
         "A contact was added; object: the contact as GET shows it.",
         {},
         contactSchema()},
        {"contact.updated",
         "A contact was changed; object: the contact as GET shows it.",
         {},
         contactSchema()},
        {"contact.deleted",
         "A contact was deleted; object: the contact as it was.",
         {},
         contactSchema()},
    };
    info_.paths = {"/api/contacts/"};
    info_.uses_services = {sdk::kIdentityExtensionsService.name, sdk::kDashboardPagesService.name};
    info_.requires_plugins = {"identities"};
    info_.config = {
        {"contacts.search.exact_count", "10000",
         "a search counts its matches exactly up to this many (then count_is_exact is false)",
         false},
    };
  }

  const sdk::PluginInfo& info() const override { return info_; }

  void configure(sdk::PluginContext& context) override {
    context_ = &context;
    const long exact_count = context.config().getInt("contacts.search.exact_count");
    if (exact_count < 0) throw std::runtime_error("contacts.search.exact_count is negative");
    store_ = std::make_unique<ContactStore>(context.database(), context.events());
    routes_ = std::make_unique<ContactRoutes>(*store_, exact_count);
    auto_ = std::make_unique<AutoContacts>(*store_, context.logger());
    context.services()
        .require(sdk::kIdentityExtensionsService)
        ->add(std::make_shared<ContactsIdentityExtension>(*store_));
  }

  std::vector<sdk::Migration> migrations() const override { return ContactStore::migrations(); }
  void registerRoutes(sdk::RouteRegistry& routes) override { routes_->registerIn(routes); }
  void registerServices(sdk::ServiceRegistry&) override {}

  void start() override {
    if (auto pages = context_->services().find(sdk::kDashboardPagesService)) {
      pages->add(contactsDashboardPage());
    }
    auto_->start(context_->events());
  }
  void stop() override { auto_->stop(); }

 private:
  sdk::PluginInfo info_;
  sdk::PluginContext* context_ = nullptr;
  std::unique_ptr<ContactStore> store_;
  std::unique_ptr<ContactRoutes> routes_;
  std::unique_ptr<AutoContacts> auto_;
};

}  // namespace svc::plugins::contacts

SVC_PLUGIN(svc::plugins::contacts::ContactsPlugin)
