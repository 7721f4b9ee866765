// svc_plugin_manifest LIBRARY: writes the manifest (plugin_manifest.h) beside a plugin library
// just built. Run by the build, never by svcd.
#include "plugin_host.h"
#include "plugin_manifest.h"

#include <exception>
#include <iostream>

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: svc_plugin_manifest svc_plugin_<name>.so\n";
    return 2;
  }
  try {
    auto loaded = svc::kernel::loadPluginFile(argv[1], "");
    const auto& info = loaded->plugin->info();
    svc::kernel::writeManifest({loaded->name, info.paths}, svc::kernel::manifestPathFor(argv[1]));
    // Libraries are never unloaded (plugin_host.h): leave without running the plugin's
    // destructors after its code.
    std::cout.flush();
    std::quick_exit(0);
  } catch (const std::exception& e) {
    std::cerr << "svc_plugin_manifest: " << e.what() << "\n";
    return 1;
  }
}
