#pragma once
/// \file
/// Where an input file keeps its channels: first ([C,D,H,W], the project's own layout) or last
/// ([D,H,W,C], the published CosmoFlow HDF5 files and the MLPerf HPC numpy release, which carry
/// no attribute saying so). One rule for every format, so HDF5 and numpy samples are recognised
/// alike (docs/design.md section 7).
///
/// The layout comes from, in this order: the file's own `layout` attribute (HDF5 only), the
/// deck's 'Data/layout' when it is CDHW or DHWC, else the array's shape: [C,D,H,W] or
/// [D,H,W,C] with the model's channel count C and sample extents (D,H,W). A shape that is both
/// (C equal to every extent, e.g. 4 channels of 4^3) is refused rather than guessed; an
/// attribute the deck contradicts is refused rather than either one silently winning.

#include <string>
#include <vector>

#include <hybrid3d/core/Types.hpp>

namespace hybrid3d::data {

enum class LayoutChoice { Auto, CDHW, DHWC };

/// "auto", "CDHW", "DHWC" (the deck key's choices); throws naming the text otherwise.
LayoutChoice parseLayoutChoice(const std::string& text);
const char* layoutName(LayoutChoice choice);

/// Whether an input array of shape `shape` is channels-last. `what` names the array in
/// messages ("FILE: dataset '/full'", "FILE: array"); `attribute` is the file's layout
/// attribute ("" when it has none). Throws one line naming `what` when the rank, the shape or
/// the attribute does not fit, or the attribute and the deck disagree.
bool isChannelsLast(const std::string& what, const std::vector<Index>& shape, int channels,
                    const Index3& extents, LayoutChoice deck, const std::string& attribute);

/// "[4,32,32,32]".
std::string shapeText(const std::vector<Index>& shape);

}  // namespace hybrid3d::data
