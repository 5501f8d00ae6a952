#include "geometry.h"

#include <gtest/gtest.h>

#include "test_geometry_helpers.h"

using namespace fxinplace::core;
using fxinplace::core::testing::contiguous;
using fxinplace::core::testing::Extents;
using fxinplace::core::testing::strided;

namespace {

ScatterSpec spec(ScatterKind kind, std::vector<Int> ints) {
  ScatterSpec s;
  s.kind = kind;
  s.ints = std::move(ints);
  s.replayable = true;
  return s;
}

}  // namespace

TEST(Geometry, ExpandedTensorsOverlap) {
  Geometry g = contiguous({4, 4});
  EXPECT_FALSE(g.has_internal_overlap());
  g.strides[0] = 0;
  EXPECT_TRUE(g.has_internal_overlap());
  g.sizes[0] = 1;  // a stride-0 dim of size 1 addresses one element only
  EXPECT_FALSE(g.has_internal_overlap());
  Geometry diagonal_sums = contiguous({3, 3});
  diagonal_sums.strides = {1, 1};  // element (i, j) at i + j: (0, 1) and (1, 0) collide
  EXPECT_TRUE(diagonal_sums.has_internal_overlap());
  Geometry gappy = contiguous({2, 3});
  gappy.strides = {7, 2};
  EXPECT_FALSE(gappy.has_internal_overlap());
}

TEST(Geometry, InterningGivesEqualIdsForEqualGeometry) {
  GeometryTable t;
  GeomId a = t.intern(contiguous({2, 3}));
  GeomId b = t.intern(contiguous({2, 3}));
  GeomId c = t.intern(contiguous({3, 2}));
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  EXPECT_EQ(t.lookup(contiguous({3, 2})), c);
  EXPECT_EQ(t.lookup(contiguous({7})), kNoGeom);
}

TEST(ReplayView, SelectDropsTheDimAndMovesTheOffset) {
  auto g = replay_view(spec(ScatterKind::kSelect, {0, -1}), contiguous({4, 5}));
  ASSERT_TRUE(g);
  EXPECT_EQ(g->sizes, Extents{5});
  EXPECT_EQ(g->strides, Extents{1});
  EXPECT_EQ(g->offset, 15);
  EXPECT_FALSE(replay_view(spec(ScatterKind::kSelect, {0, 4}), contiguous({4, 5})));
  EXPECT_FALSE(replay_view(spec(ScatterKind::kSelect, {2, 0}), contiguous({4, 5})));
}

TEST(ReplayView, SliceClampsBoundsAndScalesStride) {
  auto g = replay_view(spec(ScatterKind::kSlice, {1, 1, ScatterSpec::kUnset, 2}), contiguous({3, 6}));
  ASSERT_TRUE(g);
  EXPECT_EQ(g->sizes, (Extents{3, 3}));
  EXPECT_EQ(g->strides, (Extents{6, 2}));
  EXPECT_EQ(g->offset, 1);
  auto clamped = replay_view(spec(ScatterKind::kSlice, {0, -2, 100, 1}), contiguous({5}));
  ASSERT_TRUE(clamped);
  EXPECT_EQ(clamped->sizes, Extents{2});
  EXPECT_EQ(clamped->offset, 3);
  EXPECT_FALSE(replay_view(spec(ScatterKind::kSlice, {0, 0, 2, 0}), contiguous({5})));
}

TEST(ReplayView, DiagonalWithOffsets) {
  auto main = replay_view(spec(ScatterKind::kDiagonal, {0, 0, 1}), contiguous({3, 4}));
  ASSERT_TRUE(main);
  EXPECT_EQ(main->sizes, Extents{3});
  EXPECT_EQ(main->strides, Extents{5});
  EXPECT_EQ(main->offset, 0);
  auto above = replay_view(spec(ScatterKind::kDiagonal, {2, 0, 1}), contiguous({3, 4}));
  ASSERT_TRUE(above);
  EXPECT_EQ(above->sizes, Extents{2});
  EXPECT_EQ(above->offset, 2);
  auto below = replay_view(spec(ScatterKind::kDiagonal, {-1, 0, 1}), contiguous({3, 4}));
  ASSERT_TRUE(below);
  EXPECT_EQ(below->sizes, Extents{2});
  EXPECT_EQ(below->offset, 4);
  EXPECT_FALSE(replay_view(spec(ScatterKind::kDiagonal, {0, 1, 1}), contiguous({3, 4})));
}

TEST(ReplayView, AsStridedDefaultsToTheBaseOffset) {
  ScatterSpec s = spec(ScatterKind::kAsStrided, {ScatterSpec::kUnset});
  s.sizes = {2};
  s.strides = {3};
  Geometry base = contiguous({9});
  base.offset = 4;
  auto g = replay_view(s, base);
  ASSERT_TRUE(g);
  EXPECT_EQ(g->offset, 4);
  s.ints = {1};
  EXPECT_EQ(replay_view(s, base)->offset, 1);
}

TEST(ReplayView, SymbolicArgumentsNeverReplay) {
  ScatterSpec s = spec(ScatterKind::kSelect, {0, 0});
  s.replayable = false;
  EXPECT_FALSE(replay_view(s, contiguous({4, 4})));
}

TEST(Geometry, SameElementsIgnoresStridesOfSizeOneDims) {
  Geometry a = contiguous({1, 4});
  Geometry b = a;
  b.strides[0] = 12;
  EXPECT_TRUE(a.same_elements(b));
  b.strides[1] = 2;
  EXPECT_FALSE(a.same_elements(b));
  Geometry shifted = a;
  shifted.offset = 1;
  EXPECT_FALSE(a.same_elements(shifted));
}

TEST(Geometry, NonOverlappingAndDenseLikeATen) {
  EXPECT_TRUE(contiguous({2, 3}).non_overlapping_and_dense());
  Geometry t = contiguous({3, 2});
  t.strides = {1, 3};  // the transpose of a contiguous 2x3: still dense
  EXPECT_TRUE(t.non_overlapping_and_dense());
  Geometry gappy = contiguous({2, 3});
  gappy.strides[0] = 4;
  EXPECT_FALSE(gappy.non_overlapping_and_dense());
  Geometry one = contiguous({1, 1});
  one.strides = {2, 1};
  EXPECT_TRUE(one.non_overlapping_and_dense());
}

TEST(RelocateView, TransposeOfAMovedTensorFollowsTheNewStrides) {
  Geometry old_base = contiguous({2, 3});
  Geometry new_base = old_base;
  new_base.strides = {1, 2};  // column-major storage of the same 2x3 tensor
  new_base.offset = 5;
  Geometry t = contiguous({3, 2});
  t.strides = {1, 3};
  auto moved = relocate_view(t, old_base, new_base);
  ASSERT_TRUE(moved);
  EXPECT_EQ(moved->strides, (Extents{2, 1}));
  EXPECT_EQ(moved->offset, 5);
  Geometry row1 = contiguous({3}, 3);
  auto moved_row = relocate_view(row1, old_base, new_base);
  ASSERT_TRUE(moved_row);
  EXPECT_EQ(moved_row->offset, 6);
  EXPECT_EQ(moved_row->strides, Extents{2});
}

TEST(RelocateView, NeedsAnOldBaseWithoutOverlap) {
  Geometry overlapping = contiguous({2, 3});
  overlapping.strides = {1, 1};
  EXPECT_FALSE(relocate_view(contiguous({3}), overlapping, contiguous({2, 3})));
  Geometry gappy = contiguous({2, 3});
  gappy.strides = {6, 2};  // gaps are fine: every element has its own address
  Geometry row1 = contiguous({3}, 6);
  row1.strides = {2};
  auto moved = relocate_view(row1, gappy, contiguous({2, 3}));
  ASSERT_TRUE(moved);
  EXPECT_EQ(moved->offset, 3);
  EXPECT_EQ(moved->strides, Extents{1});
}

TEST(Geometry, MayOverlapIsFalseOnlyForDisjointRanges) {
  Geometry row0 = contiguous({4});
  Geometry row1 = contiguous({4}, 4);
  EXPECT_FALSE(row0.may_overlap(row1));
  Geometry col0 = contiguous({4});
  col0.strides = {4};
  EXPECT_TRUE(col0.may_overlap(row1));  // column 0 and row 1 share element 4
  Geometry scalar = contiguous({}, 6);
  EXPECT_FALSE(col0.may_overlap(scalar));  // 6 lies between column 0's 4 and 8
  EXPECT_FALSE(contiguous({0}).may_overlap(row0));
}

TEST(RelocateView, AReshapeMergingDimsDoesNotRelocate) {
  Geometry old_base = contiguous({2, 3});
  Geometry new_base = old_base;
  new_base.strides = {1, 2};
  // view(6) of the contiguous base: one stride cannot walk a column-major 2x3.
  EXPECT_FALSE(relocate_view(contiguous({6}), old_base, new_base));
  // view(1, 2, 3) only adds a size-1 dim: fine.
  auto unsqueezed = relocate_view(contiguous({1, 2, 3}), old_base, new_base);
  ASSERT_TRUE(unsqueezed);
  EXPECT_EQ(unsqueezed->strides[1], 1);
  EXPECT_EQ(unsqueezed->strides[2], 2);
}

TEST(ReshapeStrides, MergesOnlyContiguousRuns) {
  auto flat = reshape_strides(strided({2, 3}, {3, 1}), {6});
  ASSERT_TRUE(flat);
  EXPECT_EQ(*flat, Extents{1});
  EXPECT_FALSE(reshape_strides(strided({2, 3}, {1, 2}), {6}));  // column-major: no flat view
  auto split = reshape_strides(strided({6}, {2}), {2, 3});
  ASSERT_TRUE(split);
  EXPECT_EQ(*split, (Extents{6, 2}));
  auto unit = reshape_strides(strided({3, 2}, {1, 3}), {1, 3, 2, 1});
  ASSERT_TRUE(unit);
  EXPECT_EQ((*unit)[1], 1);
  EXPECT_EQ((*unit)[2], 3);
}

namespace {

// a = x.nonzero() + 0 under symbolic tracing: shape [u0, cols], contiguous.
Geometry unbacked_rows(Int cols, Int offset = 0) {
  Geometry g;
  g.sizes = {Extent::symbolic(0), cols};
  g.strides = {cols, 1};
  g.offset = offset;
  g.proven_dense_order = std::vector<int32_t>{1, 0};
  return g;
}

}  // namespace

TEST(SymbolicGeometry, EqualSymbolsAreTheSameElements) {
  EXPECT_TRUE(unbacked_rows(4).same_elements(unbacked_rows(4)));
  EXPECT_FALSE(unbacked_rows(4).same_elements(unbacked_rows(4, 1)));
  Geometry other_symbol = unbacked_rows(4);
  other_symbol.sizes[0] = Extent::symbolic(1);
  EXPECT_FALSE(unbacked_rows(4).same_elements(other_symbol));
  EXPECT_FALSE(unbacked_rows(4).numel());
}

TEST(SymbolicGeometry, OverlapQuestionsGetTheCautiousAnswer) {
  // a[:, 0:1] of a [u0, 4] tensor shares elements with a: nothing may say
  // "disjoint" because of the unknown size (it once did: numel wrapped to 0).
  Geometry a = unbacked_rows(4);
  Geometry column = a;
  column.sizes[1] = 1;
  EXPECT_TRUE(a.may_overlap(column));
  EXPECT_FALSE(a.has_internal_overlap());  // proven dense by the frontend
  a.proven_dense_order.reset();
  EXPECT_TRUE(a.has_internal_overlap());
  EXPECT_FALSE(replay_view(spec(ScatterKind::kSelect, {0, 0}), a));
  EXPECT_FALSE(relocate_view(column, a, a));
  EXPECT_FALSE(reshape_strides(a, {Extent::symbolic(0), 2, 2}));
}

TEST(SymbolicGeometry, AZeroSizeIsEmptyWhateverTheOtherSizes) {
  Geometry g = unbacked_rows(0);
  EXPECT_EQ(g.numel(), Int{0});
  EXPECT_FALSE(g.may_overlap(unbacked_rows(4)));
}

TEST(Overflow, HugeTensorsNeverWrapIntoSmallOnes) {
  Int big = Int{1} << 40;
  Geometry g = contiguous({big, big});  // numel 2^80 does not fit
  EXPECT_FALSE(g.numel());
  EXPECT_TRUE(g.may_overlap(contiguous({4})));
  Geometry huge_stride = strided({2, 2}, {Int{1} << 62, Int{1} << 62});
  EXPECT_TRUE(huge_stride.has_internal_overlap());
  EXPECT_TRUE(huge_stride.may_overlap(contiguous({1}, 3)));
  EXPECT_FALSE(replay_view(spec(ScatterKind::kSelect, {0, 3}), strided({4}, {Int{1} << 62})));
  EXPECT_FALSE(reshape_strides(strided({2, 2}, {Int{1} << 62, 1}), {4}));
}

// x[1][:, ::2] of a (7, 2, 2) tensor is elements 4 and 6; as_strided([2, 2], [1, 2], 4)
// of it reaches 4, 5, 6, 7 (random pipelines seed 101545).
TEST(Geometry, ElementsWithinAnother) {
  Geometry every_other = strided({2}, {2}, 4);
  Geometry block = strided({2, 2}, {1, 2}, 4);
  EXPECT_FALSE(block.elements_within(every_other));
  EXPECT_TRUE(every_other.elements_within(block));
  EXPECT_TRUE(block.elements_within(contiguous({7, 2, 2})));                             // a dense range
  EXPECT_FALSE(strided({2}, {1}, 27).elements_within(contiguous({7, 2, 2})));            // past its end
  EXPECT_TRUE(strided({0}, {1}, 99).elements_within(every_other));                       // no elements
  EXPECT_FALSE(strided({2}, {1}, 0).elements_within(strided({1, 8, 0}, {8, 1, 1}, 0)));  // into none
  Geometry rows = strided({2, 2}, {4, 1}, 0);  // 0, 1, 4, 5: not dense
  EXPECT_TRUE(strided({2}, {4}, 1).elements_within(rows));
  EXPECT_FALSE(strided({2}, {1}, 1).elements_within(rows));  // 1, 2
  Geometry symbolic = every_other;
  symbolic.offset = Extent::symbolic(0);
  EXPECT_TRUE(symbolic.elements_within(symbolic));  // the same elements
  EXPECT_FALSE(every_other.elements_within(symbolic));
}
