#pragma once
// The onednn convolution engine (layers/ConvEngine.hpp): oneDNN's direct convolution on the
// ghosted local box, float on host memory. oneDNN's own headers stay in the source file
// (src/layers/OneDnnConvolution.cpp), so nothing that includes Conv3d needs them.
//
// The ghosts already hold the zero padding and the neighbours' voxels, so the primitive runs
// with padding 0 on the input window. oneDNN computes fastest in its blocked layouts
// (channels in blocks of 16): operands are reordered in and out of them through one host
// workspace shared by every oneDNN convolution of the process (layers run one at a time), sized
// and first-touched at set-up, so a training step allocates nothing.

#include <hybrid3d/Config.hpp>

#if HYBRID3D_ENABLE_ONEDNN

#include <memory>
#include <string>

#include <hybrid3d/layers/impl/LocalConvolution.hpp>

namespace hybrid3d::Impl {

class OneDnnConvolution final : public LocalConvolution<float, Kokkos::HostSpace> {
public:
  // Throws hybrid3d::Error naming the layer when oneDNN refuses the problem.
  explicit OneDnnConvolution(const LocalConvProblem& problem);
  ~OneDnnConvolution() override;

  std::string describe() const override;
  void forward(const execution_space& exec, const tensor_type& x, const values_type& w,
               const values_type& bias, const tensor_type& y) override;
  void backwardData(const execution_space& exec, const values_type& w, const tensor_type& dy,
                    const tensor_type& dx) override;
  void backwardWeights(const execution_space& exec, const tensor_type& x, const tensor_type& dy,
                       const values_type& dw, const values_type& db) override;

private:
  struct Primitives;  // oneDNN objects, defined in the source file
  LocalConvProblem problem_;
  std::unique_ptr<Primitives> p_;
  // The OpenMP threads oneDNN runs on: those of Kokkos's host execution space, read once at
  // set-up (asking a Kokkos 4 host space in the step constructs, and allocates, an instance).
  int threads_ = 1;
};

}  // namespace hybrid3d::Impl

#endif
