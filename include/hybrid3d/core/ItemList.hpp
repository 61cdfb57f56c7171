#pragma once
/// \file
/// A deck value listing items between separators ("conv1..pool1, conv2..pool2"): its items with
/// the blanks around each removed, for the value's own parser to read and refuse.

#include <cctype>
#include <string>
#include <vector>

namespace hybrid3d {

/// `text` without the blanks at either end.
inline std::string trimBlanks(const std::string& text) {
  std::size_t a = 0, b = text.size();
  while (a < b && std::isspace(static_cast<unsigned char>(text[a]))) ++a;
  while (b > a && std::isspace(static_cast<unsigned char>(text[b - 1]))) --b;
  return text.substr(a, b - a);
}

/// The items between `separator`s, each trimmed. Empty items are kept, so that a parser can
/// refuse "a,,b" by its text; "" and blanks give one empty item.
inline std::vector<std::string> splitItems(const std::string& text, char separator) {
  std::vector<std::string> items;
  std::size_t start = 0;
  for (;;) {
    const std::size_t at = text.find(separator, start);
    items.push_back(
        trimBlanks(text.substr(start, at == std::string::npos ? std::string::npos : at - start)));
    if (at == std::string::npos) return items;
    start = at + 1;
  }
}

}  // namespace hybrid3d
