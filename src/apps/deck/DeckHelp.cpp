// `hybrid3d deck-help`: every key a training deck may hold, from the schema the deck is checked
// against (deck/TrainDeck.hpp), so the list cannot drift from what `train` accepts: the path,
// the type, the default or "required", the range or the choices (Model/architecture lists the
// registered architectures), and what the key means.
#include <cstdio>
#include <string>

#include <mpi.h>

#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/deck/TrainDeck.hpp>

#include "../Command.hpp"

namespace hybrid3d::app {
namespace {

const char* typeName(deck::DeckKey::Type t) {
  switch (t) {
    case deck::DeckKey::Type::Int:
      return "int";
    case deck::DeckKey::Type::Double:
      return "double";
    case deck::DeckKey::Type::String:
      return "string";
    case deck::DeckKey::Type::Bool:
      return "bool";
    case deck::DeckKey::Type::DoubleList:
      return "Array(double)";
  }
  return "?";
}

// A bound as the key's type reads it (2147483647, not 2.14748e+09, for an int).
std::string bound(const deck::DeckKey& k, double v) {
  return k.type == deck::DeckKey::Type::Int ? std::to_string(static_cast<long long>(v))
                                            : Impl::concat(v);
}

// "default X", "required" or nothing; then the range of a number or the choices of a string.
std::string constraints(const deck::DeckKey& k) {
  std::string s = k.required ? "required" : k.fallback.empty() ? "" : "default " + k.fallback;
  const bool number = k.type == deck::DeckKey::Type::Int || k.type == deck::DeckKey::Type::Double ||
                      k.type == deck::DeckKey::Type::DoubleList;
  auto add = [&s](const std::string& part) { s += (s.empty() ? "" : "; ") + part; };
  if (number && (k.min > -1e300 || k.max < 1e300)) {
    std::string range;
    if (k.min > -1e300) range += ">= " + bound(k, k.min);
    if (k.max < 1e300) range += std::string(range.empty() ? "" : ", ") + "<= " + bound(k, k.max);
    add(range);
  }
  if (!k.choices.empty()) {
    std::string one;
    for (const std::string& c : k.choices) one += (one.empty() ? "" : " | ") + c;
    // A list's words are given as type string instead of the array.
    add(k.type == deck::DeckKey::Type::DoubleList ? "or type string: " + one : one);
  }
  return s;
}

int run(const std::vector<std::string>& args) {
  if (!args.empty()) fail("deck-help: takes no arguments (got ", args[0], ")");
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank != 0) return 0;
  std::printf("Keys of a training deck (<ParameterList name=\"hybrid3d\">; sublists by '/'):\n");
  for (const deck::DeckKey& k : deck::trainDeckSchema()) {
    std::printf("  %-36s %-13s %s\n", k.path.c_str(), typeName(k.type), constraints(k).c_str());
    if (!k.help.empty()) std::printf("      %s\n", k.help.c_str());
  }
  return 0;
}

const Registration reg{"deck-help",
                       {"", "lists every key of a training deck: type, default, range or choices",
                        "Prints the schema `train` and `check` validate a deck against, one key\n"
                        "a line (sublists separated by '/') with its meaning below it.\n",
                        "mpirun -n 1 hybrid3d deck-help"},
                       run};

}  // namespace
}  // namespace hybrid3d::app
