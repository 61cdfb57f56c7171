#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/core/ExactText.hpp>
#include <hybrid3d/generate/Manifest.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

namespace hybrid3d::generate {

namespace fs = std::filesystem;

std::string manifestText(const Manifest& m) {
  std::ostringstream out;
  out << "# hybrid3d synthetic dataset manifest (format: include/hybrid3d/generate/"
         "Manifest.hpp)\n";
  out << "generator " << m.generator << "\n";
  out << "size " << m.size << "\n";
  out << "seed " << m.seed << "\n";
  if (!m.source.empty()) out << "source " << m.source << "\n";
  for (const auto& [name, count] : m.splits) out << "split " << name << " " << count << "\n";
  for (const auto& [name, value] : m.settings)
    out << "setting " << name << " " << exactText(value) << "\n";
  for (const auto& p : m.parameters)
    out << "parameter " << p.name << " " << exactText(p.lo) << " " << exactText(p.hi) << "\n";
  if (m.hasTargets) out << "targets unitPar\n";
  for (const ManifestStatistics& st : m.statistics) {
    out << "statistics " << (st.log1p ? "log1p" : "plain") << " " << st.samples << " "
        << st.mean.size();
    for (double v : st.mean) out << " " << exactText(v);
    for (double v : st.std) out << " " << exactText(v);
    out << "\n";
  }
  out << "# sample SPLIT FILE INDEX";
  for (const auto& p : m.parameters) out << " " << p.name;
  if (m.hasTargets)
    for (const auto& p : m.parameters) out << " unit_" << p.name;
  out << "\n";
  for (const auto& s : m.samples) {
    out << "sample " << s.split << " " << s.file << " " << s.index;
    for (double v : s.parameters) out << " " << exactText(v);
    for (float u : s.unitPar) out << " " << exactText(u);
    out << "\n";
  }
  return out.str();
}

void writeManifest(const Manifest& m, const std::string& path) {
  const std::string temporary = path + ".tmp";
  {
    std::ofstream out(temporary);
    if (!out) fail(path, ": cannot write the manifest");
    out << manifestText(m);
    out.flush();
    if (!out) fail(path, ": cannot write the manifest (disk full?)");
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0)
    fail(path, ": cannot rename '", temporary, "' into place");
}

bool staysInside(const std::string& relative) {
  const fs::path p = fs::path(relative).lexically_normal();
  return !relative.empty() && p.is_relative() && !p.empty() && *p.begin() != ".." &&
         *p.begin() != ".";
}

Manifest readManifest(const std::string& path) {
  std::ifstream in(path);
  if (!in) fail(path, ": cannot open the manifest");
  return parseManifest(in, path);
}

Manifest parseManifest(std::istream& in, const std::string& path) {
  Manifest m;
  std::map<std::string, int> firstLineOf;  // each sample's file, normalised
  std::string line;
  int lineNo = 0;
  while (std::getline(in, line)) {
    ++lineNo;
    if (line.empty() || line[0] == '#') continue;
    std::istringstream words(line);
    std::string key;
    words >> key;
    auto bad = [&](const char* what) { fail(path, ":", lineNo, ": ", what, " in '", line, "'"); };
    if (key == "generator") {
      words >> m.generator;
    } else if (key == "size") {
      words >> m.size;
    } else if (key == "seed") {
      words >> m.seed;
    } else if (key == "source") {
      std::getline(words >> std::ws, m.source);
    } else if (key == "split") {
      std::pair<std::string, Index> s;
      words >> s.first >> s.second;
      m.splits.push_back(s);
    } else if (key == "setting") {
      std::pair<std::string, double> s;
      words >> s.first >> s.second;
      m.settings.push_back(s);
    } else if (key == "parameter") {
      ManifestParameter p;
      words >> p.name >> p.lo >> p.hi;
      m.parameters.push_back(p);
    } else if (key == "statistics") {
      ManifestStatistics st;
      std::string kind;
      std::size_t channels = 0;
      words >> kind >> st.samples >> channels;
      if (kind != "log1p" && kind != "plain") bad("statistics neither log1p nor plain");
      st.log1p = kind == "log1p";
      st.mean.resize(channels);
      st.std.resize(channels);
      for (double& v : st.mean) words >> v;
      for (double& v : st.std) words >> v;
      m.statistics.push_back(st);
    } else if (key == "targets") {
      m.hasTargets = true;
    } else if (key == "sample") {
      ManifestSample s;
      words >> s.split >> s.file >> s.index;
      s.parameters.resize(m.parameters.size());
      for (double& v : s.parameters) words >> v;
      if (m.hasTargets) {
        s.unitPar.resize(m.parameters.size());
        for (float& u : s.unitPar) words >> u;
      }
      if (!words) bad("too few values for the parameters declared above");
      // A transform reads and writes through these names: they must stay in the dataset.
      if (!staysInside(s.file)) bad("a sample file outside the dataset's directory");
      const auto [at, fresh] =
          firstLineOf.emplace(fs::path(s.file).lexically_normal().string(), lineNo);
      if (!fresh)
        fail(path, ":", lineNo, ": sample file ", s.file,
             " is listed a second time (first on line ", at->second, ")");
      m.samples.push_back(s);
      continue;
    } else {
      bad("unknown record");
    }
    if (!words) bad("malformed record");
  }
  if (m.generator.empty() || m.size <= 0) fail(path, ": not a manifest (no generator or size)");
  return m;
}

}  // namespace hybrid3d::generate
