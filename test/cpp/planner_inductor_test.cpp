// The planner's Inductor policy (PlanOptions::inductor, planner_inductor.cpp):
// only the writes Inductor lowers as writes and profits from, each still
// passing the walk's soundness checks.
#include <gtest/gtest.h>

#include "planner_test_builder.h"
#include "reinplace_planner.h"

using namespace fxinplace::core;
using namespace fxinplace::core::testing;

// a = mul(x, 2); b = add(a, 1); return b -- the stock policy writes b into a;
// Inductor fuses mul and add into one kernel with no buffer for a at all.
TEST(Inductor, PointwiseOpsStayFunctional) {
  Builder b;
  NodeId a = b.clone_of_input({4});
  NodeId c = b.op({a}, {4});
  b.output({c});
  EXPECT_EQ(at(b.plan(), c).action, Action::kInplace);
  Plan p = b.plan(inductor());
  EXPECT_EQ(at(p, c).action, Action::kKeep);
  EXPECT_EQ(at(p, c).reason, Reason::kCompilerFuses);
}

// a = mm(x, w); y = index_put(a, [i], v); return y -> index_put_(a, [i], v)
TEST(Inductor, IndexedWritesAndCollectivesAreWrittenInPlace) {
  for (bool collective : {false, true}) {
    Builder b;
    NodeId x = b.input({4});
    NodeId a = b.op({x}, {4}, false, false);
    NodeId y = b.op({a}, {4}, true, false);
    (collective ? b.g.at(y).collective : b.g.at(y).indexed_write) = true;
    b.output({y});
    EXPECT_EQ(at(b.plan(inductor()), y).action, Action::kInplace);
  }
}

// y = index_put(x, [i], v); return y, x -- still refused when x is read later:
// the policy only narrows what the walk may do.
TEST(Inductor, IndexedWritesStillPassTheSoundnessChecks) {
  Builder b;
  NodeId x = b.input({4});
  NodeId a = b.op({x}, {4}, false, false);
  NodeId y = b.op({a}, {4}, true, false);
  b.g.at(y).indexed_write = true;
  b.output({y, a});
  EXPECT_EQ(at(b.plan(inductor()), y).reason, Reason::kUsedLater);
}

// a = mm(x, w); y = index_put(a, [i], v); return (y[0:0],) -- kept: Inductor
// returns an empty view of a buffer it sees mutated as a fresh empty tensor,
// so the output would lose the storage the functional graph's view keeps. A
// non-empty view of the same result is written in place as before.
TEST(Inductor, AResultReturnedThroughAnEmptyViewIsNotWrittenInPlace) {
  for (Int rows : {0, 2}) {
    Builder b;
    NodeId x = b.input({4, 4});
    NodeId a = b.op({x}, {4, 4}, false, false);
    NodeId y = b.op({a}, {4, 4}, true, false);
    b.g.at(y).indexed_write = true;
    NodeId v = b.view(y, Geometry{{rows, 4}, {4, 1}, 0});
    b.output({v});
    Plan p = b.plan(inductor());
    EXPECT_EQ(at(p, y).action, rows == 0 ? Action::kKeep : Action::kInplace);
    if (rows == 0) EXPECT_EQ(at(p, y).reason, Reason::kInductorEmptyOutputView);
  }
}

// b = mm(x, w); y = index_put(view(b), [i], v) -- kept when Inductor runs the
// view as a library kernel (complex tensors): it would not order the write
// through that view as a write of b. The same view Inductor generates: in place.
TEST(Inductor, NoWriteThroughAViewInductorRunsOpaquely) {
  for (bool opaque : {true, false}) {
    Builder b;
    NodeId x = b.input({4, 4});
    NodeId a = b.op({x}, {4, 4}, false, false);
    NodeId v = b.view(a, Geometry{{2, 4}, {4, 1}, 4});
    b.g.at(v).compiler_opaque = opaque;
    NodeId y = b.op({v}, {2, 4}, true, false);
    b.g.at(y).indexed_write = true;
    b.output({y});
    Plan p = b.plan(inductor());
    EXPECT_EQ(at(p, y).action, opaque ? Action::kKeep : Action::kInplace);
    if (opaque) EXPECT_EQ(at(p, y).reason, Reason::kInductorOpaqueView);
  }
}

// An op Inductor runs as a library kernel (a fallback): writing in place loses no fusion.
TEST(Inductor, ExternKernelsMayBeWrittenInPlace) {
  Builder b;
  NodeId a = b.clone_of_input({4});
  NodeId c = b.op({a}, {4});
  b.g.at(c).compiler_extern = true;
  b.output({c});
  EXPECT_EQ(at(b.plan(inductor()), c).action, Action::kInplace);
}

// a = relu(x); s = select_scatter(a, src, 0, 1); return s: neither a nor s is
// realized, so Inductor fuses the scatter into one kernel with relu.
TEST(Inductor, ScattersStayFunctionalUnlessWorthIt) {
  for (bool realized : {false, true}) {
    Builder b;
    NodeId x = b.input({4, 4});
    NodeId src = b.input({4});
    NodeId a = b.op({x}, {4, 4}, false);
    NodeId s = b.select_scatter(a, src, 0, 1);
    b.g.at(a).realized = realized;
    b.g.at(s).realized = realized;
    b.output({s});
    Plan p = b.plan(inductor());
    EXPECT_EQ(at(p, s).action, realized ? Action::kScatterToCopy : Action::kKeep);
    if (!realized) EXPECT_EQ(at(p, s).reason, Reason::kScatterKeptForFusion);
  }
}

// s = select_scatter(x, src, 0, 1); copy_(x, s): the epilogue keeps both in
// memory anyway (the KV-cache write), so the scatter becomes select(x).copy_(src).
TEST(Inductor, AScatterWrittenBackIntoItsInputIsWorthIt) {
  Builder b;
  NodeId x = b.input({4, 4});
  NodeId src = b.input({4});
  NodeId s = b.select_scatter(x, src, 0, 1);
  NodeId back = b.write_back(x, s);
  b.output({});
  Plan p = b.plan(inductor());
  EXPECT_EQ(at(p, s).action, Action::kScatterToCopy);
  EXPECT_EQ(at(p, back).action, Action::kRemoveCopy);
}

// ys = _foreach_mul([m, v], 0.9); copy_(m, ys[0]); copy_(v, ys[1]) -> _foreach_mul_;
// but zs = _foreach_mul([m], 0.9); ws = _foreach_add(zs, 1); copy_(m, ws[0]):
// the first op's result is not what the epilogue copies, so both stay
// functional and Inductor fuses the pair.
TEST(Inductor, ForeachOnlyWhereTheEpilogueCopiesItsResult) {
  {
    Builder b;
    NodeId m = b.input({4});
    NodeId v = b.input({4});
    auto [fe, items] = b.foreach_op({m, v});
    b.write_back_each({m, v}, items);
    b.output({});
    EXPECT_EQ(at(b.plan(inductor()), fe).action, Action::kInplace);
  }
  {
    Builder b;
    NodeId m = b.input({4});
    auto [first, zs] = b.foreach_op({m});
    auto [second, ws] = b.foreach_op({zs[0]});
    b.write_back(m, ws[0]);
    b.output({});
    Plan p = b.plan(inductor());
    EXPECT_EQ(at(p, first).reason, Reason::kForeachIntoIntermediate);
    EXPECT_EQ(at(p, second).reason, Reason::kForeachIntoIntermediate);
    EXPECT_EQ(at(b.plan(), first).reason, Reason::kSelfIsInput);
  }
}

// a = exp(x); af = auto_functionalized(op, a[0], a[1]) (both rows written in place);
// s0 = select_scatter(a, af[0], 0, 0); s1 = select_scatter(s0, af[1], 0, 1); return s1
// Both scatters copy a row onto itself: removed (kept functional, s1 would copy all of a).
TEST(Inductor, AScatterOfAValueAlreadyInPlaceIsRemoved) {
  Builder b;
  NodeId a = b.clone_of_input({4, 4});
  NodeId row0 = b.view(a, contiguous({4}));
  NodeId row1 = b.view(a, contiguous({4}, 4));
  auto [af, items] = b.auto_functionalized({row0, row1});
  NodeId s0 = b.select_scatter(a, items[0], 0, 0);
  NodeId s1 = b.select_scatter(s0, items[1], 0, 1);
  b.output({s1});
  Plan p = b.plan(inductor());
  EXPECT_EQ(at(p, af).action, Action::kInplace);
  EXPECT_EQ(at(p, s0).action, Action::kRemoveScatter);
  EXPECT_TRUE(rewritten(at(p, s1), Action::kRemoveScatter, a));
}

// rs = all_reduce_coalesced([a, b]) of intermediates: a list collective is no
// fusible math, so its elements are written in place like all_reduce's.
TEST(Inductor, ListCollectivesAreWrittenInPlaceWithoutAnEpilogue) {
  Builder b;
  NodeId x = b.input({4});
  NodeId a = b.op({x}, {4}, false);
  NodeId c = b.op({x}, {4}, false);
  auto [coalesced, items] = b.foreach_op({a, c});
  b.g.at(coalesced).collective = true;
  b.output({items[0], items[1]});
  EXPECT_EQ(at(b.plan(inductor()), coalesced).action, Action::kInplace);
  b.g.at(coalesced).collective = false;  // the same as a _foreach_* op: fused instead
  EXPECT_EQ(at(b.plan(inductor()), coalesced).reason, Reason::kForeachIntoIntermediate);
}

// Issue 15, f1: y = diagonal_scatter(x, diagonal(x)); x.fill_(2); return y.
//   d = diagonal(x); s = scatter(x, d); f = full_like(x, 2); copy_(x, f); return s
// The scatter copies x's diagonal onto itself, but removed, s would be x's
// memory: the write-back overwrites it before s is returned (and s would alias
// the input x). Kept; without the write-back and the aliasing output, removed.
TEST(Inductor, AScatterIsRemovedOnlyWhenNoLaterWriteReachesItsResult) {
  for (bool written_back : {true, false}) {
    Builder b;
    NodeId x = b.input({4, 4});
    NodeId row = b.view(x, contiguous({4}, 4));
    NodeId s = b.select_scatter(x, row, 0, 1);
    if (written_back) {
      NodeId fill = b.op({x}, {4, 4}, false);
      b.write_back(x, fill);
      b.output({s});
    } else {
      NodeId use = b.op({s}, {4, 4}, false);
      b.output({use});
    }
    Plan p = b.plan(inductor());
    if (written_back)
      EXPECT_NE(at(p, s).action, Action::kRemoveScatter);
    else
      EXPECT_EQ(at(p, s).action, Action::kRemoveScatter);
  }
}

// Issue 15, f2: y = view.dtype(buf_f32, int32); s = select_scatter(y, src_i32, 0, 1)
// -> select(y, 0, 1).copy_(src), which Inductor lowers as a float conversion of
// the int32 values into buf's bytes. Refused; the same scatter without the
// dtype view is written in place.
TEST(Inductor, NoWriteThroughAViewOfAnotherDtype) {
  for (bool dtype_view : {true, false}) {
    Builder b;
    NodeId x = b.input({4, 4});
    NodeId src = b.input({4});
    NodeId buf = b.op({x}, {4, 4}, false);
    NodeId y = b.view(buf, contiguous({4, 4}));
    if (dtype_view) b.g.at(y).results[0].dtype = 1;
    b.g.at(src).results[0].dtype = b.g.at(y).results[0].dtype;
    NodeId s = b.select_scatter(y, src, 0, 1);
    b.g.at(s).results[0].dtype = b.g.at(y).results[0].dtype;
    b.g.at(s).realized = b.g.at(y).realized = true;
    b.output({s});
    Plan p = b.plan(inductor());
    EXPECT_TRUE(refused_if(dtype_view, at(p, s), Reason::kInductorDtypeView, Action::kScatterToCopy));
  }
}

// Issue 15, f3: x1 = index_put(x, i, v); f = flip(x1); a = add(x1, f); copy_(x, a)
// In place, x1 is x and Inductor's loop for copy_(x, a) loads x[n-1-k] after
// storing x[k]. Refused; with a pointwise read (neg) instead of the flip, the
// loop reads x[k] only and the write is taken.
TEST(Inductor, AWriteIsRefusedWhenALaterWriteBackReadsTheBufferElsewhere) {
  for (bool flip : {true, false}) {
    Builder b;
    NodeId x = b.input({4});
    NodeId v = b.input({4});
    NodeId put = b.op({x, v}, {4}, true, false);
    b.g.at(put).indexed_write = true;
    NodeId other = b.op({put}, {4}, false, /*pointwise=*/!flip);
    NodeId sum = b.op({put, other}, {4}, false);
    b.write_back(x, sum);
    b.output({});
    Plan p = b.plan(inductor());
    EXPECT_TRUE(refused_if(flip, at(p, put), Reason::kInductorFusedRead));
  }
}

// Issue 15, f4: f = flip(x); ys = _foreach_add([x], [f]); copy_(x, ys[0])
// -> _foreach_add_([x], [flip(x)]): one loop stores x[k] and loads x[n-1-k].
// Refused; a pointwise operand of x (neg(x), read at k) is fine.
TEST(Inductor, AForeachWriteIsRefusedWhenItsOwnOperandReadsTheBufferElsewhere) {
  for (bool flip : {true, false}) {
    Builder b;
    NodeId x = b.input({4});
    NodeId f = b.op({x}, {4}, false, /*pointwise=*/!flip);
    auto [fe, items] = b.foreach_op({x}, {f});
    b.write_back(x, items[0]);
    b.output({});
    Plan p = b.plan(inductor());
    EXPECT_TRUE(refused_if(flip, at(p, fe), Reason::kInductorFusedRead));
  }
}

// ys = _foreach_add([m, v], [f(m), g]): element 1's operand reads m, which
// element 0 writes in the same kernel -- never aligned, whatever the op.
TEST(Inductor, AForeachElementReadingAnotherElementsBufferIsRefused) {
  Builder b;
  NodeId m = b.input({4});
  NodeId v = b.input({4});
  NodeId g = b.input({4});
  NodeId fm = b.op({m}, {4}, false);
  auto [fe, items] = b.foreach_op({m, v}, {g, fm});
  b.write_back_each({m, v}, items);
  b.output({});
  EXPECT_EQ(at(b.plan(inductor()), fe).reason, Reason::kInductorFusedRead);
}

// _foreach_maximum([m], [x]); copy_(m, ys[0]): Inductor has no lowering for
// _foreach_maximum_, so in place it runs as a library kernel and keeps a
// buffer the functional form fuses into the copy_.
TEST(Inductor, NoInPlaceFormInductorCannotLower) {
  Builder b;
  NodeId m = b.input({4});
  NodeId x = b.input({4});
  auto [fe, items] = b.foreach_op({m}, {x});
  b.g.at(fe).compiler_lacks_inplace = true;
  b.write_back(m, items[0]);
  b.output({});
  EXPECT_EQ(at(b.plan(inductor()), fe).reason, Reason::kNoCompilerInplaceLowering);
}

// a = bitwise_or(x, y); t = reshape(a); af = auto_functionalized(write_, t);
// d = view.dtype(af[0], f64) -- kept when `a` is code Inductor has not put in a
// buffer and the memory is read as another dtype: Inductor would hand the lazy
// view t (not a buffer) to the as_strided of d's users, which it cannot lower.
// A realized root, or no dtype view, is written in place as before.
TEST(Inductor, AnAutoFunctionalizedBaseViewingLazyCodeReadAsAnotherDtypeIsCloned) {
  for (bool realized : {false, true}) {
    for (bool dtype_view : {true, false}) {
      Builder b;
      NodeId a = b.clone_of_input({4});
      b.g.at(a).realized = realized;
      NodeId t = b.view(a, contiguous({2}, 2));
      auto [af, items] = b.auto_functionalized({t});
      NodeId d = b.view(items[0], contiguous({2}));
      if (dtype_view) b.g.at(d).results[0].dtype += 1;
      b.output({d});
      Plan p = b.plan(inductor());
      if (!realized && dtype_view) {
        EXPECT_EQ(at(p, af).action, Action::kKeep);
        EXPECT_EQ(at(p, af).slots.at(0).reason, Reason::kInductorLazyViewBase);
      } else {
        EXPECT_EQ(at(p, af).action, Action::kInplace) << realized << dtype_view;
      }
    }
  }
}
