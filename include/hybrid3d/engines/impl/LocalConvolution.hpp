#pragma once
// The interface of a vendor convolution engine (engines/ConvEngine.hpp): the local part of a
// Conv3d on one rank, after the halo gather and before the adjoint scatterAdd. Conv3d keeps
// the decomposition; the engine sees ghosted local arrays and the problem below.

#include <string>

#include <Kokkos_Core.hpp>

#include <hybrid3d/core/Precision.hpp>
#include <hybrid3d/core/Scalar16.hpp>
#include <hybrid3d/core/Types.hpp>
#include <hybrid3d/grid/DistTensor.hpp>

namespace hybrid3d::Impl {

// One rank's convolution problem, fixed at layer set-up.
struct LocalConvProblem {
  std::string layer;  // for messages
  Index batch = 0;    // local samples
  Index cin = 0, cout = 0;
  Index kernel = 1, stride = 1;
  Index3 outExtents{0, 0, 0};  // the output box computed: this rank's owned box, or a part
  // Where that box starts inside the owned output box (non-zero for the parts of a layer that
  // overlaps its halo exchange, layers/impl/ConvSplit.hpp).
  Index3 outOffset{0, 0, 0};
  // Local (ghosted) input index of the first tap of output voxel 0, per dimension; the input
  // window (out - 1) * stride + kernel starts there and lies inside the ghosted input array.
  Index3 inOffset{0, 0, 0};
  // Extents of the ghosted local input array (the owned box grown by the layer's input
  // ghosts): x and dx always have them, so an engine can fix its input layout at set-up.
  Index3 inLocalExtents{0, 0, 0};
  bool bias = false;
  // Backward-data adds into dx instead of overwriting it (and zeroes nothing): the layer zeroes
  // dx once and sums the parts' contributions, whose input windows overlap.
  bool accumulateDx = false;
  // The activations' storage type (x, y, dx, dy); weights and their gradients are always
  // ParamOf of it (float for the 16-bit types).
  Precision activations = Precision::Float;

  Index windowExtent(int dim) const {
    return outExtents[dim] > 0 ? (outExtents[dim] - 1) * stride + kernel : 0;
  }
  bool emptyOutput() const {
    return batch == 0 || outExtents[0] == 0 || outExtents[1] == 0 || outExtents[2] == 0;
  }
  // Whether the input window is all of a ghosted local array of extents `local`: then
  // backward-data writes every cell of dx, and nothing needs zeroing first.
  bool windowIsWholeArray(const Index3& local) const {
    return !emptyOutput() && inOffset == Index3{0, 0, 0} &&
           Index3{windowExtent(0), windowExtent(1), windowExtent(2)} == local;
  }
};

template <class T, class MemorySpace>
class LocalConvolution {
public:
  using tensor_type = DistTensor<T, MemorySpace>;
  using execution_space = typename MemorySpace::execution_space;
  using values_type = Kokkos::View<ParamOf<T>*, MemorySpace>;  // weights, bias, their gradients

  virtual ~LocalConvolution() = default;

  // Which implementation runs each pass, for the start-up report.
  virtual std::string describe() const = 0;
  // The owned cells of the problem's output box in y := conv(x's window) (+ bias). The cells
  // of x that window reads already hold their values (the halo, where it reaches them).
  virtual void forward(const execution_space& exec, const tensor_type& x, const values_type& w,
                       const values_type& bias, const tensor_type& y) = 0;
  // dx's whole local array := the adjoint of forward applied to dy's cells of the output box:
  // cells outside the input window are zero, ghost cells hold contributions to voxels other
  // ranks own. With accumulateDx: dx += that adjoint, on the input window only.
  virtual void backwardData(const execution_space& exec, const values_type& w,
                            const tensor_type& dy, const tensor_type& dx) = 0;
  // dw += dL/dw and, with a bias, db += dL/db from this rank's cells.
  virtual void backwardWeights(const execution_space& exec, const tensor_type& x,
                               const tensor_type& dy, const values_type& dw,
                               const values_type& db) = 0;
};

}  // namespace hybrid3d::Impl
