#pragma once
/// \file
/// What a sample file holds before its size is known (`hybrid3d predict` takes volumes of any
/// size; training knows the size from the deck): the input's (D,H,W) and whether the file
/// carries the targets or labels of a spec. One rank's POSIX open; SampleReader then checks the
/// file against a spec made with these extents as it does in training.

#include <string>

#include <hybrid3d/core/Types.hpp>
#include <hybrid3d/data/SampleReader.hpp>

namespace hybrid3d::data {

/// The (D,H,W) of the input of sample `path` (HDF5 or NAME.data.npy) with spec.channels
/// channels, first or last as the file's layout attribute, the deck's choice (spec.layout) or
/// the shape says (InputLayout.hpp). Throws one line naming the file: unreadable, no input, not
/// rank 4, no axis of spec.channels, both axes so and no layout to tell.
Index3 sampleExtents(const std::string& path, const SampleSpec& spec);

/// Whether sample `path` holds `dataset` (HDF5; for a numpy sample, "targets" are the
/// NAME.label.npy beside it and there are no labels).
bool sampleHolds(const std::string& path, const std::string& dataset);

}  // namespace hybrid3d::data
