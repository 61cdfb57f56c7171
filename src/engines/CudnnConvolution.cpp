// The cudnn convolution engine (include/hybrid3d/engines/impl/CudnnConvolution.hpp), written
// against cuDNN 9's convolution API (cudnn_cnn: descriptors, cudnnGet*Algorithm_v7,
// cudnnConvolution*), which cuDNN 9 marks deprecated in favour of its graph API but still ships
// and documents. Compiled only when HYBRID3D_ENABLE_CUDNN is on (Kokkos with CUDA, and cuDNN).
#include <hybrid3d/engines/impl/CudnnConvolution.hpp>

#include <algorithm>
#include <array>
#include <climits>
#include <optional>
#include <type_traits>
#include <vector>

#include <cudnn.h>

#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/core/Precision.hpp>

namespace hybrid3d::Impl {
namespace {

void check(cudnnStatus_t status, const std::string& layer, const char* call) {
  if (status != CUDNN_STATUS_SUCCESS)
    fail(layer, ": cuDNN ", call, " failed (", cudnnGetErrorString(status), ")");
}

// The most workspace one pass may use. cuDNN's FFT algorithms can ask for gigabytes; past this
// bound the heuristics' next candidate is taken. The buffer is shared by every layer, so the
// bound is what the whole model spends on it.
constexpr std::size_t maxWorkspaceBytes = std::size_t(1) << 30;

// The cuDNN handle and the device workspace every cudnn convolution of the process shares.
// Passes run one at a time, so one workspace sized for the largest pass serves them all; it
// grows only while a layer chooses its algorithms (set-up, or a first call with other layouts).
// Both go when Kokkos finalizes, before the CUDA runtime does.
class CudnnContext {
public:
  static CudnnContext& instance() {
    static CudnnContext context;
    return context;
  }

  cudnnHandle_t handle(const std::string& layer) {
    if (!handle_) {
      check(cudnnCreate(&handle_), layer, "cudnnCreate (is a GPU visible to this rank?)");
      Kokkos::push_finalize_hook([] { instance().release(); });
    }
    return handle_;
  }

  void reserve(std::size_t bytes) {
    if (bytes <= workspace_.extent(0)) return;
    Kokkos::fence("hybrid3d::CudnnConvolution: the smaller workspace is no longer in use");
    workspace_ = {};
    workspace_ = Kokkos::View<char*, Kokkos::CudaSpace>(
        Kokkos::view_alloc(Kokkos::WithoutInitializing, "hybrid3d::cudnn workspace"), bytes);
  }
  void* workspace() const { return workspace_.data(); }

  // The handle, set to run on `exec`'s stream, so that cuDNN's kernels are ordered with the
  // Kokkos kernels before and after them without a fence. A pass on another stream than the
  // previous one first waits for that stream: the two share the workspace.
  cudnnHandle_t on(const Kokkos::Cuda& exec, const std::string& layer) {
    if (last_ && last_->cuda_stream() != exec.cuda_stream())
      last_->fence("hybrid3d::CudnnConvolution: the workspace's previous stream");
    last_ = exec;
    check(cudnnSetStream(handle(layer), exec.cuda_stream()), layer, "cudnnSetStream");
    return handle_;
  }

private:
  CudnnContext() = default;
  void release() {
    last_.reset();
    workspace_ = {};
    if (handle_) cudnnDestroy(handle_);
    handle_ = nullptr;
  }
  cudnnHandle_t handle_ = nullptr;
  Kokkos::View<char*, Kokkos::CudaSpace> workspace_;
  std::optional<Kokkos::Cuda> last_;
};

// A cuDNN descriptor, created and destroyed with its owner.
template <class D, cudnnStatus_t (*Create)(D*), cudnnStatus_t (*Destroy)(D)>
class Descriptor {
public:
  explicit Descriptor(const std::string& layer) {
    check(Create(&d_), layer, "descriptor creation");
  }
  ~Descriptor() { Destroy(d_); }
  Descriptor(const Descriptor&) = delete;
  Descriptor& operator=(const Descriptor&) = delete;
  operator D() const { return d_; }

private:
  D d_ = nullptr;
};
using TensorDesc =
    Descriptor<cudnnTensorDescriptor_t, cudnnCreateTensorDescriptor, cudnnDestroyTensorDescriptor>;
using FilterDesc =
    Descriptor<cudnnFilterDescriptor_t, cudnnCreateFilterDescriptor, cudnnDestroyFilterDescriptor>;
using ConvDesc = Descriptor<cudnnConvolutionDescriptor_t, cudnnCreateConvolutionDescriptor,
                            cudnnDestroyConvolutionDescriptor>;

// Extents or strides along (n, c, d, h, w), in elements.
using Dims5 = std::array<Index, 5>;

Dims5 packedStrides(Index channels, const Index3& e) {
  const Index hw = e[1] * e[2], dhw = e[0] * hw;
  return {channels * dhw, dhw, hw, e[2], 1};
}
template <class T>
Dims5 stridesOf(const DistTensor<T, Kokkos::CudaSpace>& t) {
  const auto& v = t.view();
  return packedStrides(Index(v.extent(1)),
                       {Index(v.extent(2)), Index(v.extent(3)), Index(v.extent(4))});
}
// Where a window starting at local index `at` begins (sample 0, channel 0).
template <class T>
T* windowStart(const DistTensor<T, Kokkos::CudaSpace>& t, const Index3& at) {
  const auto& v = t.view();
  return v.data() + (at[0] * Index(v.extent(3)) + at[1]) * Index(v.extent(4)) + at[2];
}
// Local index of the first voxel of the problem's output box in y or dy: the owned box starts
// after the low ghosts, the problem's box (a part of it) outOffset further.
template <class T>
Index3 outputStart(const DistTensor<T, Kokkos::CudaSpace>& t, const LocalConvProblem& q) {
  const GhostWidths& g = t.ghosts();
  return {g.lo[0] + q.outOffset[0], g.lo[1] + q.outOffset[1], g.lo[2] + q.outOffset[2]};
}

// cuDNN indexes tensors with int: every extent and stride, and the span of elements a tensor
// covers (the ghost cells between its rows included), must stay below 2^31.
bool fitsCudnnIndexing(const Dims5& dims, const Dims5& strides) {
  Index span = 1;
  for (int i = 0; i < 5; ++i) {
    if (dims[i] > INT_MAX || strides[i] > INT_MAX) return false;
    span += (dims[i] - 1) * strides[i];
  }
  return span <= INT_MAX;
}

// The layouts of a pass's two activation operands: the strides of the arrays around the input
// window (x or dx) and around the output box (y or dy).
struct Layouts {
  Dims5 in{}, out{};
  bool operator==(const Layouts& o) const { return in == o.in && out == o.out; }
};

// One pass's descriptors and algorithm, for one pair of layouts.
struct Pass {
  explicit Pass(const std::string& layer) : in(layer), out(layer) {}
  Layouts layouts;    // what `in` and `out` describe (all zero until chosen)
  Index samples = 0;  // per cuDNN call: the batch, or one when the batch is too large to index
  TensorDesc in, out;
  int algorithm = -1;
  std::size_t workspace = 0;
  std::string name;  // of the algorithm, for describe()
};

struct Choice {
  int algorithm;
  std::size_t workspace;
};

// The best of cuDNN's heuristic candidates (listed best first) that runs the problem as asked:
// supported for these descriptors, no tensor-core math (TF32 rounds float operands to 10
// mantissa bits; the convolution descriptor asks for FMA math), and a workspace within
// maxWorkspaceBytes. The workspace is asked for the descriptors as set, which is also the
// check that the algorithm runs under FMA math.
template <class Perf, class WorkspaceOf>
std::optional<Choice> bestCandidate(const std::vector<Perf>& candidates, WorkspaceOf workspaceOf) {
  for (const Perf& c : candidates) {
    if (c.status != CUDNN_STATUS_SUCCESS || c.mathType == CUDNN_TENSOR_OP_MATH ||
        c.mathType == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION)
      continue;
    std::size_t bytes = 0;
    if (workspaceOf(c.algo, bytes) == CUDNN_STATUS_SUCCESS && bytes <= maxWorkspaceBytes)
      return Choice{int(c.algo), bytes};
  }
  return std::nullopt;
}

template <std::size_t N>
const char* nameOf(const std::array<const char*, N>& names, int algorithm) {
  return algorithm >= 0 && std::size_t(algorithm) < N ? names[algorithm] : "unknown";
}
constexpr std::array<const char*, 8> forwardNames{
    "IMPLICIT_GEMM", "IMPLICIT_PRECOMP_GEMM", "GEMM", "DIRECT", "FFT", "FFT_TILING",
    "WINOGRAD",      "WINOGRAD_NONFUSED"};
constexpr std::array<const char*, 6> backwardDataNames{
    "ALGO_0", "ALGO_1", "FFT", "FFT_TILING", "WINOGRAD", "WINOGRAD_NONFUSED"};
constexpr std::array<const char*, 7> backwardFilterNames{
    "ALGO_0", "ALGO_1", "FFT", "ALGO_3", "WINOGRAD", "WINOGRAD_NONFUSED", "FFT_TILING"};

}  // namespace

template <class T>
struct CudnnConvolution<T>::State {
  static constexpr cudnnDataType_t dataType =
      std::is_same_v<T, float> ? CUDNN_DATA_FLOAT : CUDNN_DATA_DOUBLE;

  LocalConvProblem q;
  cudnnHandle_t handle;
  FilterDesc filter;  // [Cout, Cin, k, k, k], PyTorch's order
  ConvDesc conv;      // padding 0 (the ghosts hold it), the layer's stride, cross-correlation
  TensorDesc bias;    // [1, Cout, 1, 1, 1]
  Pass forward, backwardData, backwardWeights;

  explicit State(const LocalConvProblem& problem)
      : q(problem),
        handle(CudnnContext::instance().handle(problem.layer)),
        filter(q.layer),
        conv(q.layer),
        bias(q.layer),
        forward(q.layer),
        backwardData(q.layer),
        backwardWeights(q.layer) {
    const int k = int(q.kernel), s = int(q.stride);
    const int weightDims[5] = {int(q.cout), int(q.cin), k, k, k};
    check(cudnnSetFilterNdDescriptor(filter, dataType, CUDNN_TENSOR_NCHW, 5, weightDims), q.layer,
          "cudnnSetFilterNdDescriptor");
    const int padding[3] = {0, 0, 0}, strides[3] = {s, s, s}, dilation[3] = {1, 1, 1};
    check(cudnnSetConvolutionNdDescriptor(conv, 3, padding, strides, dilation,
                                          CUDNN_CROSS_CORRELATION, dataType),
          q.layer, "cudnnSetConvolutionNdDescriptor");
    check(cudnnSetConvolutionMathType(conv, CUDNN_FMA_MATH), q.layer,
          "cudnnSetConvolutionMathType");
    const int biasDims[5] = {1, int(q.cout), 1, 1, 1}, biasStrides[5] = {int(q.cout), 1, 1, 1, 1};
    check(cudnnSetTensorNdDescriptor(bias, dataType, 5, biasDims, biasStrides), q.layer,
          "cudnnSetTensorNdDescriptor");
  }

  // Sets `p`'s tensor descriptors for layouts `l`: the whole batch per call when cuDNN can
  // index it, else one sample per call.
  void describeOperands(Pass& p, const Layouts& l) {
    Dims5 in{q.batch, q.cin, q.windowExtent(0), q.windowExtent(1), q.windowExtent(2)};
    Dims5 out{q.batch, q.cout, q.outExtents[0], q.outExtents[1], q.outExtents[2]};
    auto fits = [&] { return fitsCudnnIndexing(in, l.in) && fitsCudnnIndexing(out, l.out); };
    if (!fits()) in[0] = out[0] = 1;
    if (!fits())
      fail(q.layer, ": one sample's local box (", q.cin, " channels in, ", q.cout, " out, output ",
           toString(q.outExtents),
           ") spans 2^31 elements or more, beyond what cuDNN indexes; "
           "use more ranks per sample or another convolution engine");
    p.samples = in[0];
    auto set = [&](TensorDesc& d, const Dims5& dims, const Dims5& strides) {
      int di[5], si[5];
      for (int i = 0; i < 5; ++i) {
        di[i] = int(dims[i]);
        si[i] = int(strides[i]);
      }
      check(cudnnSetTensorNdDescriptor(d, dataType, 5, di, si), q.layer,
            "cudnnSetTensorNdDescriptor");
    };
    set(p.in, in, l.in);
    set(p.out, out, l.out);
    p.layouts = l;
  }

  template <std::size_t N>
  void take(Pass& p, const char* pass, const std::optional<Choice>& c,
            const std::array<const char*, N>& names) {
    if (!c)
      fail(q.layer, ": cuDNN offers no ", pass, " algorithm for this ", toString(precisionOf<T>()),
           " layer (", q.cin, " -> ", q.cout, " channels, kernel ", q.kernel, ", stride ", q.stride,
           ", output ", toString(q.outExtents), ") with FMA math and at most ",
           maxWorkspaceBytes >> 20, " MiB of workspace");
    p.algorithm = c->algorithm;
    p.workspace = c->workspace;
    p.name = nameOf(names, c->algorithm);
    CudnnContext::instance().reserve(p.workspace);
  }

  template <class Perf, class GetCount, class GetCandidates>
  std::vector<Perf> candidates(GetCount getCount, GetCandidates get, const char* call) {
    int count = 0;
    check(getCount(handle, &count), q.layer, call);
    std::vector<Perf> c(std::size_t(std::max(count, 0)));
    check(get(count, &count, c.data()), q.layer, call);
    c.resize(std::size_t(count));
    return c;
  }

  void chooseForward(const Layouts& l) {
    Pass& p = forward;
    describeOperands(p, l);
    const auto c = candidates<cudnnConvolutionFwdAlgoPerf_t>(
        cudnnGetConvolutionForwardAlgorithmMaxCount,
        [&](int n, int* got, cudnnConvolutionFwdAlgoPerf_t* r) {
          return cudnnGetConvolutionForwardAlgorithm_v7(handle, p.in, filter, conv, p.out, n, got,
                                                        r);
        },
        "cudnnGetConvolutionForwardAlgorithm_v7");
    take(p, "forward",
         bestCandidate(c,
                       [&](cudnnConvolutionFwdAlgo_t a, std::size_t& bytes) {
                         return cudnnGetConvolutionForwardWorkspaceSize(handle, p.in, filter, conv,
                                                                        p.out, a, &bytes);
                       }),
         forwardNames);
  }

  void chooseBackwardData(const Layouts& l) {
    Pass& p = backwardData;
    describeOperands(p, l);
    const auto c = candidates<cudnnConvolutionBwdDataAlgoPerf_t>(
        cudnnGetConvolutionBackwardDataAlgorithmMaxCount,
        [&](int n, int* got, cudnnConvolutionBwdDataAlgoPerf_t* r) {
          return cudnnGetConvolutionBackwardDataAlgorithm_v7(handle, filter, p.out, conv, p.in, n,
                                                             got, r);
        },
        "cudnnGetConvolutionBackwardDataAlgorithm_v7");
    take(p, "backward-data",
         bestCandidate(c,
                       [&](cudnnConvolutionBwdDataAlgo_t a, std::size_t& bytes) {
                         return cudnnGetConvolutionBackwardDataWorkspaceSize(handle, filter, p.out,
                                                                             conv, p.in, a, &bytes);
                       }),
         backwardDataNames);
  }

  void chooseBackwardWeights(const Layouts& l) {
    Pass& p = backwardWeights;
    describeOperands(p, l);
    const auto c = candidates<cudnnConvolutionBwdFilterAlgoPerf_t>(
        cudnnGetConvolutionBackwardFilterAlgorithmMaxCount,
        [&](int n, int* got, cudnnConvolutionBwdFilterAlgoPerf_t* r) {
          return cudnnGetConvolutionBackwardFilterAlgorithm_v7(handle, p.in, p.out, conv, filter, n,
                                                               got, r);
        },
        "cudnnGetConvolutionBackwardFilterAlgorithm_v7");
    take(p, "backward-weights",
         bestCandidate(c,
                       [&](cudnnConvolutionBwdFilterAlgo_t a, std::size_t& bytes) {
                         return cudnnGetConvolutionBackwardFilterWorkspaceSize(
                             handle, p.in, p.out, conv, filter, a, &bytes);
                       }),
         backwardFilterNames);
  }
};

template <class T>
CudnnConvolution<T>::CudnnConvolution(const LocalConvProblem& problem) : problem_(problem) {
  if (problem.emptyOutput()) return;  // nothing to compute on this rank
  s_ = std::make_unique<State>(problem_);
  // The layouts the layer hands over: x and dx with the layer's input ghosts, y and dy without.
  const Layouts expected{packedStrides(problem_.cin, problem_.inLocalExtents),
                         packedStrides(problem_.cout, problem_.outExtents)};
  s_->chooseForward(expected);
  s_->chooseBackwardData(expected);
  s_->chooseBackwardWeights(expected);
}

template <class T>
CudnnConvolution<T>::~CudnnConvolution() = default;

template <class T>
std::string CudnnConvolution<T>::describe() const {
  if (!s_) return "cudnn (empty box on this rank)";
  const State& S = *s_;
  const std::size_t workspace =
      std::max({S.forward.workspace, S.backwardData.workspace, S.backwardWeights.workspace});
  const bool oneByOne = S.forward.samples < problem_.batch ||
                        S.backwardData.samples < problem_.batch ||
                        S.backwardWeights.samples < problem_.batch;
  return Impl::concat("cudnn (forward ", S.forward.name, ", backward-data ", S.backwardData.name,
                      ", backward-weights ", S.backwardWeights.name, "; workspace ",
                      (workspace + (1 << 20) - 1) >> 20, " MiB",
                      oneByOne ? "; one sample per call" : "", ")");
}

template <class T>
void CudnnConvolution<T>::forward(const execution_space& exec, const tensor_type& x,
                                  const values_type& w, const values_type& bias,
                                  const tensor_type& y) {
  const auto& q = problem_;
  if (q.emptyOutput()) return;
  State& S = *s_;
  const Layouts l{stridesOf(x), stridesOf(y)};
  if (!(S.forward.layouts == l)) S.chooseForward(l);
  const Pass& p = S.forward;
  auto& context = CudnnContext::instance();
  const cudnnHandle_t h = context.on(exec, q.layer);
  const T one = 1, zero = 0;
  const T* xw = windowStart(x, q.inOffset);
  T* yw = windowStart(y, outputStart(y, q));
  for (Index n = 0; n < q.batch; n += p.samples) {
    T* yn = yw + n * l.out[0];
    check(cudnnConvolutionForward(h, &one, p.in, xw + n * l.in[0], S.filter, w.data(), S.conv,
                                  cudnnConvolutionFwdAlgo_t(p.algorithm), context.workspace(),
                                  p.workspace, &zero, p.out, yn),
          q.layer, "cudnnConvolutionForward");
    if (q.bias)
      check(cudnnAddTensor(h, &one, S.bias, bias.data(), &one, p.out, yn), q.layer,
            "cudnnAddTensor (bias)");
  }
}

template <class T>
void CudnnConvolution<T>::backwardData(const execution_space& exec, const values_type& w,
                                       const tensor_type& dy, const tensor_type& dx) {
  const auto& q = problem_;
  // Cells of dx outside the input window receive nothing: zero them (all of dx when this rank
  // has no output). cuDNN then writes the window (beta 0). A caller that sums several parts
  // into dx (accumulateDx) has zeroed it: cuDNN adds (beta 1).
  if (!q.accumulateDx && !q.windowIsWholeArray(dx.localExtents()))
    Kokkos::deep_copy(exec, dx.view(), T(0));
  if (q.emptyOutput()) return;
  State& S = *s_;
  const Layouts l{stridesOf(dx), stridesOf(dy)};
  if (!(S.backwardData.layouts == l)) S.chooseBackwardData(l);
  const Pass& p = S.backwardData;
  auto& context = CudnnContext::instance();
  const cudnnHandle_t h = context.on(exec, q.layer);
  const T one = 1, zero = 0;
  const T& beta = q.accumulateDx ? one : zero;
  const T* dyw = windowStart(dy, outputStart(dy, q));
  T* dxw = windowStart(dx, q.inOffset);
  for (Index n = 0; n < q.batch; n += p.samples)
    check(cudnnConvolutionBackwardData(h, &one, S.filter, w.data(), p.out, dyw + n * l.out[0],
                                       S.conv, cudnnConvolutionBwdDataAlgo_t(p.algorithm),
                                       context.workspace(), p.workspace, &beta, p.in,
                                       dxw + n * l.in[0]),
          q.layer, "cudnnConvolutionBackwardData");
}

template <class T>
void CudnnConvolution<T>::backwardWeights(const execution_space& exec, const tensor_type& x,
                                          const tensor_type& dy, const values_type& dw,
                                          const values_type& db) {
  const auto& q = problem_;
  if (q.emptyOutput()) return;
  State& S = *s_;
  const Layouts l{stridesOf(x), stridesOf(dy)};
  if (!(S.backwardWeights.layouts == l)) S.chooseBackwardWeights(l);
  const Pass& p = S.backwardWeights;
  auto& context = CudnnContext::instance();
  const cudnnHandle_t h = context.on(exec, q.layer);
  const T one = 1;  // beta 1: dw and db accumulate, as the gradient contract asks
  const T* xw = windowStart(x, q.inOffset);
  const T* dyw = windowStart(dy, outputStart(dy, q));
  for (Index n = 0; n < q.batch; n += p.samples) {
    const T* dyn = dyw + n * l.out[0];
    check(
        cudnnConvolutionBackwardFilter(h, &one, p.in, xw + n * l.in[0], p.out, dyn, S.conv,
                                       cudnnConvolutionBwdFilterAlgo_t(p.algorithm),
                                       context.workspace(), p.workspace, &one, S.filter, dw.data()),
        q.layer, "cudnnConvolutionBackwardFilter");
    if (q.bias)
      check(cudnnConvolutionBackwardBias(h, &one, p.out, dyn, &one, S.bias, db.data()), q.layer,
            "cudnnConvolutionBackwardBias");
  }
}

template class CudnnConvolution<float>;
template class CudnnConvolution<double>;

}  // namespace hybrid3d::Impl
