#include <hybrid3d/layers/SpatialGeometry.hpp>

namespace hybrid3d {

SpatialGeometry::SpatialGeometry(LayerNaming naming, const Int3& dims, const Int3& coords,
                                 const TensorShape& input, const TensorShape& output,
                                 InputGhosts rule, const GhostMap& ghosts)
    : naming_(std::move(naming)),
      in_(input),
      out_(output),
      inDec_(input.extents, dims),
      outDec_(output.extents, dims),
      coords_(coords),
      inOwned_(inDec_.ownedBox(coords)),
      outOwned_(outDec_.ownedBox(coords)),
      rule_(rule),
      ghostMap_(ghosts) {
  // Global data: every rank refuses a grid too fine for the receptive field alike.
  if (!ghosts.none()) {
    checkGhostWidths(inDec_, ghosts, naming_.label);
    ghosts_ = ghosts.at(coords);
  }
  const char* passes[] = {"forward", "backwardData", "backwardWeights", "backward"};
  for (int p = 0; p < 4; ++p) regions_[p] = &region(passes[p]);
}

const std::string& SpatialGeometry::region(std::string_view pass) const {
  // kernelLabel joins two pieces; the pass sits between the kind and the name.
  const std::string prefix = "hybrid3d::" + naming_.kind + "::" + std::string(pass) + " ";
  return Impl::kernelLabel(prefix, naming_.name);
}

void SpatialGeometry::badShape(int batch, int channels, const BlockDecomposition& dec,
                               const Int3& coords, const std::string& tensor, const char* role,
                               const TensorShape& want, const BlockDecomposition& wantDec) const {
  const bool here = coords == coords_;
  fail(naming_.label, ": ", role, " tensor '", tensor, "' is ", batch, "x", channels, "x",
       toString(dec.globalExtents()), " on grid ", toString(dec.dims()),
       here ? "" : " at coordinates " + toString(coords), ", expected ", want.batch, "x",
       want.channels, "x", toString(want.extents), " on grid ", toString(wantDec.dims()),
       here ? "" : " at this rank's " + toString(coords_));
}

void SpatialGeometry::badGhosts(const GhostWidths& has, const std::string& tensor,
                                const char* role) const {
  fail(naming_.label, ": ", role, " tensor '", tensor, "' has ghost widths lo ", toString(has.lo),
       ", hi ", toString(has.hi), ", expected those of inputGhosts(): lo ", toString(ghosts_.lo),
       ", hi ", toString(ghosts_.hi));
}

}  // namespace hybrid3d
