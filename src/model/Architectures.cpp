// The architecture registry (Architecture.hpp): the architectures of src/model/architectures/,
// listed by the build, and those registered at run time.
#include <map>

#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/model/Architecture.hpp>
#include <hybrid3d/model/Task.hpp>

namespace hybrid3d {

namespace Impl {
// Generated at configure time (src/CMakeLists.txt): one call per file of src/model/architectures/.
std::vector<Architecture> builtInArchitectures();
}  // namespace Impl

namespace {

void add(std::map<std::string, Architecture>& registry, const Architecture& a) {
  if (a.name.empty() || !a.traits || !a.define || !a.initialization)
    fail("model: architecture \"", a.name, "\" needs a name, traits, define and initialization");
  if (!registry.emplace(a.name, a).second)
    fail("model: architecture \"", a.name, "\" is registered twice");
}

// Built on first use, so a registration during static initialisation (a test's) finds it.
std::map<std::string, Architecture>& registry() {
  static std::map<std::string, Architecture> r = [] {
    std::map<std::string, Architecture> builtIn;
    for (const Architecture& a : Impl::builtInArchitectures()) add(builtIn, a);
    return builtIn;
  }();
  return r;
}

}  // namespace

void registerArchitecture(const Architecture& architecture) { add(registry(), architecture); }

std::vector<std::string> architectureNames() {
  std::vector<std::string> names;
  for (const auto& entry : registry()) names.push_back(entry.first);
  return names;
}

const Architecture& findArchitecture(const std::string& name) {
  const auto& r = registry();
  const auto found = r.find(name);
  if (found != r.end()) return found->second;
  const std::vector<std::string> names = architectureNames();
  std::string list;
  for (std::size_t i = 0; i < names.size(); ++i)
    list += (i == 0 ? "" : i + 1 == names.size() ? " or " : ", ") + names[i];
  fail("model: unknown architecture \"", name, "\" (", list, ")");
}

ModelTraits modelTraits(const ModelOptions& o) {
  if (o.batch < 1) fail("model: batch ", o.batch, " per data-parallel group must be >= 1");
  const Architecture& a = findArchitecture(o.architecture);
  const ModelTraits t = a.traits(o);
  if (!t.task) fail("model: ", a.name, " names no task in its traits");
  return t;
}

}  // namespace hybrid3d
