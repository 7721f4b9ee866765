// The configuration reference: every key svcd and its plugins declare, with its default and its
// one-line description, as Markdown (docs/configuration-reference.md) or as the man page
// svcd.properties(5). Written by `svcd --config-reference[=man]`, so it cannot drift from the code.
#pragma once

#include <svc/sdk/plugin.h>

#include <string>
#include <vector>

namespace svc::kernel {

/// Who declares a group of keys: svcd itself, or a plugin.
struct KeyOwner {
  std::string name;         ///< "svcd" or the plugin's name.
  std::string description;  ///< One line about the owner.
  const std::vector<sdk::ConfigKey>* keys = nullptr;
};

enum class ReferenceFormat { kMarkdown, kMan };

/// @return the reference for these owners, in their order, keys sorted within each owner.
std::string configReference(const std::vector<KeyOwner>& owners, ReferenceFormat format);

}  // namespace svc::kernel
