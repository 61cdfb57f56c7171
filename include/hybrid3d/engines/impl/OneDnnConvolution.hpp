#pragma once
// The onednn convolution engine (engines/ConvEngine.hpp): oneDNN's direct convolution on the
// ghosted local box, on host memory, for float activations and the 16-bit ones of mixed
// precision (bfloat16, float16: float weights, float accumulation). oneDNN's own headers stay in
// the source file (src/engines/OneDnnConvolution.cpp), so nothing that includes Conv3d needs them.
//
// 16-bit activations: each pass asks oneDNN for its bf16 (f16) convolution, which reads and
// writes 16-bit activations, takes the weights as reordered once from the float master values,
// and accumulates (and returns the weight and bias gradients) in f32. Where the implementation
// oneDNN has for that on this CPU is its reference one (no AVX512-BF16 / AVX512-FP16: oneDNN
// 2.6 on an AVX2 machine), or none, the pass runs the f32 primitive instead, and the layout
// reorders that copy operands into its blocked layout convert the type as they go: 16-bit
// storage costs no extra pass over the data. describe() names the type each pass runs in.
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

#include <hybrid3d/engines/impl/LocalConvolution.hpp>

namespace hybrid3d::Impl {

struct OneDnnPrimitives;  // oneDNN objects, defined in the source file

// T: float, bfloat16 or float16 (instantiated in the source file).
template <class T>
class OneDnnConvolution final : public LocalConvolution<T, Kokkos::HostSpace> {
  using Base = LocalConvolution<T, Kokkos::HostSpace>;

public:
  using typename Base::execution_space;
  using typename Base::tensor_type;
  using typename Base::values_type;

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
  LocalConvProblem problem_;
  std::unique_ptr<OneDnnPrimitives> p_;
  // The OpenMP threads oneDNN runs on: those of Kokkos's host execution space, read once at
  // set-up (asking a Kokkos 4 host space in the step constructs, and allocates, an instance).
  int threads_ = 1;
};

// oneDNN's version as "major.minor.patch" (for the timing cache's key, engines/ConvTimings.hpp).
std::string oneDnnVersion();

extern template class OneDnnConvolution<float>;
extern template class OneDnnConvolution<bfloat16>;
extern template class OneDnnConvolution<float16>;

}  // namespace hybrid3d::Impl

#endif
