#include "plugin_manifest.h"

#include <Poco/JSON/Array.h>
#include <Poco/JSON/Object.h>
#include <Poco/JSON/Parser.h>

#include <fstream>
#include <sstream>
#include <stdexcept>

namespace svc::kernel {

std::string manifestPathFor(const std::string& library) {
  const std::string suffix = ".so";
  if (library.size() > suffix.size() &&
      library.compare(library.size() - suffix.size(), suffix.size(), suffix) == 0) {
    return library.substr(0, library.size() - suffix.size()) + ".json";
  }
  return library + ".json";
}

void writeManifest(const PluginManifest& manifest, const std::string& path) {
  Poco::JSON::Object o;
  o.set("name", manifest.name);
  Poco::JSON::Array paths;
  for (const auto& p : manifest.paths) paths.add(p);
  o.set("paths", paths);
  std::ofstream out(path, std::ios::trunc);
  o.stringify(out, 2);
  out << "\n";
  if (!out.flush()) throw std::runtime_error("cannot write " + path);
}

std::optional<PluginManifest> readManifest(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  try {
    auto o = Poco::JSON::Parser().parse(text.str()).extract<Poco::JSON::Object::Ptr>();
    PluginManifest m;
    m.name = o->getValue<std::string>("name");
    auto paths = o->getArray("paths");
    if (m.name.empty() || !paths) return std::nullopt;
    for (const auto& p : *paths) {
      if (!p.isString()) return std::nullopt;
      m.paths.push_back(p.toString());
    }
    return m;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

}  // namespace svc::kernel
