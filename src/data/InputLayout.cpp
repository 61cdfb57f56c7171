#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/data/InputLayout.hpp>

#include <sstream>

namespace hybrid3d::data {

LayoutChoice parseLayoutChoice(const std::string& text) {
  if (text == "auto") return LayoutChoice::Auto;
  if (text == "CDHW") return LayoutChoice::CDHW;
  if (text == "DHWC") return LayoutChoice::DHWC;
  fail("layout \"", text, "\" is not auto, CDHW or DHWC");
}

const char* layoutName(LayoutChoice choice) {
  return choice == LayoutChoice::CDHW ? "CDHW" : choice == LayoutChoice::DHWC ? "DHWC" : "auto";
}

std::string shapeText(const std::vector<Index>& s) {
  std::ostringstream os;
  os << "[";
  for (std::size_t i = 0; i < s.size(); ++i) os << (i ? "," : "") << s[i];
  return os.str() + "]";
}

bool isChannelsLast(const std::string& what, const std::vector<Index>& shape, int channels,
                    const Index3& e, LayoutChoice deck, const std::string& attribute) {
  const Index C = channels;
  const std::vector<Index> first{C, e[0], e[1], e[2]}, last{e[0], e[1], e[2], C};
  const std::string firstText = "[C,D,H,W] = " + shapeText(first),
                    lastText = "[D,H,W,C] = " + shapeText(last);

  // An explicit layout: the file's attribute, else the deck's key.
  LayoutChoice chosen = deck;
  std::string why = "the deck's 'Data/layout'";
  if (!attribute.empty()) {
    if (attribute != "CDHW" && attribute != "DHWC")
      fail(what, " has the attribute layout = \"", attribute, "\"; expected \"CDHW\" or \"DHWC\"");
    const LayoutChoice marked = attribute == "DHWC" ? LayoutChoice::DHWC : LayoutChoice::CDHW;
    if (deck != LayoutChoice::Auto && deck != marked)
      fail(what, " has the attribute layout = \"", attribute, "\" but the deck's 'Data/layout' is ",
           layoutName(deck));
    chosen = marked;
    why = "its attribute layout = \"" + attribute + "\"";
  }

  if (shape.size() != 4)
    fail(what, " has rank ", shape.size(), " (shape ", shapeText(shape), "); expected rank 4 ",
         chosen == LayoutChoice::DHWC   ? lastText
         : chosen == LayoutChoice::CDHW ? firstText
                                        : firstText + " or " + lastText);
  if (chosen != LayoutChoice::Auto) {
    const bool channelsLast = chosen == LayoutChoice::DHWC;
    if (shape != (channelsLast ? last : first))
      fail(what, " has shape ", shapeText(shape), "; expected ",
           channelsLast ? lastText : firstText, " (layout ", layoutName(chosen), " from ", why,
           ")");
    return channelsLast;
  }
  const bool isFirst = shape == first, isLast = shape == last;
  if (isFirst && isLast)
    fail(what, " has shape ", shapeText(shape), ", which reads as [C,D,H,W] and as [D,H,W,C] (", C,
         " channels, ", C, "^3 voxels): set the deck's 'Data/layout' to CDHW or DHWC");
  if (!isFirst && !isLast)
    fail(what, " has shape ", shapeText(shape), "; expected ", firstText, " or ", lastText);
  return isLast;
}

}  // namespace hybrid3d::data
