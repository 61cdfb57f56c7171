// The unpacked size of a gzipped NIfTI file, by zlib's own reading (impl/NiftiHeader.hpp): the
// last four bytes of a gzip file give the size of its last member only, so a file of several
// members (bgzip's empty end member, or `cat a.gz b.gz`) cannot be sized from its trailer.
#include <hybrid3d/core/Error.hpp>

#include <algorithm>
#include <vector>

#include <zlib.h>

#include "impl/NiftiHeader.hpp"

namespace hybrid3d::generate::Impl {

std::int64_t gzipUnpackedBytes(const std::string& path, std::int64_t enough) {
  gzFile file = gzopen(path.c_str(), "rb");
  if (!file) fail(path, ": cannot open it for reading");
  std::vector<char> buffer(std::size_t(1) << 20);
  std::int64_t bytes = 0;
  std::string error;
  while (bytes < enough) {
    const auto want = unsigned(std::min<std::int64_t>(std::int64_t(buffer.size()), enough - bytes));
    const int n = gzread(file, buffer.data(), want);
    if (n > 0) {
      bytes += n;
      continue;
    }
    int code = Z_OK;
    const char* message = gzerror(file, &code);
    if (code != Z_OK) error = message ? message : "unknown error";
    if (error.rfind(path + ": ", 0) == 0) error.erase(0, path.size() + 2);  // zlib names the file
    break;
  }
  gzclose(file);
  if (!error.empty())
    fail(path, ": its gzip data are truncated or damaged after ", bytes,
         " unpacked bytes (zlib: ", error, ")");
  return bytes;
}

}  // namespace hybrid3d::generate::Impl
