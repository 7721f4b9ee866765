// What the password routes take and answer, as JSON Schema (svc/sdk/schema.h): the kernel checks
// requests against them before the handlers run (every problem named in one 400), the API
// description publishes them, and the test suites check answers against them.
#pragma once

#include "entry_input.h"

#include <svc/sdk/schema.h>

#include <vector>

namespace svc::plugins::passwords {

/// @param kind the write. @return the body it takes: a create needs `domain`, a replace every
/// field, a patch any (null clears username and notes).
sdk::Schema entryInputSchema(EntryWrite kind);
/// @return an entry as the API answers it; a names-only list and the events leave out username,
/// password and notes.
sdk::Schema entrySchema();
/// @return an entry without username, password and notes, as the password.* events carry it.
sdk::Schema entryNamesSchema();
/// @return the list's query parameters (with pagination's).
std::vector<sdk::Param> listParams();
/// @return the generator's query parameters.
std::vector<sdk::Param> generatorParams();

}  // namespace svc::plugins::passwords
