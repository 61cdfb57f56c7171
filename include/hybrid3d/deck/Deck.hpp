#pragma once
/// \file
/// Input decks: a Teuchos ParameterList in XML, every key validated against a schema.
///
/// The schema lists every key the program understands with its type, default or requiredness,
/// and range or choices. Reading a deck rejects an unknown key (often a typo), a key or section
/// given twice (Teuchos itself would keep one silently), a value of the wrong type and a value
/// out of range with one line naming the file and the key, so a 2048-rank job fails at start-up
/// rather than after hours in the queue. The interface is
/// Teuchos-free: only the implementation (library hybrid3d_deck) links Teuchos, which keeps
/// Teuchos, and the Kokkos it was built with, out of the core library (docs/design.md section 10).

#include <map>
#include <string>
#include <vector>

namespace hybrid3d::deck {

struct DeckKey {
  enum class Type { Int, Double, String, Bool, DoubleList };
  std::string path;  // "Training/mini-batch": sublists separated by '/'
  Type type = Type::String;
  std::string fallback;  // default as text; empty and !required: no default
  bool required = false;
  double min = -1e300, max = 1e300;  // numbers (and every element of a list)
  /// Strings: the allowed values (empty: any). Lists: words the key takes instead of numbers,
  /// given as type string (Data/channel offset = auto).
  std::vector<std::string> choices;
  std::string help;  // one line, printed by `hybrid3d deck-help`
};

class Deck {
public:
  /// Parse and validate; throws hybrid3d::Error "<file>: <what is wrong with which key>".
  static Deck fromFile(const std::string& path, const std::vector<DeckKey>& schema);
  static Deck fromString(const std::string& xml, const std::vector<DeckKey>& schema,
                         const std::string& name = "<deck>");

  int getInt(const std::string& key) const;
  double getDouble(const std::string& key) const;
  const std::string& getString(const std::string& key) const;
  bool getBool(const std::string& key) const;
  std::vector<double> getDoubleList(const std::string& key) const;
  /// True when the deck gave the key or the schema has a default.
  bool has(const std::string& key) const { return values_.count(key) > 0; }

  /// Every key with a value (given or by default), as canonical text.
  const std::map<std::string, std::string>& values() const { return values_; }
  const std::string& file() const { return file_; }
  const std::string& text() const { return text_; }  // the XML as read (for checkpoints)

private:
  const std::string& raw(const std::string& key) const;
  std::string file_, text_;
  std::map<std::string, std::string> values_;  // validated values as canonical text
  std::map<std::string, DeckKey> schema_;
};

}  // namespace hybrid3d::deck
