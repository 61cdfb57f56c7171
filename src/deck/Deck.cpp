#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/deck/Deck.hpp>

#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>

#include <Teuchos_Array.hpp>
#include <Teuchos_ParameterList.hpp>
#include <Teuchos_StringInputSource.hpp>
#include <Teuchos_XMLObject.hpp>
#include <Teuchos_XMLParameterListCoreHelpers.hpp>

namespace hybrid3d::deck {

namespace {

const char* typeName(DeckKey::Type t) {
  switch (t) {
    case DeckKey::Type::Int:
      return "int";
    case DeckKey::Type::Double:
      return "double";
    case DeckKey::Type::String:
      return "string";
    case DeckKey::Type::Bool:
      return "bool";
    case DeckKey::Type::DoubleList:
      return "Array(double)";
  }
  return "?";
}

// Teuchos puts the readable part ("XML parse error at line 3: ...") on its message's last line.
std::string lastLine(const std::string& s) {
  std::istringstream in(s);
  std::string line, last = s;
  while (std::getline(in, line))
    if (line.find_first_not_of(" \t\r") != std::string::npos) last = line;
  return last;
}

// The shortest text that reads back as `v` (0.9, not 0.90000000000000002).
std::string number(double v) {
  std::string text;
  for (int digits = 15; digits <= 17; ++digits) {
    std::ostringstream os;
    os.precision(digits);
    os << v;
    text = os.str();
    if (std::strtod(text.c_str(), nullptr) == v) break;
  }
  return text;
}

void checkRange(const std::string& file, const DeckKey& k, double v) {
  if (!std::isfinite(v) || v < k.min || v > k.max)
    fail(file, ": key '", k.path, "' = ", number(v), " is outside [", number(k.min), ", ",
         number(k.max), "]");
}

// Whether `text` is one number of the XML type `type` ("int", "double"), as a whole.
bool isNumber(const std::string& type, const std::string& text) {
  if (text.empty()) return false;
  char* end = nullptr;
  if (type == "int")
    std::strtoll(text.c_str(), &end, 10);
  else
    std::strtod(text.c_str(), &end);
  return *end == '\0';
}

// Whether an int's text fits the type Teuchos reads it into: beyond it Teuchos wraps
// silently (4294967298 would run as 2).
bool fitsInt(const std::string& text) {
  errno = 0;
  const long long v = std::strtoll(text.c_str(), nullptr, 10);
  return errno != ERANGE && v >= INT_MIN && v <= INT_MAX;
}

std::string trimmed(const std::string& s) {
  const auto first = s.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) return "";
  return s.substr(first, s.find_last_not_of(" \t\r\n") - first + 1);
}

// Every element of an Array(double) checked as written: Teuchos reads "2x" as 2 and "nan" as
// a number, which would reach the run silently.
void checkArrayText(const std::string& file, const std::string& path, const std::string& value) {
  std::string body = trimmed(value);
  if (body.size() < 2 || body.front() != '{' || body.back() != '}')
    fail(file, ": key '", path, "' = \"", value, "\" is not an array {a, b, ...}");
  body = body.substr(1, body.size() - 2);
  if (trimmed(body).empty()) return;
  std::istringstream in(body);
  std::string item;
  int index = 0;
  while (std::getline(in, item, ',')) {
    const std::string t = trimmed(item);
    if (!isNumber("double", t) || !std::isfinite(std::strtod(t.c_str(), nullptr)))
      fail(file, ": key '", path, "' element ", index, " = \"", t, "\" is not a finite number");
    ++index;
  }
}

// What Teuchos lets pass without a word, found in the XML itself: two entries of the same name
// (Teuchos keeps one: a deck setting 'Training/epochs' twice would run with either), and a
// number that is not one (Teuchos reads value="two" of type int as 0).
void checkXml(const Teuchos::XMLObject& list, const std::string& prefix, const std::string& file) {
  std::set<std::string> seen;
  for (int i = 0; i < list.numChildren(); ++i) {
    const Teuchos::XMLObject& child = list.getChild(i);
    const bool sublist = child.getTag() == "ParameterList";
    if ((!sublist && child.getTag() != "Parameter") || !child.hasAttribute("name")) continue;
    const std::string path = prefix + child.getRequired("name");
    if (!seen.insert(path).second)
      fail(file, ": ", sublist ? "section '" : "key '", path, "' is given twice");
    if (sublist) {
      checkXml(child, path + "/", file);
    } else if (child.hasAttribute("type") && child.hasAttribute("value")) {
      const std::string& type = child.getRequired("type");
      const std::string& value = child.getRequired("value");
      if ((type == "int" || type == "double") && !isNumber(type, value))
        fail(file, ": key '", path, "' = \"", value, "\" is not a number of type ", type);
      if (type == "int" && !fitsInt(value))
        fail(file, ": key '", path, "' = ", value, " is outside the range of type int [", INT_MIN,
             ", ", INT_MAX, "]");
      if (type == "double" && !std::isfinite(std::strtod(value.c_str(), nullptr)))
        fail(file, ": key '", path, "' = \"", value, "\" is not a finite number");
      if (type.rfind("Array(", 0) == 0) checkArrayText(file, path, value);
    }
  }
}

std::string choiceList(const DeckKey& k) {
  std::string all;
  for (const std::string& c : k.choices) all += (all.empty() ? "" : ", ") + c;
  return all;
}

// `v` when it is one of the key's choices; else the one-line error naming them.
std::string oneOf(const std::string& file, const DeckKey& k, const std::string& v) {
  for (const std::string& c : k.choices)
    if (c == v) return v;
  fail(file, ": key '", k.path, "' = \"", v, "\" is not one of: ", choiceList(k));
}

// Walks the user's list: every entry must be in the schema with the right type and range.
void collect(const Teuchos::ParameterList& list, const std::string& prefix,
             const std::map<std::string, DeckKey>& schema, const std::string& file,
             std::map<std::string, std::string>& values) {
  for (auto it = list.begin(); it != list.end(); ++it) {
    const std::string& name = list.name(it);
    const Teuchos::ParameterEntry& e = list.entry(it);
    const std::string path = prefix.empty() ? name : prefix + "/" + name;
    if (e.isList()) {
      bool known = false;
      for (const auto& [p, k] : schema) known = known || p.rfind(path + "/", 0) == 0;
      if (!known) fail(file, ": unknown section '", path, "'");
      collect(Teuchos::getValue<Teuchos::ParameterList>(e), path, schema, file, values);
      continue;
    }
    const auto s = schema.find(path);
    if (s == schema.end()) fail(file, ": unknown key '", path, "'");
    const DeckKey& k = s->second;
    auto wrongType = [&] {
      const bool words = k.type == DeckKey::Type::DoubleList && !k.choices.empty();
      fail(file, ": key '", path, "' must be of type ", typeName(k.type),
           words ? " or string (" + choiceList(k) + ")" : "");
    };
    switch (k.type) {
      case DeckKey::Type::Int: {
        if (!e.isType<int>()) wrongType();
        const int v = Teuchos::getValue<int>(e);
        checkRange(file, k, v);
        values[path] = std::to_string(v);
        break;
      }
      case DeckKey::Type::Double: {
        if (!e.isType<double>() && !e.isType<int>()) wrongType();
        const double v = e.isType<double>() ? Teuchos::getValue<double>(e)
                                            : Teuchos::getValue<int>(e);  // "1" for 1.0 is fine
        checkRange(file, k, v);
        values[path] = number(v);
        break;
      }
      case DeckKey::Type::String: {
        if (!e.isType<std::string>()) wrongType();
        const std::string v = Teuchos::getValue<std::string>(e);
        values[path] = k.choices.empty() ? v : oneOf(file, k, v);
        break;
      }
      case DeckKey::Type::Bool: {
        if (!e.isType<bool>()) wrongType();
        values[path] = Teuchos::getValue<bool>(e) ? "1" : "0";
        break;
      }
      case DeckKey::Type::DoubleList: {
        if (e.isType<std::string>() && !k.choices.empty()) {
          values[path] = oneOf(file, k, Teuchos::getValue<std::string>(e));
          break;
        }
        if (!e.isType<Teuchos::Array<double>>()) wrongType();
        std::string text;
        for (double v : Teuchos::getValue<Teuchos::Array<double>>(e)) {
          checkRange(file, k, v);
          text += (text.empty() ? "" : ",") + number(v);
        }
        values[path] = text;
        break;
      }
    }
  }
}

}  // namespace

Deck Deck::fromFile(const std::string& path, const std::vector<DeckKey>& schema) {
  std::ifstream in(path);
  if (!in) fail(path, ": cannot open the deck");
  std::ostringstream text;
  text << in.rdbuf();
  return fromString(text.str(), schema, path);
}

Deck Deck::fromString(const std::string& xml, const std::vector<DeckKey>& schema,
                      const std::string& name) {
  Deck d;
  d.file_ = name;
  d.text_ = xml;
  for (const DeckKey& k : schema) d.schema_[k.path] = k;
  Teuchos::RCP<Teuchos::ParameterList> list;
  try {
    checkXml(Teuchos::StringInputSource(xml).getObject(), "", name);
    list = Teuchos::getParametersFromXmlString(xml);
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    fail(name, ": not a valid XML parameter list: ", lastLine(e.what()));
  }
  collect(*list, "", d.schema_, name, d.values_);
  for (const DeckKey& k : schema) {
    if (d.values_.count(k.path)) continue;
    if (k.required) fail(name, ": missing key '", k.path, "'");
    if (!k.fallback.empty()) d.values_[k.path] = k.fallback;
  }
  return d;
}

const std::string& Deck::raw(const std::string& key) const {
  const auto v = values_.find(key);
  if (v == values_.end()) fail(file_, ": key '", key, "' has no value and no default");
  return v->second;
}

int Deck::getInt(const std::string& key) const { return std::stoi(raw(key)); }
double Deck::getDouble(const std::string& key) const { return std::stod(raw(key)); }
const std::string& Deck::getString(const std::string& key) const { return raw(key); }
bool Deck::getBool(const std::string& key) const { return raw(key) == "1" || raw(key) == "true"; }

std::vector<double> Deck::getDoubleList(const std::string& key) const {
  std::vector<double> out;
  std::istringstream in(raw(key));
  std::string item;
  while (std::getline(in, item, ','))
    if (!item.empty()) out.push_back(std::stod(item));
  return out;
}

}  // namespace hybrid3d::deck
