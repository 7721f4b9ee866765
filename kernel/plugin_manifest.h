// A plugin's manifest: what svcd needs to know about an installed plugin it has not enabled (the
// paths it would serve, for 404 `feature_not_enabled`) without loading its code. The build writes
// `svc_plugin_<name>.json` beside `svc_plugin_<name>.so` with the `svc_plugin_manifest` tool, which
// loads the library once, at build time, and asks it; svcd only reads the file. A plugin without
// one (a third party's built without the tool) is simply not named in those 404s.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace svc::kernel {

struct PluginManifest {
  std::string name;                ///< The plugin's name (PluginInfo::name).
  std::vector<std::string> paths;  ///< PluginInfo::paths.
};

/// @param library `.../svc_plugin_<name>.so`. @return `.../svc_plugin_<name>.json`.
std::string manifestPathFor(const std::string& library);

/// Writes the manifest as JSON. @throws std::runtime_error when the file cannot be written.
void writeManifest(const PluginManifest& manifest, const std::string& path);

/// @return the manifest at path, or nullopt when there is none or it is not one (never throws).
std::optional<PluginManifest> readManifest(const std::string& path);

}  // namespace svc::kernel
