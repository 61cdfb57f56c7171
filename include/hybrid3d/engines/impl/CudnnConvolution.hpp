#pragma once
// The cudnn convolution engine (engines/ConvEngine.hpp): cuDNN's convolutions on the ghosted
// local box, float and double on CUDA device memory, as LBANN and DiHydrogen compute their local
// convolutions. cuDNN's own headers stay in the source file (src/engines/CudnnConvolution.cpp),
// so nothing that includes Conv3d needs them.
//
// The ghosts already hold the zero padding and the neighbours' voxels, so cuDNN runs with
// padding 0 on the input window. The window is described in place, with the strides of the
// ghosted array around it (as DiHydrogen's distconv does), not copied out: no copy kernels and
// no packed duplicate of every activation, at the price that cuDNN's algorithms which want
// fully packed 3-D tensors are not candidates (its heuristics list only those that run).
// Algorithms come from cuDNN's heuristics (cudnnGet*Algorithm_v7) at set-up for the layouts the
// layer expects (x with the layer's input ghosts, y and dy without ghosts); a call that meets
// other layouts (an output with ghosts) chooses again once, and the layer keeps that choice.
// One cuDNN handle and one device workspace serve every cudnn convolution of the process.

#include <hybrid3d/Config.hpp>

#if HYBRID3D_ENABLE_CUDNN

#include <memory>
#include <string>

#include <hybrid3d/engines/impl/LocalConvolution.hpp>

namespace hybrid3d::Impl {

template <class T>
class CudnnConvolution final : public LocalConvolution<T, Kokkos::CudaSpace> {
  using Base = LocalConvolution<T, Kokkos::CudaSpace>;

public:
  using typename Base::execution_space;
  using typename Base::tensor_type;
  using typename Base::values_type;

  // Needs a GPU: creates the shared handle on first use and asks cuDNN for each pass's
  // algorithm. Throws hybrid3d::Error naming the layer when cuDNN cannot run the problem.
  explicit CudnnConvolution(const LocalConvProblem& problem);
  ~CudnnConvolution() override;

  std::string describe() const override;
  void forward(const execution_space& exec, const tensor_type& x, const values_type& w,
               const values_type& bias, const tensor_type& y) override;
  void backwardData(const execution_space& exec, const values_type& w, const tensor_type& dy,
                    const tensor_type& dx) override;
  void backwardWeights(const execution_space& exec, const tensor_type& x, const tensor_type& dy,
                       const values_type& dw, const values_type& db) override;

private:
  struct State;  // cuDNN descriptors and algorithms, defined in the source file
  LocalConvProblem problem_;
  std::unique_ptr<State> s_;
};

extern template class CudnnConvolution<float>;
extern template class CudnnConvolution<double>;

}  // namespace hybrid3d::Impl

#endif
