// The onednn convolution engine (include/hybrid3d/layers/impl/OneDnnConvolution.hpp), written
// against oneDNN 2.x (Debian 12 ships 2.6.3). Compiled only when HYBRID3D_ENABLE_ONEDNN is on.
#include <hybrid3d/layers/impl/OneDnnConvolution.hpp>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include <omp.h>
#include <oneapi/dnnl/dnnl.hpp>

#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/core/VendorCall.hpp>
#include <hybrid3d/layers/impl/HostWorkspace.hpp>
#include <hybrid3d/layers/impl/OneDnnWorkspace.hpp>

namespace hybrid3d::Impl {
namespace {

using dnnl::memory;
using Dims = memory::dims;

// The arguments of one primitive call, in the C API's plain array: oneDNN's C++ execute()
// takes a std::unordered_map and copies it into a std::vector on every call, heap allocations
// in every pass of every step. What oneDNN allocates inside the call is its own
// (core/VendorCall.hpp marks it for the allocation counters).
class ExecArgs {
public:
  void add(int key, const memory& m) { args_[n_++] = {key, m.get()}; }
  void execute(const dnnl::primitive& p, const dnnl::stream& stream, const char* what) const {
    VendorCallScope vendor;
    if (dnnl_primitive_execute(p.get(), stream.get(), n_, args_) != dnnl_success)
      fail("onednn convolution: ", what, " failed");
  }

private:
  dnnl_exec_arg_t args_[6] = {};
  int n_ = 0;
};

// oneDNN threads through OpenMP. With one rank per core (the Serial backend) it must use one
// thread, with the OpenMP backend the threads Kokkos uses, never one per core in every rank.
int hostThreads() { return Kokkos::DefaultHostExecutionSpace().concurrency(); }

// A window of a ghosted NCDHW local array as a strided oneDNN memory descriptor, and where it
// starts. `extents` are the window's spatial extents, `at` its first local index. Built through
// the C API from plain arrays: memory::desc's C++ constructor takes std::vectors, two heap
// allocations per operand per pass.
memory::desc windowDesc(const DistTensor<float, Kokkos::HostSpace>& t, const Index3& extents) {
  const auto& v = t.view();
  const Index w = Index(v.extent(4)), hw = Index(v.extent(3)) * w, dhw = Index(v.extent(2)) * hw;
  const dnnl_dims_t dims{Index(v.extent(0)), Index(v.extent(1)), extents[0], extents[1],
                         extents[2]};
  const dnnl_dims_t strides{Index(v.extent(1)) * dhw, dhw, hw, w, 1};
  dnnl_memory_desc_t d;
  if (dnnl_memory_desc_init_by_strides(&d, 5, dims, dnnl_f32, strides) != dnnl_success)
    fail("onednn convolution: cannot describe a ", toString(extents), " window");
  return memory::desc(d);
}
float* windowStart(const DistTensor<float, Kokkos::HostSpace>& t, const Index3& at) {
  const auto& v = t.view();
  return v.data() + (at[0] * Index(v.extent(3)) + at[1]) * Index(v.extent(4)) + at[2];
}
// Local index of the first voxel of the problem's output box in y or dy: the owned box starts
// after the low ghosts, the problem's box (a part of it) outOffset further.
Index3 outputStart(const DistTensor<float, Kokkos::HostSpace>& t, const LocalConvProblem& q) {
  const GhostWidths& g = t.ghosts();
  return {g.lo[0] + q.outOffset[0], g.lo[1] + q.outOffset[1], g.lo[2] + q.outOffset[2]};
}

// How an operand reaches the primitive.
enum class Flow {
  In,         // user -> primitive
  Out,        // primitive -> user (overwrites)
  Accumulate  // primitive -> user, added to what the user array holds
};

// One operand of one primitive: the user's array (a strided window of a ghosted local array,
// or a dense parameter), and its copy in the primitive's preferred layout, in the shared
// workspace, when the two layouts differ (or the result must be added).
struct Operand {
  Flow flow = Flow::In;
  memory::desc inner;      // the layout the primitive wants
  std::size_t offset = 0;  // of the copy in the shared workspace
  memory::desc user;       // the user layout the reorder below was built for
  memory userMem, innerMem;
  dnnl::reorder copy;   // user -> inner (In) or inner -> user (Out, Accumulate)
  bool direct = false;  // the primitive reads or writes the user array itself

  // The memory the primitive executes on.
  const memory& arg() const { return direct ? userMem : innerMem; }
};

Operand operand(Flow flow, const memory::desc& inner) {
  Operand op;
  op.flow = flow;
  op.inner = inner;
  return op;
}

}  // namespace

// The three passes' primitive descriptors for one activation layout.
struct PassDescs {
  dnnl::convolution_forward::primitive_desc forward;
  dnnl::convolution_backward_data::primitive_desc backwardData;
  dnnl::convolution_backward_weights::primitive_desc backwardWeights;
  // When set, backward-data runs as this forward convolution instead of `backwardData`
  // (backwardDataAsForward below).
  dnnl::convolution_forward::primitive_desc backwardDataForward;
};

// Backward-data of a stride-1 convolution is itself a forward convolution: dx (the whole input
// window) = dy, padded with kernel - 1 zeros, convolved with the weights transposed (in <-> out
// channels) and flipped in every spatial dimension. oneDNN's backward-data kernel is slow where
// dx has few channels on a large box, its forward kernels are not. Measured with oneDNN 2.6.3
// alone (one core, AMD EPYC with AVX-512, primitive time only: backward-data kernel -> forward
// formulation; the operand copies around both are the same size):
//   16->32 on 64^3: 55.8 -> 43.8 ms, on 32^3: 7.2 -> 5.8 ms; 32->64 on 32^3: 22.0 -> 19.9 ms;
//   1->32 and 4->16 on 64^3: 1.35x and 1.12x faster;
// and the other way round with 64 input channels or more, or boxes under 32^3 (64->64 on 32^3
// 0.97x, 16->32 on 16^3 0.85x, 256->256 on 4^3 0.82x).
constexpr Index backwardAsForwardMaxInChannels = 32;
constexpr Index backwardAsForwardMinOutputVoxels = 32 * 32 * 32;
bool backwardDataAsForward(const LocalConvProblem& q) {
  return q.stride == 1 && q.cin <= backwardAsForwardMaxInChannels &&
         q.outExtents[0] * q.outExtents[1] * q.outExtents[2] >= backwardAsForwardMinOutputVoxels;
}

// The forward convolution that computes backward-data (above), dy and dx in `activations`.
dnnl::convolution_forward::primitive_desc describeBackwardDataAsForward(
    const dnnl::engine& engine, const LocalConvProblem& q, memory::format_tag activations) {
  const auto f32 = memory::data_type::f32;
  const memory::desc dy(Dims{q.batch, q.cout, q.outExtents[0], q.outExtents[1], q.outExtents[2]},
                        f32, activations);
  const memory::desc dx(
      Dims{q.batch, q.cin, q.windowExtent(0), q.windowExtent(1), q.windowExtent(2)}, f32,
      activations);
  const memory::desc flipped(Dims{q.cin, q.cout, q.kernel, q.kernel, q.kernel}, f32,
                             memory::format_tag::any);
  const Dims strides{1, 1, 1}, padding{q.kernel - 1, q.kernel - 1, q.kernel - 1};
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return {{dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct, dy, flipped, dx,
           strides, padding, padding},
          attr,
          engine};
}

// w' [Cin, Cout, k, k, k] := w [Cout, Cin, k - 1 - ., k - 1 - ., k - 1 - .] (both dense, PyTorch's
// order): the weights of the forward formulation of backward-data.
void flipTransposed(const LocalConvProblem& q, const float* w, float* flipped) {
  const Index k = q.kernel, k3 = k * k * k;
  for (Index o = 0; o < q.cout; ++o)
    for (Index i = 0; i < q.cin; ++i) {
      const float* from = w + (o * q.cin + i) * k3;
      float* to = flipped + (i * q.cout + o) * k3;
      for (Index t = 0; t < k3; ++t) to[t] = from[k3 - 1 - t];
    }
}

// Padding 0: the ghosts hold the padding. Weights in oneDNN's choice of layout (reordered from
// PyTorch's each pass; they are small).
PassDescs describePasses(const dnnl::engine& engine, const LocalConvProblem& q,
                         memory::format_tag activations) {
  const auto f32 = memory::data_type::f32;
  const memory::desc src(
      Dims{q.batch, q.cin, q.windowExtent(0), q.windowExtent(1), q.windowExtent(2)}, f32,
      activations);
  const memory::desc dst(Dims{q.batch, q.cout, q.outExtents[0], q.outExtents[1], q.outExtents[2]},
                         f32, activations);
  const memory::desc wei(Dims{q.cout, q.cin, q.kernel, q.kernel, q.kernel}, f32,
                         memory::format_tag::any);
  const memory::desc bias =
      q.bias ? memory::desc(Dims{q.cout}, f32, memory::format_tag::a) : memory::desc();
  const Dims strides{q.stride, q.stride, q.stride}, noPadding{0, 0, 0};
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  const auto algorithm = dnnl::algorithm::convolution_direct;
  const dnnl::convolution_forward::primitive_desc fwd(
      {dnnl::prop_kind::forward_training, algorithm, src, wei, bias, dst, strides, noPadding,
       noPadding},
      attr, engine);
  return {fwd,
          {{algorithm, src, wei, dst, strides, noPadding, noPadding}, attr, engine, fwd},
          {{algorithm, src, wei, bias, dst, strides, noPadding, noPadding}, attr, engine, fwd},
          {}};
}

// How good the kernel oneDNN picked is, from its name: JIT kernels of the widest vector unit
// first, then narrower ones, its generic gemm-based one, the reference one last.
int kernelRank(const char* implementation) {
  const std::string s(implementation);
  if (s.find("ref") != std::string::npos) return 0;
  if (s.find("gemm") != std::string::npos) return 1;
  if (s.find("avx512") != std::string::npos) return 4;
  if (s.find("avx2") != std::string::npos) return 3;
  return 2;
}

// `b` when its kernel ranks higher, else `a` (oneDNN's own layout choice wins ties).
template <class PD>
const PD& better(const PD& a, const PD& b) {
  return kernelRank(b.impl_info_str()) > kernelRank(a.impl_info_str()) ? b : a;
}

// Every operand of the three passes and where its copy and each pass's scratchpad lie in the
// shared workspace: what the engine reserves, and what a dry run asks for (oneDnnWorkspaceBytes).
struct PassOperands {
  Operand fwdSrc, fwdWeights, fwdBias, fwdDst;
  Operand bwdDiffDst, bwdWeights, bwdDiffSrc;
  Operand bwdFlippedWeights;  // dense, when backward-data runs as a forward convolution
  Operand wgtSrc, wgtDiffDst, wgtDiffWeights, wgtDiffBias;
  std::size_t fwdScratch = 0, bwdScratch = 0, wgtScratch = 0;

  // Gives every operand its layout and offset for these passes; returns the workspace the
  // largest pass needs.
  std::size_t layOut(const PassDescs& passes, const LocalConvProblem& q) {
    const auto& fwd = passes.forward;
    const auto& bwd = passes.backwardData;
    const auto& bwdAsFwd = passes.backwardDataForward;
    const auto& wgt = passes.backwardWeights;
    fwdSrc = operand(Flow::In, fwd.src_desc());
    fwdWeights = operand(Flow::In, fwd.weights_desc());
    fwdBias = operand(Flow::In, q.bias ? fwd.bias_desc() : memory::desc());
    fwdDst = operand(Flow::Out, fwd.dst_desc());
    const Flow dxFlow = q.accumulateDx ? Flow::Accumulate : Flow::Out;
    if (bwdAsFwd) {
      bwdDiffDst = operand(Flow::In, bwdAsFwd.src_desc());
      bwdWeights = operand(Flow::In, bwdAsFwd.weights_desc());
      bwdDiffSrc = operand(dxFlow, bwdAsFwd.dst_desc());
      bwdFlippedWeights =
          operand(Flow::In, memory::desc(Dims{q.cin, q.cout, q.kernel, q.kernel, q.kernel},
                                         memory::data_type::f32, memory::format_tag::oidhw));
    } else {
      bwdDiffDst = operand(Flow::In, bwd.diff_dst_desc());
      bwdWeights = operand(Flow::In, bwd.weights_desc());
      bwdDiffSrc = operand(dxFlow, bwd.diff_src_desc());
    }
    wgtSrc = operand(Flow::In, wgt.src_desc());
    wgtDiffDst = operand(Flow::In, wgt.diff_dst_desc());
    wgtDiffWeights = operand(Flow::Accumulate, wgt.diff_weights_desc());
    wgtDiffBias = operand(Flow::Accumulate, q.bias ? wgt.diff_bias_desc() : memory::desc());
    std::size_t need = 0;
    need = std::max(need, layOutPass({&fwdSrc, &fwdWeights, &fwdBias, &fwdDst},
                                     fwd.scratchpad_desc().get_size(), fwdScratch));
    need = std::max(
        need, bwdAsFwd ? layOutPass({&bwdDiffDst, &bwdFlippedWeights, &bwdWeights, &bwdDiffSrc},
                                    bwdAsFwd.scratchpad_desc().get_size(), bwdScratch)
                       : layOutPass({&bwdDiffDst, &bwdWeights, &bwdDiffSrc},
                                    bwd.scratchpad_desc().get_size(), bwdScratch));
    need = std::max(need, layOutPass({&wgtSrc, &wgtDiffDst, &wgtDiffWeights, &wgtDiffBias},
                                     wgt.scratchpad_desc().get_size(), wgtScratch));
    return need;
  }

  // Lays a pass's operand copies and scratchpad out one after another in the shared workspace;
  // returns the pass's size.
  static std::size_t layOutPass(std::initializer_list<Operand*> ops, std::size_t scratchpad,
                                std::size_t& scratchOffset) {
    auto align = [](std::size_t b) { return (b + 63) / 64 * 64; };
    std::size_t at = 0;
    for (Operand* op : ops) {
      op->offset = at;
      at += align(op->inner.get_size());
    }
    scratchOffset = at;
    return at + align(scratchpad);
  }
};

// The pass descriptors the engine runs for `q`: each pass in the activation layout in which
// oneDNN has the better kernel, its own choice (`any`: blocked channels) unless channels-last
// gets a wider vector kernel, as for conv1's 4 input channels, where backward-weights is an
// AVX2 kernel in the blocked layout and an AVX-512 one channels-last (measured: 4x faster).
struct ChosenPasses {
  PassDescs descs;
  std::string implementations;
};
ChosenPasses choosePasses(const dnnl::engine& engine, const LocalConvProblem& q) {
  const PassDescs blocked = describePasses(engine, q, memory::format_tag::any);
  const PassDescs channelsLast = describePasses(engine, q, memory::format_tag::ndhwc);
  const auto& fwd = better(blocked.forward, channelsLast.forward);
  const auto& bwd = better(blocked.backwardData, channelsLast.backwardData);
  const auto& wgt = better(blocked.backwardWeights, channelsLast.backwardWeights);
  auto name = [](const auto& chosen, const auto& channelsLastDesc) {
    return std::string(chosen.impl_info_str()) +
           (&chosen == &channelsLastDesc ? " channels-last" : "");
  };
  ChosenPasses chosen{{fwd, bwd, wgt, {}}, ""};
  std::string bwdName = name(bwd, channelsLast.backwardData);
  if (backwardDataAsForward(q)) {
    const auto blockedAsFwd = describeBackwardDataAsForward(engine, q, memory::format_tag::any);
    const auto channelsLastAsFwd =
        describeBackwardDataAsForward(engine, q, memory::format_tag::ndhwc);
    const auto& asFwd = better(blockedAsFwd, channelsLastAsFwd);
    chosen.descs.backwardDataForward = asFwd;
    bwdName = name(asFwd, channelsLastAsFwd) + " as a forward convolution";
  }
  chosen.implementations =
      Impl::concat("forward ", name(fwd, channelsLast.forward), ", backward-data ", bwdName,
                   ", backward-weights ", name(wgt, channelsLast.backwardWeights));
  return chosen;
}

struct OneDnnConvolution::Primitives : PassOperands {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
  memory::desc userWeights;  // [Cout, Cin, k, k, k], PyTorch's order
  memory::desc userBias;

  dnnl::convolution_forward forward;
  dnnl::primitive backwardData;  // convolution_backward_data, or forward (backwardDataAsForward)
  bool backwardDataIsForward = false;
  dnnl::convolution_backward_weights backwardWeights;
  std::string implementations;
  memory fwdScratchMem, bwdScratchMem, wgtScratchMem;

  // Points `op` at the user array `data` of layout `user`; rebuilds its reorder when the
  // layout differs from the last call's (a layer sees the same layouts every step).
  void bind(Operand& op, const memory::desc& user, void* data, char* workspace) {
    if (!(user == op.user) || !op.userMem) {
      op.user = user;
      op.userMem = memory(user, engine, data);
      op.innerMem = memory(op.inner, engine, workspace + op.offset);
      op.direct = op.flow != Flow::Accumulate && user == op.inner;
      if (!op.direct) {
        dnnl::primitive_attr attr;
        if (op.flow == Flow::Accumulate) {
          dnnl::post_ops sum;
          sum.append_sum(1.0f);
          attr.set_post_ops(sum);
        }
        const bool in = op.flow == Flow::In;
        op.copy = dnnl::reorder(dnnl::reorder::primitive_desc(engine, in ? user : op.inner, engine,
                                                              in ? op.inner : user, attr));
      }
    }
    op.userMem.set_data_handle(data);
    op.innerMem.set_data_handle(workspace + op.offset);
  }
  void copy(Operand& op) {
    if (op.direct) return;
    const bool in = op.flow == Flow::In;
    ExecArgs args;
    args.add(DNNL_ARG_FROM, in ? op.userMem : op.innerMem);
    args.add(DNNL_ARG_TO, in ? op.innerMem : op.userMem);
    args.execute(op.copy, stream, "a reorder");
  }
};

OneDnnConvolution::OneDnnConvolution(const LocalConvProblem& problem)
    : problem_(problem), p_(std::make_unique<Primitives>()), threads_(hostThreads()) {
  if (problem.emptyOutput()) return;  // nothing to compute on this rank
  auto& P = *p_;
  const auto& q = problem_;
  const auto f32 = memory::data_type::f32;
  P.userWeights = memory::desc(Dims{q.cout, q.cin, q.kernel, q.kernel, q.kernel}, f32,
                               memory::format_tag::oidhw);
  P.userBias = q.bias ? memory::desc(Dims{q.cout}, f32, memory::format_tag::a) : memory::desc();

  try {
    const ChosenPasses chosen = choosePasses(P.engine, q);
    const PassDescs& passes = chosen.descs;
    P.forward = dnnl::convolution_forward(passes.forward);
    P.backwardDataIsForward = bool(passes.backwardDataForward);
    if (P.backwardDataIsForward)
      P.backwardData = dnnl::convolution_forward(passes.backwardDataForward);
    else
      P.backwardData = dnnl::convolution_backward_data(passes.backwardData);
    P.backwardWeights = dnnl::convolution_backward_weights(passes.backwardWeights);
    P.implementations = chosen.implementations;
    HostWorkspace::instance().reserve(P.layOut(passes, q));
    P.fwdScratchMem = memory(passes.forward.scratchpad_desc(), P.engine, nullptr);
    P.bwdScratchMem = memory(P.backwardDataIsForward ? passes.backwardDataForward.scratchpad_desc()
                                                     : passes.backwardData.scratchpad_desc(),
                             P.engine, nullptr);
    P.wgtScratchMem = memory(passes.backwardWeights.scratchpad_desc(), P.engine, nullptr);
  } catch (const dnnl::error& e) {
    fail(q.layer, ": oneDNN refused the convolution (", e.what(), ")");
  }
}

std::size_t oneDnnWorkspaceBytes(const LocalConvProblem& q) {
  if (q.emptyOutput()) return 0;
  try {
    const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
    PassOperands operands;
    return operands.layOut(choosePasses(engine, q).descs, q);
  } catch (const dnnl::error& e) {
    fail(q.layer, ": oneDNN refused the convolution (", e.what(), ")");
  }
}

OneDnnConvolution::~OneDnnConvolution() = default;

std::string OneDnnConvolution::describe() const {
  return problem_.emptyOutput() ? "onednn (empty box on this rank)"
                                : "onednn (" + p_->implementations + ")";
}

void OneDnnConvolution::forward(const execution_space& exec, const tensor_type& x,
                                const values_type& w, const values_type& bias,
                                const tensor_type& y) {
  if (problem_.emptyOutput()) return;
  exec.fence();  // Kokkos kernels (the halo gather) have finished writing x
  omp_set_num_threads(threads_);
  auto& P = *p_;
  const auto& q = problem_;
  char* ws = HostWorkspace::instance().data();
  const Index3 window{q.windowExtent(0), q.windowExtent(1), q.windowExtent(2)};
  P.bind(P.fwdSrc, windowDesc(x, window), windowStart(x, q.inOffset), ws);
  P.bind(P.fwdWeights, P.userWeights, w.data(), ws);
  if (q.bias) P.bind(P.fwdBias, P.userBias, bias.data(), ws);
  P.bind(P.fwdDst, windowDesc(y, q.outExtents), windowStart(y, outputStart(y, q)), ws);
  P.fwdScratchMem.set_data_handle(ws + P.fwdScratch);
  P.copy(P.fwdSrc);
  P.copy(P.fwdWeights);
  if (q.bias) P.copy(P.fwdBias);
  ExecArgs args;
  args.add(DNNL_ARG_SRC, P.fwdSrc.arg());
  args.add(DNNL_ARG_WEIGHTS, P.fwdWeights.arg());
  args.add(DNNL_ARG_DST, P.fwdDst.arg());
  args.add(DNNL_ARG_SCRATCHPAD, P.fwdScratchMem);
  if (q.bias) args.add(DNNL_ARG_BIAS, P.fwdBias.arg());
  args.execute(P.forward, P.stream, "forward");
  P.copy(P.fwdDst);
  P.stream.wait();
}

void OneDnnConvolution::backwardData(const execution_space& exec, const values_type& w,
                                     const tensor_type& dy, const tensor_type& dx) {
  exec.fence();
  const auto& q = problem_;
  const auto v = dx.view();
  const Index3 window{q.windowExtent(0), q.windowExtent(1), q.windowExtent(2)};
  // Cells of dx outside the input window receive nothing: zero them (all of dx when this rank
  // has no output), unless the caller sums several parts into dx.
  if (!q.accumulateDx && !q.windowIsWholeArray(dx.localExtents()))
    std::fill_n(v.data(), v.size(), 0.0f);
  if (q.emptyOutput()) return;
  omp_set_num_threads(threads_);
  auto& P = *p_;
  char* ws = HostWorkspace::instance().data();
  P.bind(P.bwdDiffDst, windowDesc(dy, q.outExtents), windowStart(dy, outputStart(dy, q)), ws);
  if (P.backwardDataIsForward) {
    float* flipped = reinterpret_cast<float*>(ws + P.bwdFlippedWeights.offset);
    flipTransposed(q, w.data(), flipped);
    P.bind(P.bwdWeights, P.bwdFlippedWeights.inner, flipped, ws);
  } else {
    P.bind(P.bwdWeights, P.userWeights, w.data(), ws);
  }
  P.bind(P.bwdDiffSrc, windowDesc(dx, window), windowStart(dx, q.inOffset), ws);
  P.bwdScratchMem.set_data_handle(ws + P.bwdScratch);
  P.copy(P.bwdDiffDst);
  P.copy(P.bwdWeights);
  ExecArgs args;
  const bool asForward = P.backwardDataIsForward;
  args.add(asForward ? DNNL_ARG_SRC : DNNL_ARG_DIFF_DST, P.bwdDiffDst.arg());
  args.add(DNNL_ARG_WEIGHTS, P.bwdWeights.arg());
  args.add(asForward ? DNNL_ARG_DST : DNNL_ARG_DIFF_SRC, P.bwdDiffSrc.arg());
  args.add(DNNL_ARG_SCRATCHPAD, P.bwdScratchMem);
  args.execute(P.backwardData, P.stream, "backward-data");
  P.copy(P.bwdDiffSrc);
  P.stream.wait();
}

void OneDnnConvolution::backwardWeights(const execution_space& exec, const tensor_type& x,
                                        const tensor_type& dy, const values_type& dw,
                                        const values_type& db) {
  if (problem_.emptyOutput()) return;
  exec.fence();
  omp_set_num_threads(threads_);
  auto& P = *p_;
  const auto& q = problem_;
  char* ws = HostWorkspace::instance().data();
  const Index3 window{q.windowExtent(0), q.windowExtent(1), q.windowExtent(2)};
  P.bind(P.wgtSrc, windowDesc(x, window), windowStart(x, q.inOffset), ws);
  P.bind(P.wgtDiffDst, windowDesc(dy, q.outExtents), windowStart(dy, outputStart(dy, q)), ws);
  P.bind(P.wgtDiffWeights, P.userWeights, dw.data(), ws);
  if (q.bias) P.bind(P.wgtDiffBias, P.userBias, db.data(), ws);
  P.wgtScratchMem.set_data_handle(ws + P.wgtScratch);
  P.copy(P.wgtSrc);
  P.copy(P.wgtDiffDst);
  ExecArgs args;
  args.add(DNNL_ARG_SRC, P.wgtSrc.arg());
  args.add(DNNL_ARG_DIFF_DST, P.wgtDiffDst.arg());
  args.add(DNNL_ARG_DIFF_WEIGHTS, P.wgtDiffWeights.arg());
  if (q.bias) args.add(DNNL_ARG_DIFF_BIAS, P.wgtDiffBias.arg());
  args.add(DNNL_ARG_SCRATCHPAD, P.wgtScratchMem);
  args.execute(P.backwardWeights, P.stream, "backward-weights");
  P.copy(P.wgtDiffWeights);  // dw += the pass's result
  if (q.bias) P.copy(P.wgtDiffBias);
  P.stream.wait();
}

}  // namespace hybrid3d::Impl
