// The .npy header's dict literal (impl/NpyDict.hpp).
#include <hybrid3d/core/Error.hpp>

#include <cctype>
#include <set>

#include "impl/NpyDict.hpp"

namespace hybrid3d::data::Impl {
namespace {

// The header text as one line of a message: its padding cut, control characters as '?'.
std::string shown(const std::string& text) {
  std::string line = text.substr(0, text.find_last_not_of(" \n") + 1);
  for (char& ch : line)
    if (static_cast<unsigned char>(ch) < 32 || ch == 127) ch = '?';
  return line;
}

// A cursor over the dict text; every failure names the file and shows the text.
class DictCursor {
public:
  DictCursor(const std::string& path, const std::string& text) : path_(path), text_(text) {}

  [[noreturn]] void bad(const std::string& why) const {
    fail(path_, ": .npy header is not the dict numpy writes (", why, " at byte ", at_,
         "; header: ", shown(text_), ")");
  }
  // The next character after spaces, '\0' at the end.
  char peek() {
    while (at_ < text_.size() &&
           (text_[at_] == ' ' || text_[at_] == '\t' || text_[at_] == '\n' || text_[at_] == '\r'))
      ++at_;
    return at_ < text_.size() ? text_[at_] : '\0';
  }
  void expect(char c) {
    if (peek() != c) bad(std::string("'") + c + "' expected");
    ++at_;
  }
  bool atEnd() { return peek() == '\0'; }
  // A quoted string without escapes: numpy writes none.
  std::string quoted() {
    const char q = peek();
    if (q != '\'' && q != '"') bad("a quoted string expected");
    const std::size_t end = text_.find(q, at_ + 1);
    if (end == std::string::npos) bad("an unclosed string");
    std::string s = text_.substr(at_ + 1, end - at_ - 1);
    if (s.find_first_of("\\\n\r") != std::string::npos) bad("an escape or line break in a string");
    at_ = end + 1;
    return s;
  }
  // A run of letters, digits and underscores (True, False, a size).
  std::string word() {
    peek();
    const std::size_t from = at_;
    while (at_ < text_.size() &&
           (std::isalnum(static_cast<unsigned char>(text_[at_])) || text_[at_] == '_'))
      ++at_;
    return text_.substr(from, at_ - from);
  }

private:
  const std::string& path_;
  const std::string& text_;
  std::size_t at_ = 0;
};

// (D0, D1, ...): whole numbers as Python writes them (no leading zeros), a trailing comma
// required after a single one.
std::vector<Index> shapeTuple(const std::string& path, DictCursor& c) {
  if (c.peek() != '(') fail(path, ": .npy header's 'shape' is not a tuple");
  c.expect('(');
  std::vector<Index> shape;
  bool comma = false;
  while (c.peek() != ')') {
    const std::string digits = c.word();
    if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos ||
        digits.size() > 15 || (digits.size() > 1 && digits[0] == '0'))
      fail(path, ": .npy header's 'shape' holds \"", digits, "\", not a size");
    shape.push_back(std::stoll(digits));
    comma = c.peek() == ',';
    if (comma)
      c.expect(',');
    else if (c.peek() != ')')
      c.bad("',' or ')' expected in 'shape'");
  }
  c.expect(')');
  if (shape.size() == 1 && !comma) fail(path, ": .npy header's 'shape' is not a tuple");
  return shape;
}

}  // namespace

NpyHeader parseNpyDict(const std::string& path, const std::string& text) {
  DictCursor c(path, text);
  NpyHeader h;
  std::set<std::string> seen;
  c.expect('{');
  while (c.peek() != '}') {
    const std::string key = c.quoted();
    if (!seen.insert(key).second) fail(path, ": .npy header gives '", key, "' twice");
    c.expect(':');
    if (key == "descr") {
      if (c.peek() != '\'' && c.peek() != '"')
        fail(path,
             ": .npy array has a structured dtype; expected '<i2' (int16) or '<f4' (float32)");
      h.descr = c.quoted();
    } else if (key == "fortran_order") {
      const std::string value = c.word();
      if (value == "True")
        fail(path,
             ": .npy array is in Fortran order; hybrid3d reads C order "
             "(numpy: np.save(f, np.ascontiguousarray(a)))");
      if (value != "False") fail(path, ": .npy header's 'fortran_order' is neither True nor False");
    } else if (key == "shape") {
      h.shape = shapeTuple(path, c);
    } else {
      fail(path, ": .npy header has the key '", key,
           "'; numpy writes 'descr', 'fortran_order' and 'shape' only");
    }
    if (c.peek() != '}') c.expect(',');
  }
  c.expect('}');
  if (!c.atEnd()) c.bad("text after the dict");
  for (const char* key : {"descr", "fortran_order", "shape"})
    if (!seen.count(key))
      fail(path, ": .npy header has no '", key, "' (header: ", shown(text), ")");
  return h;
}

}  // namespace hybrid3d::data::Impl
