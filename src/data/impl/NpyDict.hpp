#pragma once
// The dict literal of an .npy header, parsed as strictly as numpy's reader (ast.literal_eval
// and its key check) would take it: {'descr': '<i2', 'fortran_order': False, 'shape': (2, 3), }
// with spaces anywhere between tokens. Anything else is refused naming the file, never guessed
// around: a key given twice, an unknown key, text after the dict, a one-element shape without
// its comma (Python's (4) is 4, not a tuple).
#include <string>

#include <hybrid3d/data/NpyFile.hpp>

namespace hybrid3d::data::Impl {

/// The descr (as written) and shape of the header text `text` of file `path`; throws one line
/// naming the file otherwise. Fortran order is refused (hybrid3d reads C order).
NpyHeader parseNpyDict(const std::string& path, const std::string& text);

}  // namespace hybrid3d::data::Impl
