// The onednn convolution engine (include/hybrid3d/engines/impl/OneDnnConvolution.hpp), written
// against oneDNN 2.x (Debian 12 ships 2.6.3). Compiled only when HYBRID3D_ENABLE_ONEDNN is on;
// instantiated for float, bfloat16 and float16 activations.
#include <hybrid3d/engines/impl/OneDnnConvolution.hpp>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>
#include <type_traits>
#include <utility>

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#endif

#include <omp.h>
#include <oneapi/dnnl/dnnl.hpp>

#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/core/Precision.hpp>
#include <hybrid3d/core/VendorCall.hpp>
#include <hybrid3d/engines/impl/HostWorkspace.hpp>
#include <hybrid3d/engines/impl/OneDnnWorkspace.hpp>

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

// oneDNN's name for an activation storage type.
memory::data_type dataType(Precision p) {
  switch (p) {
    case Precision::BFloat16:
      return memory::data_type::bf16;
    case Precision::Half:
      return memory::data_type::f16;
    case Precision::Float:
      break;
    case Precision::Double:
      fail("onednn convolution: double is not a oneDNN data type");
  }
  return memory::data_type::f32;
}
const char* typeName(memory::data_type t) {
  return t == memory::data_type::bf16 ? "bf16" : t == memory::data_type::f16 ? "f16" : "f32";
}

// A window of a ghosted NCDHW local array as a strided oneDNN memory descriptor, and where it
// starts. `extents` are the window's spatial extents, `at` its first local index. Built through
// the C API from plain arrays: memory::desc's C++ constructor takes std::vectors, two heap
// allocations per operand per pass.
template <class T>
memory::desc windowDesc(const DistTensor<T, Kokkos::HostSpace>& t, const Index3& extents) {
  const auto& v = t.view();
  const Index w = Index(v.extent(4)), hw = Index(v.extent(3)) * w, dhw = Index(v.extent(2)) * hw;
  const dnnl_dims_t dims{Index(v.extent(0)), Index(v.extent(1)), extents[0], extents[1],
                         extents[2]};
  const dnnl_dims_t strides{Index(v.extent(1)) * dhw, dhw, hw, w, 1};
  dnnl_memory_desc_t d;
  const auto type = static_cast<dnnl_data_type_t>(dataType(precisionOf<T>()));
  if (dnnl_memory_desc_init_by_strides(&d, 5, dims, type, strides) != dnnl_success)
    fail("onednn convolution: cannot describe a ", toString(extents), " window");
  return memory::desc(d);
}
template <class T>
T* windowStart(const DistTensor<T, Kokkos::HostSpace>& t, const Index3& at) {
  const auto& v = t.view();
  return v.data() + (at[0] * Index(v.extent(3)) + at[1]) * Index(v.extent(4)) + at[2];
}
// Local index of the first voxel of the problem's output box in y or dy: the owned box starts
// after the low ghosts, the problem's box (a part of it) outOffset further.
template <class T>
Index3 outputStart(const DistTensor<T, Kokkos::HostSpace>& t, const LocalConvProblem& q) {
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
  // 16-bit activations, f32 primitive: the user array is converted to (and from) a dense f32
  // copy of the window, `stage`, by our own loops, and oneDNN's reorders run f32 -> f32 (its
  // JIT ones; it converts 16-bit types in a generic C++ reorder, measured many times slower
  // than the whole f32 pass: docs/performance-notes.md, "oneDNN engine"). Where the primitive's
  // layout is plain, it reads or writes the stage itself. Activation operands only (the weights are
  // float).
  bool staged = false;
  memory::desc stage;
  std::size_t stageOffset = 0;

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
// dx has few channels on a large box, its forward kernels are not. Timed with oneDNN 2.6.3
// alone (primitive time only; the operand copies around both are the same size), the forward
// formulation was faster up to 32 input channels on boxes of 32^3 and more, and slower with 64
// input channels or more, or on smaller boxes (docs/performance-notes.md, "oneDNN engine").
constexpr Index backwardAsForwardMaxInChannels = 32;
constexpr Index backwardAsForwardMinOutputVoxels = 32 * 32 * 32;
bool backwardDataAsForward(const LocalConvProblem& q) {
  return q.stride == 1 && q.cin <= backwardAsForwardMaxInChannels &&
         q.outExtents[0] * q.outExtents[1] * q.outExtents[2] >= backwardAsForwardMinOutputVoxels;
}

// The forward convolution that computes backward-data (above), dy and dx in `activations`, of
// type `type` (the weights too: f32, or the 16-bit type whose primitive accumulates in f32).
dnnl::convolution_forward::primitive_desc describeBackwardDataAsForward(
    const dnnl::engine& engine, const LocalConvProblem& q, memory::format_tag activations,
    memory::data_type type) {
  const memory::desc dy(Dims{q.batch, q.cout, q.outExtents[0], q.outExtents[1], q.outExtents[2]},
                        type, activations);
  const memory::desc dx(
      Dims{q.batch, q.cin, q.windowExtent(0), q.windowExtent(1), q.windowExtent(2)}, type,
      activations);
  const memory::desc flipped(Dims{q.cin, q.cout, q.kernel, q.kernel, q.kernel}, type,
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
// PyTorch's each pass; they are small). Activations and weights of type `type`: f32, or a
// 16-bit type, whose primitives accumulate in f32; the bias, the weight and bias gradients are
// f32 whatever the type (oneDNN's bf16 convolutions take them so).
PassDescs describePasses(const dnnl::engine& engine, const LocalConvProblem& q,
                         memory::format_tag activations, memory::data_type type) {
  const auto f32 = memory::data_type::f32;
  const memory::desc src(
      Dims{q.batch, q.cin, q.windowExtent(0), q.windowExtent(1), q.windowExtent(2)}, type,
      activations);
  const memory::desc dst(Dims{q.batch, q.cout, q.outExtents[0], q.outExtents[1], q.outExtents[2]},
                         type, activations);
  const Dims weightDims{q.cout, q.cin, q.kernel, q.kernel, q.kernel};
  const memory::desc wei(weightDims, type, memory::format_tag::any);
  const memory::desc diffWei(weightDims, f32, memory::format_tag::any);
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
          {{algorithm, src, diffWei, bias, dst, strides, noPadding, noPadding}, attr, engine, fwd},
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

// Whether oneDNN gave its reference implementation (no kernel for that type on this CPU).
bool isReference(const char* implementation) {
  return std::string(implementation).rfind("ref", 0) == 0;
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
      // (the float weights flipped; bwdWeights reorders them to the primitive's type)
    } else {
      bwdDiffDst = operand(Flow::In, bwd.diff_dst_desc());
      bwdWeights = operand(Flow::In, bwd.weights_desc());
      bwdDiffSrc = operand(dxFlow, bwd.diff_src_desc());
    }
    wgtSrc = operand(Flow::In, wgt.src_desc());
    wgtDiffDst = operand(Flow::In, wgt.diff_dst_desc());
    wgtDiffWeights = operand(Flow::Accumulate, wgt.diff_weights_desc());
    wgtDiffBias = operand(Flow::Accumulate, q.bias ? wgt.diff_bias_desc() : memory::desc());
    if (q.activations != Precision::Float)
      for (Operand* op : {&fwdSrc, &fwdDst, &bwdDiffDst, &bwdDiffSrc, &wgtSrc, &wgtDiffDst})
        if (op->inner.data_type() == memory::data_type::f32) {
          op->staged = true;
          op->stage =
              memory::desc(op->inner.dims(), memory::data_type::f32, memory::format_tag::abcde);
        }
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
      if (op->staged) {
        op->stageOffset = at;
        at += align(op->stage.get_size());
      }
    }
    scratchOffset = at;
    return at + align(scratchpad);
  }
};

// The pass descriptors the engine runs for `q`: each pass in the activation layout in which
// oneDNN has the better kernel, its own choice (`any`: blocked channels) unless channels-last
// gets a wider vector kernel, as for conv1's 4 input channels, where backward-weights is an
// AVX2 kernel in the blocked layout and an AVX-512 one channels-last (measured several times
// faster: docs/performance-notes.md, "oneDNN engine").
struct ChosenPasses {
  PassDescs descs;
  std::string implementations;
};
//
// 16-bit activations: each pass the same way in the 16-bit type, taken when oneDNN has a kernel
// for it that is not its reference one; else the f32 pass (below), whose reorders from and to
// the 16-bit user arrays convert. oneDNN refusing a 16-bit descriptor (no implementation at
// all, as for f16 without AVX512-FP16) is that case too.
template <class PD>
struct Candidates {
  PD blocked, channelsLast;  // channelsLast empty: none asked (or refused)
  // The better of the two, and its name.
  std::pair<PD, std::string> best() const {
    if (!channelsLast) return {blocked, blocked.impl_info_str()};
    const PD& b = better(blocked, channelsLast);
    return {b, std::string(b.impl_info_str()) + (&b == &channelsLast ? " channels-last" : "")};
  }
};
// `narrow` (16-bit, may be empty) unless it is empty or a reference kernel, else `wide` (f32);
// the name says the type when the activations are 16-bit.
template <class PD>
std::pair<PD, std::string> choose(const Candidates<PD>& wide, const Candidates<PD>& narrow,
                                  memory::data_type storage) {
  if (narrow.blocked) {
    auto n = narrow.best();
    if (!isReference(n.first.impl_info_str()))
      return {n.first, std::string(typeName(storage)) + " " + n.second};
  }
  auto w = wide.best();
  if (storage == memory::data_type::f32) return w;
  return {w.first, "f32 " + w.second};
}

ChosenPasses choosePasses(const dnnl::engine& engine, const LocalConvProblem& q) {
  const auto f32 = memory::data_type::f32, storage = dataType(q.activations);
  const auto any = memory::format_tag::any, ndhwc = memory::format_tag::ndhwc;
  const PassDescs blocked = describePasses(engine, q, any, f32);
  const PassDescs channelsLast = describePasses(engine, q, ndhwc, f32);
  PassDescs blocked16, channelsLast16;  // empty: not asked, or refused
  if (storage != f32) {
    try {
      blocked16 = describePasses(engine, q, any, storage);
      channelsLast16 = describePasses(engine, q, ndhwc, storage);
    } catch (const dnnl::error&) {  // no implementation of the 16-bit type: f32 passes
    }
  }
  const auto fwd = choose<dnnl::convolution_forward::primitive_desc>(
      {blocked.forward, channelsLast.forward}, {blocked16.forward, channelsLast16.forward},
      storage);
  auto bwd = choose<dnnl::convolution_backward_data::primitive_desc>(
      {blocked.backwardData, channelsLast.backwardData},
      {blocked16.backwardData, channelsLast16.backwardData}, storage);
  const auto wgt = choose<dnnl::convolution_backward_weights::primitive_desc>(
      {blocked.backwardWeights, channelsLast.backwardWeights},
      {blocked16.backwardWeights, channelsLast16.backwardWeights}, storage);
  ChosenPasses chosen{{fwd.first, bwd.first, wgt.first, {}}, ""};
  std::string bwdName = bwd.second;
  if (backwardDataAsForward(q)) {
    using Fwd = dnnl::convolution_forward::primitive_desc;
    Candidates<Fwd> narrow;
    if (storage != f32) {
      try {
        narrow = {describeBackwardDataAsForward(engine, q, any, storage),
                  describeBackwardDataAsForward(engine, q, ndhwc, storage)};
      } catch (const dnnl::error&) {
      }
    }
    const auto asFwd = choose<Fwd>({describeBackwardDataAsForward(engine, q, any, f32),
                                    describeBackwardDataAsForward(engine, q, ndhwc, f32)},
                                   narrow, storage);
    chosen.descs.backwardDataForward = asFwd.first;
    bwdName = asFwd.second + " as a forward convolution";
  }
  chosen.implementations = Impl::concat("forward ", fwd.second, ", backward-data ", bwdName,
                                        ", backward-weights ", wgt.second);
  return chosen;
}

struct OneDnnPrimitives : PassOperands {
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

namespace {

// The window of t starting at local index `at` with spatial `extents`, all samples and
// channels, to and from a dense f32 array (NCDHW): one rounding per value into t.
template <class T, class F>
void forEachWindowRow(const DistTensor<T, Kokkos::HostSpace>& t, const Index3& at,
                      const Index3& extents, F f) {
  const auto& v = t.view();
  const Index N = Index(v.extent(0)), C = Index(v.extent(1));
  const Index H = Index(v.extent(3)), W = Index(v.extent(4)), D = Index(v.extent(2));
  const Index rows = N * C * extents[0] * extents[1];
#pragma omp parallel for
  for (Index r = 0; r < rows; ++r) {
    Index i = r;
    const Index h = i % extents[1];
    i /= extents[1];
    const Index d = i % extents[0];
    i /= extents[0];  // n * C + c
    T* row = v.data() + ((i * D + at[0] + d) * H + at[1] + h) * W + at[2];
    f(row, r * extents[2], extents[2]);
  }
}
// float16 rows by F16C's conversions where the CPU has them (8 values per instruction, the same
// rounding to nearest even as float16's own, core/Scalar16.hpp): the library is built for the
// baseline x86-64 target, where the portable conversion vectorises only as wide as SSE2.
#if defined(__x86_64__) && defined(__GNUC__)
#define HYBRID3D_ONEDNN_F16C 1
__attribute__((target("avx,f16c"))) void halfRowToFloat(const float16* in, float* out, Index n) {
  Index w = 0;
  for (; w + 8 <= n; w += 8)
    _mm256_storeu_ps(out + w,
                     _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in + w))));
  for (; w < n; ++w) out[w] = float(in[w]);
}
__attribute__((target("avx,f16c"))) void floatRowToHalf(const float* in, float16* out, Index n) {
  Index w = 0;
  for (; w + 8 <= n; w += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + w),
                     _mm256_cvtps_ph(_mm256_loadu_ps(in + w), _MM_FROUND_TO_NEAREST_INT));
  for (; w < n; ++w) out[w] = float16(in[w]);
}
bool hostHasF16c() {
  // F16C by cpuid (leaf 1, ECX bit 29): clang 14, the HIP toolchain's family, has no
  // __builtin_cpu_supports("f16c").
  unsigned a = 0, b = 0, c = 0, d = 0;
  static const bool has =
      __builtin_cpu_supports("avx") && __get_cpuid(1, &a, &b, &c, &d) && (c & (1u << 29)) != 0;
  return has;
}
#else
#define HYBRID3D_ONEDNN_F16C 0
#endif

template <class T>
void toFloat(const DistTensor<T, Kokkos::HostSpace>& t, const Index3& at, const Index3& extents,
             float* dense) {
#if HYBRID3D_ONEDNN_F16C
  if constexpr (std::is_same_v<T, float16>)
    if (hostHasF16c()) {
      forEachWindowRow(t, at, extents, [dense](const T* row, Index first, Index n) {
        halfRowToFloat(row, dense + first, n);
      });
      return;
    }
#endif
  forEachWindowRow(t, at, extents, [dense](const T* row, Index first, Index n) {
    float* out = dense + first;
    for (Index w = 0; w < n; ++w) out[w] = float(row[w]);
  });
}
template <class T>
void fromFloat(const float* dense, const DistTensor<T, Kokkos::HostSpace>& t, const Index3& at,
               const Index3& extents) {
#if HYBRID3D_ONEDNN_F16C
  if constexpr (std::is_same_v<T, float16>)
    if (hostHasF16c()) {
      forEachWindowRow(t, at, extents, [dense](T* row, Index first, Index n) {
        floatRowToHalf(dense + first, row, n);
      });
      return;
    }
#endif
  forEachWindowRow(t, at, extents, [dense](T* row, Index first, Index n) {
    const float* in = dense + first;
    for (Index w = 0; w < n; ++w) row[w] = T(in[w]);
  });
}

// Points an activation operand at the window of t (at `at`, `extents`): the array itself, or
// its f32 stage, filled from it unless the primitive only writes it.
template <class T>
void bindActivation(OneDnnPrimitives& P, Operand& op, const DistTensor<T, Kokkos::HostSpace>& t,
                    const Index3& at, const Index3& extents, char* ws) {
  if (!op.staged) {
    P.bind(op, windowDesc(t, extents), windowStart(t, at), ws);
    return;
  }
  float* stage = reinterpret_cast<float*>(ws + op.stageOffset);
  if (op.flow != Flow::Out) toFloat(t, at, extents, stage);
  P.bind(op, op.stage, stage, ws);
}
// After the primitive (and the operand's copy): a staged output back into t, rounded once.
template <class T>
void unstage(const Operand& op, const DistTensor<T, Kokkos::HostSpace>& t, const Index3& at,
             const Index3& extents, char* ws) {
  if (op.staged) fromFloat(reinterpret_cast<const float*>(ws + op.stageOffset), t, at, extents);
}

}  // namespace

template <class T>
OneDnnConvolution<T>::OneDnnConvolution(const LocalConvProblem& problem)
    : problem_(problem), p_(std::make_unique<OneDnnPrimitives>()), threads_(hostThreads()) {
  if (problem.activations != precisionOf<T>())
    fail(problem.layer, ": onednn convolution of ", toString(precisionOf<T>()),
         " activations asked for a ", toString(problem.activations), " problem");
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

template <class T>
OneDnnConvolution<T>::~OneDnnConvolution() = default;

template <class T>
std::string OneDnnConvolution<T>::describe() const {
  const std::string storage =
      isScalar16<T> ? Impl::concat(" on ", toString(precisionOf<T>()), " storage") : "";
  return problem_.emptyOutput() ? "onednn" + storage + " (empty box on this rank)"
                                : "onednn" + storage + " (" + p_->implementations + ")";
}

template <class T>
void OneDnnConvolution<T>::forward(const execution_space& exec, const tensor_type& x,
                                   const values_type& w, const values_type& bias,
                                   const tensor_type& y) {
  if (problem_.emptyOutput()) return;
  exec.fence();  // Kokkos kernels (the halo gather) have finished writing x
  omp_set_num_threads(threads_);
  auto& P = *p_;
  const auto& q = problem_;
  char* ws = HostWorkspace::instance().data();
  const Index3 window{q.windowExtent(0), q.windowExtent(1), q.windowExtent(2)};
  bindActivation(P, P.fwdSrc, x, q.inOffset, window, ws);
  P.bind(P.fwdWeights, P.userWeights, w.data(), ws);
  if (q.bias) P.bind(P.fwdBias, P.userBias, bias.data(), ws);
  bindActivation(P, P.fwdDst, y, outputStart(y, q), q.outExtents, ws);
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
  unstage(P.fwdDst, y, outputStart(y, q), q.outExtents, ws);
}

template <class T>
void OneDnnConvolution<T>::backwardData(const execution_space& exec, const values_type& w,
                                        const tensor_type& dy, const tensor_type& dx) {
  exec.fence();
  const auto& q = problem_;
  const auto v = dx.view();
  const Index3 window{q.windowExtent(0), q.windowExtent(1), q.windowExtent(2)};
  // Cells of dx outside the input window receive nothing: zero them (all of dx when this rank
  // has no output), unless the caller sums several parts into dx.
  if (!q.accumulateDx && !q.windowIsWholeArray(dx.localExtents()))
    std::fill_n(v.data(), v.size(), T(0.0f));
  if (q.emptyOutput()) return;
  omp_set_num_threads(threads_);
  auto& P = *p_;
  char* ws = HostWorkspace::instance().data();
  bindActivation(P, P.bwdDiffDst, dy, outputStart(dy, q), q.outExtents, ws);
  if (P.backwardDataIsForward) {
    float* flipped = reinterpret_cast<float*>(ws + P.bwdFlippedWeights.offset);
    flipTransposed(q, w.data(), flipped);
    P.bind(P.bwdWeights, P.bwdFlippedWeights.inner, flipped, ws);
  } else {
    P.bind(P.bwdWeights, P.userWeights, w.data(), ws);
  }
  bindActivation(P, P.bwdDiffSrc, dx, q.inOffset, window, ws);
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
  unstage(P.bwdDiffSrc, dx, q.inOffset, window, ws);
}

template <class T>
void OneDnnConvolution<T>::backwardWeights(const execution_space& exec, const tensor_type& x,
                                           const tensor_type& dy, const values_type& dw,
                                           const values_type& db) {
  if (problem_.emptyOutput()) return;
  exec.fence();
  omp_set_num_threads(threads_);
  auto& P = *p_;
  const auto& q = problem_;
  char* ws = HostWorkspace::instance().data();
  const Index3 window{q.windowExtent(0), q.windowExtent(1), q.windowExtent(2)};
  bindActivation(P, P.wgtSrc, x, q.inOffset, window, ws);
  bindActivation(P, P.wgtDiffDst, dy, outputStart(dy, q), q.outExtents, ws);
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

std::string oneDnnVersion() {
  const dnnl_version_t* v = dnnl_version();
  return concat(v->major, ".", v->minor, ".", v->patch);
}

template class OneDnnConvolution<float>;
template class OneDnnConvolution<bfloat16>;
template class OneDnnConvolution<float16>;

}  // namespace hybrid3d::Impl
