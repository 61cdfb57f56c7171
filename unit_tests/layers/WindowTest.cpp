#include <gtest/gtest.h>

#include <hybrid3d/comm/HaloPlan.hpp>
#include <hybrid3d/core/Error.hpp>
#include <hybrid3d/layers/Window.hpp>

namespace hybrid3d::test {
namespace {

// Brute force: the inputs that outputs [a, b) of a window read, straight from the definition.
IndexRange bruteWindow(Index a, Index b, int k, int s, int p) {
  IndexRange r{INT64_MAX, INT64_MIN};
  for (Index o = a; o < b; ++o)
    for (int j = 0; j < k; ++j) {
      r.first = std::min(r.first, o * s - p + j);
      r.last = std::max(r.last, o * s - p + j + 1);
    }
  return r;
}

// Transposed: the inputs i whose scattered outputs [i*s - p, i*s - p + k) meet [a, b).
IndexRange bruteTransposed(Index a, Index b, int k, int s, int p, Index n) {
  IndexRange r{INT64_MAX, INT64_MIN};
  for (Index i = -k; i < n + k; ++i)
    for (int j = 0; j < k; ++j) {
      const Index o = i * s - p + j;
      if (o >= a && o < b) {
        r.first = std::min(r.first, i);
        r.last = std::max(r.last, i + 1);
      }
    }
  return r;
}

TEST(Window, InputRangesMatchTheDefinition) {
  for (int k : {1, 2, 3, 5})
    for (int s : {1, 2, 3})
      for (int p = 0; p <= k / 2; ++p)
        for (Index a = 0; a < 6; ++a)
          for (Index b = a + 1; b < 9; ++b) {
            const IndexRange w = windowInputRange(a, b, k, s, p), bw = bruteWindow(a, b, k, s, p);
            EXPECT_EQ(w.first, bw.first);
            EXPECT_EQ(w.last, bw.last);
            const IndexRange t = transposedInputRange(a, b, k, s, p);
            const IndexRange bt = bruteTransposed(a, b, k, s, p, 20);
            if (bt.first > bt.last) {  // k < s: these outputs receive from no input
              EXPECT_GE(t.first, t.last);
              continue;
            }
            EXPECT_EQ(t.first, bt.first)
                << "k" << k << " s" << s << " p" << p << " [" << a << "," << b << ")";
            EXPECT_EQ(t.last, bt.last)
                << "k" << k << " s" << s << " p" << p << " [" << a << "," << b << ")";
          }
}

TEST(Window, OutputExtentsFollowPyTorch) {
  // floor((n + 2p - k) / s) + 1, checked against enumerating window positions.
  for (Index n = 1; n < 12; ++n)
    for (int k : {1, 2, 3, 5})
      for (int s : {1, 2})
        for (int p = 0; p <= k / 2; ++p) {
          Index count = 0;
          for (Index o = 0; o * s - p + k <= n + p; ++o) ++count;
          EXPECT_EQ(windowOutputExtent(n, k, s, p), count);
        }
  EXPECT_EQ(transposedOutputExtent(5, 2, 2, 0), 10);
}

TEST(Window, GhostsAreEveryRanksOwnReceptiveField) {
  // For every output block, the input block grown by that rank's ghosts is exactly what it
  // reads (clipped at the owned box: no rank carries another rank's wider overhang).
  for (Index n : {7, 9, 16, 33})
    for (int p : {1, 2, 3, 4})
      for (const Window w : {Window::cubic(3, 1, 1), Window::cubic(3, 2, 1), Window::cubic(2, 2, 0),
                             Window::cubic(5, 1, 2)}) {
        const BlockDecomposition in({n, 4, 4}, {p, 1, 1});
        const BlockDecomposition out(windowOutputExtents({n, 4, 4}, w), {p, 1, 1});
        GhostMap g;
        try {
          g = windowGhosts(in, out, w, "w");
        } catch (const Error&) {
          continue;  // a rank with output but no input: refused, fine
        }
        for (int k = 0; k < p; ++k) {
          if (out.extent(0, k) == 0) continue;
          const IndexRange need = windowInputRange(out.begin(0, k), out.end(0, k), w.kernel[0],
                                                   w.stride[0], w.padding[0]);
          EXPECT_EQ(g.lo(0, k), std::max<Index>(0, in.begin(0, k) - need.first));
          EXPECT_EQ(g.hi(0, k), std::max<Index>(0, need.last - in.end(0, k)));
        }
      }
}

TEST(Window, PerRankGhostsAcceptGridsTheWidestRankRefused) {
  // Issue 9: average pool 3/2/1 over D = 9 on 6 ranks (owned 2,2,2,1,1,1; outputs
  // 1,1,1,1,1,0). Each rank's need lies on its neighbours; the widest rank's high width 2 given
  // to rank 2 would reach rank 4.
  const Window w = Window::cubic(3, 2, 1);
  const BlockDecomposition in({9, 4, 4}, {6, 1, 1});
  const BlockDecomposition out(windowOutputExtents({9, 4, 4}, w), {6, 1, 1});
  const GhostMap g = windowGhosts(in, out, w, "pool1");
  const int lo[6] = {1, 1, 1, 1, 0, 0}, hi[6] = {0, 0, 0, 1, 2, 0};
  for (int k = 0; k < 6; ++k) {
    EXPECT_EQ(g.lo(0, k), lo[k]) << "rank " << k;
    EXPECT_EQ(g.hi(0, k), hi[k]) << "rank " << k;
  }
  EXPECT_NO_THROW(checkGhostWidths(in, g, "pool1"));
  EXPECT_THROW(checkGhostWidths(in, GhostWidths{{1, 1, 1}, {2, 1, 1}}, "pool1"), Error);
}

TEST(Window, RefusesANeedTwoRanksAway) {
  // A stride-2 window over D = 4 on 4 ranks: outputs 1,1,0,0; rank 1's output reads inputs
  // 1..3, and input 3 lies on rank 3. No width on rank 1 can reach it through rank 2.
  const Window w = Window::cubic(3, 2, 1);
  const BlockDecomposition in({4, 2, 2}, {4, 1, 1});
  const BlockDecomposition out(windowOutputExtents({4, 2, 2}, w), {4, 1, 1});
  try {
    windowGhosts(in, out, w, "conv4");
    ADD_FAILURE() << "accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("conv4: ghost width 2 on the high side of D of rank 1 "
                                         "reaches past the neighbouring rank: extent 4 over 4 "
                                         "ranks leaves rank 2 of that dimension only 1 voxel(s)"),
              std::string::npos)
        << e.what();
  }
}

TEST(Window, ARankWithOutputButNoInputReadsItsNeighbour) {
  // Upsampling 3 -> 6 over 4 ranks: input 1,1,1,0 but output 2,2,1,1. Rank 3's empty box sits
  // at 3 (the end of rank 2's block); its output 5 reads input 2 on rank 2: one low ghost.
  const auto range = [](int, Index a, Index b) { return transposedInputRange(a, b, 2, 2, 0); };
  const BlockDecomposition in({3, 1, 1}, {4, 1, 1}), out({6, 1, 1}, {4, 1, 1});
  const GhostMap g = requiredGhosts(in, out, range, "up3");
  const int lo[4] = {0, 0, 0, 1};
  for (int k = 0; k < 4; ++k) {
    EXPECT_EQ(g.lo(0, k), lo[k]) << "rank " << k;
    EXPECT_EQ(g.hi(0, k), 0) << "rank " << k;
  }
  const TensorLayout rank3(1, 1, in, {3, 0, 0}, g);
  EXPECT_TRUE(rank3.owned().empty());
  EXPECT_EQ(rank3.localBox(), (Box3{{2, 0, 0}, {3, 1, 1}}));
  // Without a consumer asking, an empty box has no ghosts: uniform widths skip it.
  EXPECT_EQ(TensorLayout(1, 1, in, {3, 0, 0}, GhostWidths::uniform(1)).localBox().size(), 0);
}

TEST(Window, RefusesARankWithoutInputWhoseNeedIsTwoRanksAway) {
  // Upsampling 3 -> 6 over 6 ranks (refcheck's conv_transpose3d case on 6x1x1): input
  // 1,1,1,0,0,0, output 1 each. Rank 3's output 3 reads input 1 on rank 1, two ranks away.
  const BlockDecomposition in({3, 1, 1}, {6, 1, 1}), out({6, 1, 1}, {6, 1, 1});
  try {
    requiredGhosts(
        in, out, [](int, Index a, Index b) { return transposedInputRange(a, b, 2, 2, 0); }, "up3");
    ADD_FAILURE() << "accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("up3: ghost width 2 on the low side of D of rank 3 "
                                         "reaches past the neighbouring rank: extent 3 over 6 "
                                         "ranks leaves rank 2 of that dimension only 1 voxel(s)"),
              std::string::npos)
        << e.what();
  }
}

TEST(Window, ARankWithoutInputOwnsOutputOnlyWhereTheOutputIsLarger) {
  // Why the pools and the usual convolutions never needed an empty box's ghosts: with padding
  // up to half the kernel the output is no larger than the input, and blocks split the same
  // way, so a rank without input owns no output. Past that (conv k3 p2, pool 2/1/1) it can.
  for (Index n : {1, 2, 3, 5})
    for (int p : {2, 3, 4, 6, 8}) {
      const BlockDecomposition in({n, 1, 1}, {p, 1, 1});
      for (const Window w : {Window::cubic(3, 1, 1), Window::cubic(3, 2, 1), Window::cubic(2, 2, 0),
                             Window::cubic(1, 1, 0), Window::cubic(5, 1, 2)}) {
        const BlockDecomposition out(windowOutputExtents({n, 1, 1}, w), {p, 1, 1});
        for (int k = 0; k < p; ++k) {
          if (in.extent(0, k) == 0) {
            EXPECT_EQ(out.extent(0, k), 0) << "n " << n << " p " << p;
          }
        }
      }
      if (n < p) {
        const BlockDecomposition out(windowOutputExtents({n, 1, 1}, Window::cubic(2, 1, 1)),
                                     {p, 1, 1});
        EXPECT_GT(out.extent(0, n), 0) << "n " << n << " p " << p;
      }
    }
}

}  // namespace
}  // namespace hybrid3d::test
