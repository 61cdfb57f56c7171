#include <hybrid3d/deck/MachineDeck.hpp>

#include <charconv>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fcntl.h>
#include <unistd.h>

#include <Teuchos_StringInputSource.hpp>
#include <Teuchos_XMLObject.hpp>

#include <hybrid3d/core/Error.hpp>

namespace hybrid3d::deck {

namespace {

using Type = DeckKey::Type;
constexpr double Big = 1e300;
const std::string Timings = "Layer timings";

// What a number of the file may be: a rate or size (> 0), a share of a peak (in (0, 1]), or a
// time that may be nothing (>= 0).
enum class Range { Positive, Share, NonNegative };

struct NumberKey {
  const char* path;
  Range range;
  const char* help;
  bool optional = false;  // absent: the field stays 0 (and 0 is not written)
};

// Every double of the file, in the file's order; ranks per node (an int) and the strings aside.
const std::vector<NumberKey>& numberKeys() {
  static const std::vector<NumberKey> keys = {
      {"Rank/float GFLOP/s", Range::Positive, "peak arithmetic per rank, single precision"},
      {"Rank/double GFLOP/s", Range::Positive, "peak arithmetic per rank, double precision"},
      {"Rank/bfloat16 GFLOP/s", Range::Positive,
       "peak of convolutions with bfloat16 operands per rank (optional: the float rate)", true},
      {"Rank/half GFLOP/s", Range::Positive,
       "peak of convolutions with half operands per rank (optional: the float rate)", true},
      {"Rank/convolution efficiency", Range::Share,
       "share of the peak convolutions reach (layers without a calibrated timing)"},
      {"Rank/memory GB/s", Range::Positive, "memory bandwidth per rank"},
      {"Rank/memory efficiency", Range::Share, "share of it memory-bound layers reach"},
      {"Rank/layer overhead us", Range::NonNegative,
       "fixed cost of one layer pass (kernel launches)"},
      {"Rank/memory GiB", Range::Positive, "memory per rank"},
      {"Rank/fixed memory MiB", Range::Positive,
       "what each process holds besides the plan's rows: program, libraries, allocator "
       "(optional: the plan says it is unknown)",
       true},
      {"Network/intra-node latency us", Range::NonNegative, "latency between two ranks of a node"},
      {"Network/intra-node GB/s", Range::Positive,
       "bandwidth between two ranks of a node, one direction"},
      {"Network/inter-node latency us", Range::NonNegative, "latency between nodes"},
      {"Network/inter-node GB/s", Range::Positive,
       "bandwidth between nodes, one direction, per node (all rails)"},
      {"File system/read GB/s per rank", Range::Positive, "what one rank's reads reach"},
      {"File system/aggregate read GB/s", Range::Positive, "what all ranks' reads reach together"},
  };
  return keys;
}

// The Machine's double behind each of numberKeys(), in the same order.
std::vector<double*> numberFields(Machine& m) {
  return {&m.rank.floatGflops,
          &m.rank.doubleGflops,
          &m.rank.bfloat16Gflops,
          &m.rank.halfGflops,
          &m.rank.convolutionEfficiency,
          &m.rank.memoryGBs,
          &m.rank.memoryEfficiency,
          &m.rank.layerOverheadUs,
          &m.rank.memoryGiB,
          &m.rank.fixedMemoryMiB,
          &m.network.intraLatencyUs,
          &m.network.intraGBs,
          &m.network.interLatencyUs,
          &m.network.interGBs,
          &m.fileSystem.readGBsPerRank,
          &m.fileSystem.aggregateReadGBs};
}

const char* const RanksPerNode = "Network/ranks per node";
const char* const Allreduce = "Network/allreduce";
const char* const Overlap = "Network/reductions overlap";

DeckKey required(const std::string& path, Type type, double min, double max,
                 const std::string& help, std::vector<std::string> choices = {}) {
  return {path, type, "", true, min, max, std::move(choices), help};
}

// Shortest text that reads back as the same double.
std::string number(double v) {
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

std::string timingKey(const std::string& list, const char* field) {
  return Timings + "/" + list + "/" + field;
}

// The names of the sublists of "Layer timings", in the file's order; none when the text is no
// XML (Deck::fromString then says what is wrong with it).
std::vector<std::string> timingLists(const std::string& xml) {
  std::vector<std::string> names;
  try {
    const Teuchos::XMLObject root = Teuchos::StringInputSource(xml).getObject();
    for (int i = 0; i < root.numChildren(); ++i) {
      const Teuchos::XMLObject& section = root.getChild(i);
      if (section.getTag() != "ParameterList" || !section.hasAttribute("name") ||
          section.getRequired("name") != Timings)
        continue;
      for (int j = 0; j < section.numChildren(); ++j) {
        const Teuchos::XMLObject& list = section.getChild(j);
        if (list.getTag() == "ParameterList" && list.hasAttribute("name"))
          names.push_back(list.getRequired("name"));
      }
    }
  } catch (const std::exception&) {
  }
  return names;
}

// The schema with the keys of these timing sublists.
std::vector<DeckKey> schemaWithTimings(const std::vector<std::string>& lists) {
  std::vector<DeckKey> schema = machineDeckSchema();
  for (const std::string& l : lists) {
    schema.push_back(required(timingKey(l, "layer"), Type::String, -Big, Big,
                              "the layer's key (plan/StepCost.hpp, layerKey)"));
    schema.push_back(required(timingKey(l, "voxels"), Type::DoubleList, -Big, Big,
                              "batch x owned output voxels of each size measured, increasing"));
    schema.push_back(required(timingKey(l, "seconds"), Type::DoubleList, -Big, Big,
                              "forward + backward of one training step at each size"));
  }
  return schema;
}

LayerTiming readTiming(const Deck& d, const std::string& list) {
  const std::string file = d.file(), layerKey = timingKey(list, "layer"),
                    voxelsKey = timingKey(list, "voxels"), secondsKey = timingKey(list, "seconds");
  LayerTiming t;
  t.layer = d.getString(layerKey);
  t.voxels = d.getDoubleList(voxelsKey);
  t.seconds = d.getDoubleList(secondsKey);
  if (t.layer.empty()) fail(file, ": key '", layerKey, "' is empty");
  for (const std::string* key : {&voxelsKey, &secondsKey}) {
    const std::vector<double>& values = key == &voxelsKey ? t.voxels : t.seconds;
    if (values.empty()) fail(file, ": key '", *key, "' has no values");
    for (double v : values)
      if (!(v > 0)) fail(file, ": key '", *key, "' holds ", number(v), ": values must be positive");
  }
  if (t.voxels.size() != t.seconds.size())
    fail(file, ": key '", secondsKey, "' has ", t.seconds.size(), " values but '", voxelsKey,
         "' has ", t.voxels.size());
  for (std::size_t i = 1; i < t.voxels.size(); ++i)
    if (!(t.voxels[i] > t.voxels[i - 1]))
      fail(file, ": key '", voxelsKey, "' must increase (", number(t.voxels[i]), " after ",
           number(t.voxels[i - 1]), ")");
  return t;
}

// XML comments may not hold "--" (nor end with "-": the writer puts a space before "-->").
std::string commentText(std::string text) {
  for (std::size_t at; (at = text.find("--")) != std::string::npos;) text.replace(at, 2, "- -");
  return text;
}

std::string attribute(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string list(const std::vector<double>& values) {
  std::string out = "{";
  for (std::size_t i = 0; i < values.size(); ++i) out += (i ? ", " : "") + number(values[i]);
  return out + "}";
}

// Flushes `path`'s data (or a directory's entries) to disk.
void fsyncPath(const std::string& path, int flags) {
  const int fd = ::open(path.c_str(), flags);
  if (fd < 0) return;
  ::fsync(fd);
  ::close(fd);
}

}  // namespace

const std::vector<DeckKey>& machineDeckSchema() {
  static const std::vector<DeckKey> schema = [] {
    std::vector<DeckKey> s = {
        required("name", Type::String, -Big, Big, "the machine's short name"),
        {"about", Type::String, "", false, -Big, Big, {}, "one line: what the machine is"},
        required(RanksPerNode, Type::Int, 1, 1e6, "ranks (GPUs, or cores) per node"),
        {Allreduce,
         Type::String,
         "ring",
         false,
         -Big,
         Big,
         {"ring", "recursive-halving"},
         "the gradient allreduce's algorithm"},
        {Overlap,
         Type::Bool,
         "1",
         false,
         -Big,
         Big,
         {},
         "gradient reductions run beside the backward pass (NCCL, a NIC moving the data); "
         "false: on the rank's own core inside its MPI calls (host MPI without a progress "
         "thread), so their time adds to the step"},
    };
    // The sign is checked after reading, for one message whatever the negative value (Range).
    for (const NumberKey& k : numberKeys()) {
      DeckKey key = required(k.path, Type::Double, k.range == Range::Share ? 0 : -Big,
                             k.range == Range::Share ? 1 : Big, k.help);
      key.required = !k.optional;
      s.push_back(key);
    }
    return s;
  }();
  return schema;
}

Machine readMachineDeckString(const std::string& xml, const std::string& name) {
  const std::vector<std::string> lists = timingLists(xml);
  const Deck d = Deck::fromString(xml, schemaWithTimings(lists), name);
  Machine m;
  m.name = d.getString("name");
  if (d.has("about")) m.about = d.getString("about");
  const std::vector<double*> fields = numberFields(m);
  for (std::size_t i = 0; i < fields.size(); ++i) {
    const NumberKey& k = numberKeys()[i];
    if (k.optional && !d.has(k.path)) continue;  // 0: absent
    const double v = d.getDouble(k.path);
    if (k.range == Range::NonNegative ? v < 0 : !(v > 0))
      fail(name, ": key '", k.path, "' = ", number(v), " must be ",
           k.range == Range::NonNegative ? "zero or positive" : "positive");
    *fields[i] = v;
  }
  m.network.ranksPerNode = d.getInt(RanksPerNode);
  m.network.allreduce = d.getString(Allreduce) == "ring" ? AllreduceAlgorithm::Ring
                                                         : AllreduceAlgorithm::RecursiveHalving;
  m.network.reductionsOverlap = d.getBool(Overlap);
  for (const std::string& l : lists) {
    m.timings.push_back(readTiming(d, l));
    for (std::size_t i = 0; i + 1 < m.timings.size(); ++i)
      if (m.timings[i].layer == m.timings.back().layer)
        fail(name, ": key '", timingKey(l, "layer"), "' = \"", m.timings.back().layer,
             "\" repeats '", timingKey(lists[i], "layer"), "'");
  }
  return m;
}

Machine readMachineDeck(const std::string& path) {
  std::ifstream in(path);
  if (!in) fail(path, ": cannot open the machine file");
  std::ostringstream text;
  text << in.rdbuf();
  return readMachineDeckString(text.str(), path);
}

std::string machineDeckText(const Machine& machine, const std::string& headerComment,
                            const std::map<std::string, std::string>& notes) {
  std::ostringstream o;
  if (!headerComment.empty()) {
    std::istringstream lines(commentText(headerComment));
    std::string line;
    bool first = true;
    while (std::getline(lines, line)) {
      o << (first ? "<!-- " : "\n     ") << line;
      first = false;
    }
    o << " -->\n";
  }
  // One parameter line, with its note if there is one.
  auto parameter = [&](const std::string& indent, const std::string& path, const std::string& name,
                       const char* type, const std::string& value) {
    o << indent << "<Parameter name=\"" << attribute(name) << "\" type=\"" << type << "\" value=\""
      << attribute(value) << "\"/>";
    const auto note = notes.find(path);
    if (note != notes.end()) o << "  <!-- " << commentText(note->second) << " -->";
    o << "\n";
  };
  o << "<ParameterList name=\"hybrid3d machine\">\n";
  parameter("  ", "name", "name", "string", machine.name);
  parameter("  ", "about", "about", "string", machine.about);
  Machine copy = machine;
  const std::vector<double*> fields = numberFields(copy);
  std::string section;
  for (std::size_t i = 0; i < fields.size(); ++i) {
    const std::string path = numberKeys()[i].path;
    const std::string here = path.substr(0, path.find('/'));
    if (here != section) {
      if (!section.empty()) o << "  </ParameterList>\n";
      o << "  <ParameterList name=\"" << here << "\">\n";
      section = here;
      if (section == "Network")
        parameter("    ", RanksPerNode, "ranks per node", "int",
                  std::to_string(machine.network.ranksPerNode));
    }
    if (numberKeys()[i].optional && *fields[i] == 0) continue;  // absent: not written
    parameter("    ", path, path.substr(here.size() + 1), "double", number(*fields[i]));
    if (path == "Network/inter-node GB/s")
      parameter(
          "    ", Allreduce, "allreduce", "string",
          machine.network.allreduce == AllreduceAlgorithm::Ring ? "ring" : "recursive-halving");
    if (path == "Network/inter-node GB/s")
      parameter("    ", Overlap, "reductions overlap", "bool",
                machine.network.reductionsOverlap ? "true" : "false");
  }
  o << "  </ParameterList>\n";
  if (!machine.timings.empty()) {
    o << "  <ParameterList name=\"" << Timings << "\">\n";
    for (std::size_t i = 0; i < machine.timings.size(); ++i) {
      const LayerTiming& t = machine.timings[i];
      const std::string n = std::to_string(i);
      o << "    <ParameterList name=\"" << n << "\">\n";
      parameter("      ", timingKey(n, "layer"), "layer", "string", t.layer);
      parameter("      ", timingKey(n, "voxels"), "voxels", "Array(double)", list(t.voxels));
      parameter("      ", timingKey(n, "seconds"), "seconds", "Array(double)", list(t.seconds));
      o << "    </ParameterList>\n";
    }
    o << "  </ParameterList>\n";
  }
  o << "</ParameterList>\n";
  return o.str();
}

void writeMachineDeck(const Machine& machine, const std::string& path,
                      const std::string& headerComment,
                      const std::map<std::string, std::string>& notes) {
  const std::string text = machineDeckText(machine, headerComment, notes);
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    if (!out) fail(path, ": cannot create ", tmp);
    out << text;
    out.flush();
    if (!out) fail(path, ": cannot write ", tmp);
  }
  // The data on disk before the rename makes them visible, the directory entry after.
  fsyncPath(tmp, O_RDONLY);
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    fail(path, ": cannot rename ", tmp, " over it");
  }
  const std::string dir = std::filesystem::path(path).parent_path().string();
  fsyncPath(dir.empty() ? "." : dir, O_RDONLY | O_DIRECTORY);
}

}  // namespace hybrid3d::deck
