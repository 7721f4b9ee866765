// The contact routes: create, list, find (the one contact by email or number), search, and one
// contact read, changed or deleted. An identity key sees its identity's contacts; a management
// key the account's, or one identity's with `identity=`; another account's are 404.
#pragma once

#include "contact_store.h"

#include <svc/sdk/http.h>
#include <svc/sdk/routes.h>

namespace svc::plugins::contacts {

class ContactRoutes {
 public:
  /// @param exact_count_limit searches count their matches exactly up to this many.
  ContactRoutes(ContactStore& store, long exact_count_limit)
      : store_(store), exact_count_limit_(exact_count_limit) {}

  void registerIn(sdk::RouteRegistry& routes);

  /// POST /api/contacts/: 201 with the contact.
  sdk::Response create(sdk::Request& r);
  /// GET /api/contacts/: newest first.
  sdk::Response list(sdk::Request& r);
  /// GET /api/contacts/find/?email=|phone_number=
  sdk::Response find(sdk::Request& r);
  /// GET /api/contacts/search/?q=
  sdk::Response search(sdk::Request& r);
  /// GET, PATCH or DELETE /api/contacts/{uuid}/
  sdk::Response one(sdk::Request& r);

 private:
  ContactStore& store_;
  long exact_count_limit_;
};

}  // namespace svc::plugins::contacts
