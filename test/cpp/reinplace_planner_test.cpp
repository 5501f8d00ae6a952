// Planner tests on hand-built IR: each builds the functional graph in the
// comment above it and checks the decisions, not the printed graph.
#include "reinplace_planner.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "planner_test_builder.h"
#include "test_geometry_helpers.h"

using namespace fxinplace::core;
using namespace fxinplace::core::testing;

namespace {

// v = select(base, 0, 0); f = fill(v); s = select_scatter(base, f, 0, 0): row 0
// of `base` computed anew and put back, as functionalization writes base[0].fill_().
struct RowUpdate {
  NodeId row, value, scatter;
};
RowUpdate update_row0(Builder& b, NodeId base, Int row_size) {
  NodeId row = b.view(base, contiguous({row_size}));
  NodeId value = b.op({row}, {row_size});
  return {row, value, b.select_scatter(base, value, 0, 0)};
}

}  // namespace

// a = clone(x); b = relu(a); c = mul(b, 2); return c
TEST(Planner, ChainReinplacesEverythingButTheReadOfTheInput) {
  Builder b;
  NodeId a = b.clone_of_input({4, 4});
  NodeId r = b.op({a}, {4, 4});
  NodeId m = b.op({r}, {4, 4});
  b.output({m});
  Plan p = b.plan();
  EXPECT_EQ(at(p, a).reason, Reason::kNoInplaceVariant);
  EXPECT_TRUE(rewritten(at(p, r), Action::kInplace, a));
  EXPECT_TRUE(rewritten(at(p, m), Action::kInplace, a));  // users of m read a, through r's rewrite
  EXPECT_EQ(p.count(Action::kInplace), 2);
}

// a = clone(x); b = add(a, 1); c = mul(a, 2); return b, c
TEST(Planner, ALaterReadBlocksAndIsNamed) {
  Builder b;
  NodeId a = b.clone_of_input({4});
  NodeId add = b.op({a}, {4});
  NodeId mul = b.op({a}, {4});
  b.output({add, mul});
  Plan p = b.plan();
  EXPECT_TRUE(refused(at(p, add), Reason::kUsedLater, mul));
  EXPECT_EQ(at(p, mul).action, Action::kInplace);
}

// a = clone(x); v = select(a, 0, 0); f = fill(v); s = select_scatter(a, f, 0, 0); return s
TEST(Planner, ScatterInvertingAViewIsRemoved) {
  Builder b;
  NodeId a = b.clone_of_input({4, 4});
  auto [v, f, s] = update_row0(b, a, 4);
  b.output({s});
  Plan p = b.plan();
  EXPECT_EQ(at(p, f).action, Action::kInplace);
  EXPECT_TRUE(rewritten(at(p, s), Action::kRemoveScatter, a));
  EXPECT_EQ(p.walks, 1);
}

// a = clone(x); e = expand(a, [4, 4]); v = select(e, 0, 0); f = sign(v)
// s = select_scatter(e, f, 0, 0); return s
// The scatter returns a fresh dense tensor; its base shares one row among
// all four, so `f` written in place (and `s` removed) would set every row.
TEST(Planner, ScatterIntoAnExpandedBaseIsKept) {
  Builder b;
  NodeId a = b.clone_of_input({4});
  NodeId e = b.view(a, strided({4, 4}, {0, 1}));
  auto [v, f, s] = update_row0(b, e, 4);
  b.output({s});
  Plan p = b.plan();
  EXPECT_EQ(at(p, f).action, Action::kKeep);
  EXPECT_TRUE(refused(at(p, f), Reason::kSelfOverlaps, s));
  EXPECT_NE(at(p, s).action, Action::kRemoveScatter);
}

// a = clone(x); v = select(a, 0, 0); f = fill(v); s = select_scatter(a, f, 0, 0)
// m = mul(s, 2); d = add(s, 1); return m, d
// Once `s` is removed its readers read `a`, so `m` may not write into `a`
// while `d` still reads it (no view of `s` exists to link the two classes).
TEST(Planner, ReadsOfARemovedScatterAreReadsOfItsBase) {
  Builder b;
  NodeId a = b.clone_of_input({4, 4});
  NodeId s = update_row0(b, a, 4).scatter;
  NodeId m = b.op({s}, {4, 4});
  NodeId d = b.op({s}, {4, 4});
  b.output({m, d});
  Plan p = b.plan();
  EXPECT_EQ(at(p, s).action, Action::kRemoveScatter);
  EXPECT_TRUE(refused(at(p, m), Reason::kUsedLater, d));
  EXPECT_EQ(at(p, d).action, Action::kInplace);
}

// a = clone(x); s = select_scatter(a, y, 0, 1); return s
TEST(Planner, DeadBaseScatterBecomesViewPlusCopy) {
  Builder b;
  NodeId x = b.input({4, 4});
  NodeId y = b.input({4});
  NodeId a = b.op({x}, {4, 4}, false);
  NodeId s = b.select_scatter(a, y, 0, 1);
  b.output({s});
  Plan p = b.plan();
  EXPECT_TRUE(rewritten(at(p, s), Action::kScatterToCopy, a));
}

// a = clone(x); v = select(a,0,0); c = fill(v); e = flip(c); d = select_scatter(a, e, 0, 0)
// The stock pass removes d because its geometry matches, though e (flip has no
// in-place form) never lands in a: the verifier must keep d.
TEST(Planner, VerifierKeepsAScatterWhoseSourceNeverLandsInPlace) {
  Builder b;
  NodeId a = b.clone_of_input({4, 4});
  NodeId v = b.view(a, contiguous({4}));
  NodeId c = b.op({v}, {4});
  NodeId e = b.op({c}, {4}, /*has_inplace=*/false, /*pointwise=*/false);
  NodeId d = b.select_scatter(a, e, 0, 0);
  b.output({d});
  Plan p = b.plan();
  EXPECT_EQ(p.walks, 2);
  EXPECT_TRUE(refused(at(p, c), Reason::kScatterUnproven, d));
  EXPECT_EQ(at(p, d).action, Action::kScatterToCopy);
}

// a = clone(x); t = transpose(a); b = add(a, t): writing a while reading a.T is wrong.
TEST(Planner, OperandAliasingSelfWithOtherGeometryIsRefused) {
  Builder b;
  NodeId a = b.clone_of_input({3, 3});
  Geometry transposed = contiguous({3, 3});
  std::swap(transposed.strides[0], transposed.strides[1]);
  NodeId t = b.view(a, transposed);
  NodeId add = b.op({a, t}, {3, 3});
  b.output({add});
  Plan p = b.plan();
  EXPECT_TRUE(refused(at(p, add), Reason::kOperandAliasesSelf, t));
}

// a = clone(x); same = alias(a); b = add(a, same): elementwise on identical memory is fine.
TEST(Planner, PointwiseOpMayReadSelfThroughAnIdenticalView) {
  Builder b;
  NodeId a = b.clone_of_input({3, 3});
  NodeId same = b.view(a, contiguous({3, 3}));
  NodeId add = b.op({a, same}, {3, 3});
  b.output({add});
  EXPECT_EQ(at(b.plan(), add).action, Action::kInplace);
}

// a = clone(x); b = mul(a, a)
TEST(Planner, SelfPassedTwiceIsRefused) {
  Builder b;
  NodeId a = b.clone_of_input({3});
  NodeId mul = b.op({a, a}, {3});
  b.output({mul});
  EXPECT_EQ(at(b.plan(), mul).reason, Reason::kSelfRepeated);
}

// s = sum(x, 0) -> [4]; b = add(s, y) -> [4, 4]: add_ cannot grow s.
TEST(Planner, BroadcastingIntoSelfIsRefused) {
  Builder b;
  NodeId x = b.input({4, 4});
  NodeId y = b.input({4, 4});
  NodeId s = b.op({x}, {4}, false);
  NodeId add = b.op({s, y}, {4, 4});
  b.output({add});
  EXPECT_EQ(at(b.plan(), add).reason, Reason::kShapeMismatch);
}

// a = clone(x); e = expand(a[0:1]); b = add(e, 1)
TEST(Planner, ExpandedSelfIsRefused) {
  Builder b;
  NodeId a = b.clone_of_input({1, 4});
  Geometry expanded = contiguous({4, 4});
  expanded.strides[0] = 0;
  NodeId e = b.view(a, expanded);
  NodeId add = b.op({e}, {4, 4});
  b.output({add});
  EXPECT_EQ(at(b.plan(), add).reason, Reason::kSelfOverlaps);
}

// v = view(x); b = add(v, 1): v is the caller's memory.
TEST(Planner, ViewOfAnInputIsNeverWritten) {
  Builder b;
  NodeId x = b.input({4});
  NodeId v = b.view(x, contiguous({4}));
  NodeId add = b.op({v}, {4});
  b.output({add});
  Plan p = b.plan();
  EXPECT_EQ(at(p, v).reason, Reason::kView);
  EXPECT_EQ(at(p, add).reason, Reason::kSelfIsInput);
}

TEST(Graph, RejectsReferencesToLaterNodes) {
  Graph g;
  Node n;
  n.kind = NodeKind::kOp;
  n.self = 3;
  EXPECT_THROW(g.add(std::move(n)), std::invalid_argument);
}

// A long chain stays one walk and reinplaces every op but the first.
TEST(Planner, LongChainIsOneWalk) {
  Builder b;
  NodeId prev = b.clone_of_input({2});
  for (int i = 0; i < 5000; ++i) prev = b.op({prev}, {2});
  b.output({prev});
  Plan p = b.plan();
  EXPECT_EQ(p.walks, 1);
  EXPECT_EQ(p.count(Action::kInplace), 5000);
}

// a = clone(x); r = slice(a, 0, 1, 4); b = add(r, 1); s = as_strided(b, [1], [1], 2); return s
// b would move into a at offset 1, and as_strided addresses storage offset 2
// absolutely: it would read a different element. Refused.
TEST(Planner, AsStridedOfTheResultBlocksAMoveToAnotherOffset) {
  Builder b;
  NodeId a = b.clone_of_input({4});
  NodeId r = b.view(a, contiguous({3}, 1));
  NodeId add = b.op({r}, {3});
  NodeId s = b.view(add, contiguous({1}, 2));
  b.g.at(s).layout_use = LayoutUse::kAbsolute;
  b.output({s});
  EXPECT_EQ(at(b.plan(), add).reason, Reason::kLayoutSensitiveUse);
}

// a = clone(x); r = slice(a, 0, 1, 4); b = add(r, 1); s = select(b, 0, 2):
// a logical view of the result, which lands wherever b does.
struct SelectOfAnAddIntoASlice {
  Builder b;
  NodeId add = kNoNode, s = kNoNode;
  SelectOfAnAddIntoASlice() {
    NodeId a = b.clone_of_input({4});
    NodeId r = b.view(a, contiguous({3}, 1));
    add = b.op({r}, {3});
    s = b.view(add, contiguous({}, 2));
  }
};

// Read by a computation, the move is invisible.
TEST(Planner, LogicalViewOfTheResultAllowsTheMove) {
  SelectOfAnAddIntoASlice t;
  NodeId m = t.b.op({t.s}, {});
  t.b.output({m});
  EXPECT_EQ(at(t.b.plan(), t.add).action, Action::kInplace);
}

// Returned, s would be a view of all of a's 4 elements where the program
// returns a view of b's own 3 (another storage, another _base): refused where
// torch.compile's runtime takes the outputs, taken (as the stock pass does) in
// a plain FX graph.
TEST(Planner, AResultReturnedIsNotWrittenIntoPartOfABufferUnderTorchCompile) {
  SelectOfAnAddIntoASlice t;
  t.b.output({t.s});
  EXPECT_EQ(at(t.b.plan(under_torch_compile()), t.add).reason, Reason::kReturnedAsPartialView);
  EXPECT_EQ(at(t.b.plan(), t.add).action, Action::kInplace);
}

// A view of the whole buffer (a reshape of it) is written in place and returned.
TEST(Planner, AResultReturnedMayBeWrittenIntoAViewOfAWholeBuffer) {
  Builder b;
  NodeId a = b.clone_of_input({2, 3});
  NodeId r = b.view(a, contiguous({6}));
  NodeId add = b.op({r}, {6});
  b.output({add});
  EXPECT_EQ(at(b.plan(under_torch_compile()), add).action, Action::kInplace);
}

// a = clone(x); v1 = alias(a); ...; v200000 = alias(v199999); b = add(v200000, a)
// Working out where v200000 lives walks the whole chain: it must not recurse.
TEST(Planner, DeepViewChainsAreWalkedWithoutRecursion) {
  Builder b;
  NodeId a = b.clone_of_input({4});
  NodeId v = a;
  for (int i = 0; i < 200000; ++i) v = b.view(v, contiguous({4}));
  NodeId add = b.op({v, a}, {4});
  b.output({add});
  EXPECT_EQ(at(b.plan(), add).action, Action::kInplace);
}

// y = op(x) laid out transposed; z = op(y) contiguous (masked_scatter); w = op(z); return w
// Writing z into y gives z, and so w, y's transposed layout, and the graph
// output would show it: refused. Without the output reading w it is fine.
TEST(Planner, AMovedLayoutShownThroughAComputedResultIsRefused) {
  for (bool returned : {true, false}) {
    Builder b;
    NodeId y = b.clone_of_input({3, 4});
    Node& yn = b.g.at(y);
    yn.results[0].geom = b.g.geom(strided({3, 4}, {1, 3}));
    NodeId z = b.op({y}, {3, 4});
    NodeId w = b.op({z}, {3, 4}, /*has_inplace=*/false);
    b.output(returned ? std::vector<NodeId>{w} : std::vector<NodeId>{});
    Plan p = b.plan();
    EXPECT_TRUE(refused_if(returned, at(p, z), Reason::kLayoutSensitiveUse));
  }
}

// ---- write slots: auto_functionalized_v2 bases, graph inputs written back

// a = clone(x); out = afv2(op, bases=[a]); a2 = out[0]; return a2
// Nothing reads `a` after the node: the op may write `a` itself.
TEST(Slots, ADeadBaseIsWrittenInPlace) {
  Builder b;
  NodeId a = b.clone_of_input({4});
  auto [af, items] = b.auto_functionalized({a});
  b.output({items[0]});
  Plan p = b.plan();
  EXPECT_EQ(at(p, af).action, Action::kInplace);
  ASSERT_EQ(at(p, af).slots.size(), 1u);
  EXPECT_TRUE(at(p, af).slots[0].in_place);
}

// a = clone(x); out = afv2(bases=[a]); r = add(a, 1); return out[0], r
TEST(Slots, ABaseReadLaterStaysCloned) {
  Builder b;
  NodeId a = b.clone_of_input({4});
  auto [af, items] = b.auto_functionalized({a});
  NodeId r = b.op({a}, {4});
  b.output({items[0], r});
  Plan p = b.plan();
  EXPECT_EQ(at(p, af).action, Action::kKeep);
  EXPECT_TRUE(refused(at(p, af).slots[0], Reason::kUsedLater, r));
}

// As above, disjoint rows, with both new bases returned: in place they would be
// two outputs sharing a storage (random pipelines seed 155184), so only the
// first is written.
TEST(Slots, TwoReturnedBasesInOneBufferAreNotBothWritten) {
  Builder b;
  NodeId a = b.clone_of_input({2, 4});
  NodeId r0 = b.view(a, contiguous({4}));
  NodeId r1 = b.view(a, contiguous({4}, 4));
  auto [af, items] = b.auto_functionalized({r0, r1});
  NodeId out = b.output({items[0], items[1]});
  Plan p = b.plan();
  EXPECT_TRUE(at(p, af).slots[0].in_place);
  EXPECT_TRUE(refused(at(p, af).slots[1], Reason::kUsedLater, out));
}

// a = clone(x); v = select(a, 0, 0); out = afv2(bases=[a], v): the op would read
// what it writes.
TEST(Slots, ABaseAnotherArgumentViewsStaysCloned) {
  Builder b;
  NodeId a = b.clone_of_input({4, 4});
  NodeId v = b.view(a, contiguous({4}));
  auto [af, items] = b.auto_functionalized({a}, {v});
  b.output({items[0]});
  Plan p = b.plan();
  EXPECT_TRUE(refused(at(p, af).slots[0], Reason::kOperandAliasesSelf, v));
}

// a = clone(x); r0 = select(a, 0, 0); r1 = select(a, 0, 1); out = afv2(bases=[r0, r1])
// Two bases in one buffer, disjoint: both may be written. The same row twice:
// the second must stay cloned.
TEST(Slots, BasesInOneBufferAreWrittenOnlyWhereDisjoint) {
  for (bool same_row : {false, true}) {
    Builder b;
    NodeId a = b.clone_of_input({2, 4});
    NodeId r0 = b.view(a, contiguous({4}));
    NodeId r1 = b.view(a, contiguous({4}, same_row ? 0 : 4));
    auto [af, items] = b.auto_functionalized({r0, r1});
    b.output({b.op({items[0], items[1]}, {4})});
    Plan p = b.plan();
    EXPECT_TRUE(at(p, af).slots[0].in_place);
    EXPECT_EQ(at(p, af).slots[1].in_place, !same_row);
    if (same_row) {
      EXPECT_EQ(at(p, af).action, Action::kPartialInplace);
      EXPECT_EQ(at(p, af).slots[1].reason, Reason::kOperandAliasesSelf);
    }
  }
}

// out = afv2(bases=[x]) with x an input the node already writes (as another
// pass left it); a = clone(y) ... a second base x[...] may not be written too.
TEST(Slots, ABaseAlreadyWrittenCountsAsAWrite) {
  Builder b;
  NodeId a = b.clone_of_input({4});
  NodeId alias = b.view(a, contiguous({4}));
  auto [af, items] = b.auto_functionalized({a, alias}, {}, {0});
  b.output({items[0], items[1]});
  Plan p = b.plan();
  EXPECT_TRUE(at(p, af).slots[0].in_place);
  EXPECT_EQ(at(p, af).slots[1].reason, Reason::kOperandAliasesSelf);
  EXPECT_EQ(at(p, af).action, Action::kKeep);
}

// out = afv2(bases=[x]); copy_(x, out[0]): a custom op mutating the input x;
// with x written in place the copy_ copies x onto itself and goes.
TEST(Slots, AnInputWrittenBackIsWrittenInPlaceAndItsCopyGoes) {
  Builder b;
  NodeId x = b.input({4});
  auto [af, items] = b.auto_functionalized({x});
  NodeId back = b.write_back(x, items[0]);
  b.output({});
  Plan p = b.plan();
  EXPECT_TRUE(at(p, af).slots[0].in_place);
  EXPECT_EQ(at(p, back).action, Action::kRemoveCopy);
}

// out = afv2(bases=[x]); r = mul(x, 2); copy_(x, out[0]): x's old value is read
// before the write-back.
TEST(Slots, AnInputReadBeforeItsWriteBackStaysCloned) {
  Builder b;
  NodeId x = b.input({4});
  auto [af, items] = b.auto_functionalized({x});
  NodeId r = b.op({x}, {4});
  NodeId back = b.write_back(x, items[0]);
  b.output({r});
  Plan p = b.plan();
  EXPECT_TRUE(refused(at(p, af).slots[0], Reason::kUsedLater, r));
  EXPECT_EQ(at(p, back).action, Action::kKeep);
}

TEST(Slots, AnInputNeverWrittenBackStaysCloned) {
  Builder b;
  NodeId x = b.input({4});
  auto [af, items] = b.auto_functionalized({x});
  b.output({items[0]});
  Plan p = b.plan();
  EXPECT_EQ(at(p, af).slots[0].reason, Reason::kInputNotWrittenBack);
}

// out = afv2(bases=[x]); c = clone(y); copy_(x, c); return out[0]:
// the write-back replaces x's contents while the new value is still returned.
TEST(Slots, AResultReadAfterAWriteBackOfSomethingElseStaysCloned) {
  Builder b;
  NodeId x = b.input({4});
  NodeId y = b.input({4});
  auto [af, items] = b.auto_functionalized({x});
  NodeId c = b.op({y}, {4}, false);
  b.write_back(x, c);
  NodeId out = b.output({items[0]});
  Plan p = b.plan();
  EXPECT_TRUE(refused(at(p, af).slots[0], Reason::kResultReadAfterWriteBack, out));
}

// r = add(x, 1); copy_(x, r): ATen ops write into written-back inputs only
// when asked (PlanOptions), since the stock pass never does.
TEST(Slots, TheEpilogueRuleForOpsIsAnOption) {
  for (bool reuse : {false, true}) {
    Builder b;
    NodeId x = b.input({4});
    NodeId r = b.op({x}, {4});
    NodeId back = b.write_back(x, r);
    b.output({});
    Plan p = b.plan(reusing_written_back_inputs(reuse));
    EXPECT_EQ(at(p, r).action, reuse ? Action::kInplace : Action::kKeep);
    EXPECT_EQ(at(p, back).action, reuse ? Action::kRemoveCopy : Action::kKeep);
    if (!reuse) EXPECT_EQ(at(p, r).reason, Reason::kSelfIsInput);
  }
}

// k, v: inputs in one storage (k = kv[0], v = kv[1] when disjoint);
// rk = add(k, 1); s = mul(v, 2); rv = add(v, 1); copy_(k, rk); copy_(v, rv)
// Disjoint, each input is written in place (v's read by s, between rk and k's
// write-back, is of other memory); overlapping, neither is.
TEST(Slots, InputsSharingAStorageButNoElementAreWrittenBackLikeSeparateInputs) {
  for (Int v_offset : {Int{4}, Int{2}}) {
    Builder b;
    NodeId k = b.input({4});
    NodeId v = b.input_sharing(k, strided({4}, {1}, v_offset));
    NodeId rk = b.op({k}, {4});
    NodeId s = b.op({v}, {4});
    NodeId rv = b.op({v}, {4});
    b.write_back(k, rk);
    b.write_back(v, rv);
    b.output({s});
    Plan p = b.plan(reusing_written_back_inputs());
    const bool disjoint = v_offset == 4;
    SCOPED_TRACE(disjoint ? "disjoint" : "overlapping");
    EXPECT_EQ(at(p, rk).action, disjoint ? Action::kInplace : Action::kKeep);
    EXPECT_EQ(at(p, rv).action, disjoint ? Action::kInplace : Action::kKeep);
    if (!disjoint) EXPECT_EQ(at(p, rk).reason, Reason::kInputShared);
  }
}

// The same with v's storage offset a symbol (dynamic shapes): no geometry
// shows v past k's elements. Under AOTAutograd's contract (inputs sharing a
// storage, one mutated, are passed apart only when disjoint) both go in place,
// and views of rv (e = expand(rv), then a reshape of e, which needs e's
// layout) move with it to v's symbolic offset.
TEST(Slots, InputsSharingAStorageAtASymbolicOffsetNeedAotAutogradsContract) {
  for (bool contract : {false, true}) {
    Builder b;
    NodeId k = b.input({4});
    Geometry at_symbol = strided({4}, {1});
    at_symbol.offset = Extent::symbolic(0);
    at_symbol.proven_dense_order = std::vector<int32_t>{0};  // as the frontend proves it
    NodeId v = b.input_sharing(k, at_symbol);
    NodeId rk = b.op({k}, {4});
    NodeId rv = b.op({v}, {4});
    NodeId e = b.view(rv, strided({2, 4}, {0, 1}));
    NodeId r = b.view(e, strided({8}, {1}), LayoutUse::kReshape);  // reshape: copies, or not
    NodeId s = b.op({r}, {8}, /*has_inplace=*/false);
    b.write_back(k, rk);
    b.write_back(v, rv);
    b.output({s});
    PlanOptions options = reusing_written_back_inputs();
    options.shared_inputs_disjoint = contract;
    Plan p = b.plan(options);
    SCOPED_TRACE(contract ? "contract" : "no contract");
    for (NodeId r : {rk, rv}) {
      EXPECT_EQ(at(p, r).action, contract ? Action::kInplace : Action::kKeep) << reason_name(at(p, r).reason);
      if (!contract) EXPECT_EQ(at(p, r).reason, Reason::kInputShared);
    }
  }
}

// r = add(x, 1); s = relu(r); copy_(x, r): r goes into x, but then relu may not
// write into r's buffer (x): the write-back still copies r.
TEST(Slots, AWriteBackReadingAnotherValueOfTheInputBlocksLaterWrites) {
  Builder b;
  NodeId x = b.input({4});
  NodeId r = b.op({x}, {4});
  NodeId s = b.op({r}, {4});
  NodeId back = b.write_back(x, r);
  b.output({s});
  Plan p = b.plan(reusing_written_back_inputs());
  EXPECT_EQ(at(p, r).action, Action::kInplace);
  EXPECT_TRUE(refused(at(p, s), Reason::kUsedLater, back));
  EXPECT_EQ(at(p, back).action, Action::kRemoveCopy);
}

// a = clone(x); r = add(a, 1); n = sym_size(a): reading a's size is no use of its memory.
TEST(Planner, MetadataReadsDoNotKeepABufferAlive) {
  Builder b;
  NodeId a = b.clone_of_input({4});
  NodeId r = b.op({a}, {4});
  b.metadata_read(a);
  b.output({r});
  Plan p = b.plan();
  EXPECT_EQ(at(p, r).action, Action::kInplace);
}

// ---- _foreach_* ops: one slot per element of the first list, all or none

// a, b = clone(x), clone(y); ys = _foreach_mul([a, b], 2); return ys
// Both elements are dead afterwards: _foreach_mul_([a, b], 2).
TEST(Foreach, DeadElementsAreWrittenInPlace) {
  Builder b;
  NodeId a = b.clone_of_input({4});
  NodeId c = b.clone_of_input({3});
  auto [fe, items] = b.foreach_op({a, c});
  b.output({items[0], items[1]});
  Plan p = b.plan();
  EXPECT_EQ(at(p, fe).action, Action::kInplace);
  EXPECT_TRUE(at(p, fe).slots[0].in_place && at(p, fe).slots[1].in_place);
}

// ys = _foreach_mul([a, b], 2); r = add(b, 1): b is read later, and the in-place
// form would write b too, so the whole node stays functional (a included).
TEST(Foreach, OneElementReadLaterKeepsTheWholeNode) {
  Builder b;
  NodeId a = b.clone_of_input({4});
  NodeId c = b.clone_of_input({3});
  auto [fe, items] = b.foreach_op({a, c});
  NodeId r = b.op({c}, {3}, false);
  b.output({items[0], items[1], r});
  Plan p = b.plan();
  EXPECT_EQ(at(p, fe).action, Action::kKeep);
  EXPECT_TRUE(refused(at(p, fe), Reason::kUsedLater, r));
  EXPECT_FALSE(at(p, fe).slots[0].in_place);  // acceptable alone, but not taken without b
}

// ys = _foreach_add([a, b], [b, a]): writing a in place would change what the
// second element reads (b's other operand is a). Refused.
TEST(Foreach, AnElementReadByAnotherElementsOperandIsRefused) {
  Builder b;
  NodeId a = b.clone_of_input({4});
  NodeId c = b.clone_of_input({4});
  auto [fe, items] = b.foreach_op({a, c}, {c, a});
  b.output({items[0], items[1]});
  Plan p = b.plan();
  EXPECT_EQ(at(p, fe).action, Action::kKeep);
}

// The same tensor twice in the list: the in-place form would update it twice.
TEST(Foreach, AnElementListedTwiceIsRefused) {
  Builder b;
  NodeId a = b.clone_of_input({4});
  auto [fe, items] = b.foreach_op({a, a});
  b.output({items[0], items[1]});
  EXPECT_EQ(at(b.plan(), fe).action, Action::kKeep);
}

// Optimizer state: ys = _foreach_mul([m, v], 0.9); copy_(m, ys[0]); copy_(v, ys[1])
// With the epilogue rule the state is updated in place and both copies go.
TEST(Foreach, StateWrittenBackIsUpdatedInPlaceWithTheEpilogueRule) {
  for (bool reuse : {false, true}) {
    Builder b;
    NodeId m = b.input({4});
    NodeId v = b.input({3});
    auto [fe, items] = b.foreach_op({m, v});
    std::vector<NodeId> copies = b.write_back_each({m, v}, items);
    b.output({});
    Plan p = b.plan(reusing_written_back_inputs(reuse));
    EXPECT_EQ(at(p, fe).action, reuse ? Action::kInplace : Action::kKeep);
    for (NodeId copy : copies) EXPECT_EQ(at(p, copy).action, reuse ? Action::kRemoveCopy : Action::kKeep);
  }
}

// ---- dead operands as destinations (PlanOptions::dead_operand_destinations)

namespace {

// Adds a destination slot (the result may go into `target` this way) to op `i`.
void add_destination(Builder& b, NodeId i, NodeId target, Destination via) {
  WriteSlot s{target, 0, 0, false};
  s.via = via;
  b.g.at(i).slots.push_back(s);
}

// z = add(a, other) [4], which may go into `other` instead (add commutes: other.add_(a)).
NodeId add_offering_other(Builder& b, NodeId a, NodeId other) {
  NodeId z = b.op({a, other}, {4});
  add_destination(b, z, other, Destination::kSwapped);
  return z;
}

}  // namespace

// a = f(x); c = g(y); z = add(a, c); return a, z
// a is returned, so add may not write a; c is dead: c.add_(a).
TEST(Destinations, ACommutativeOpWritesItsDeadOtherOperand) {
  for (bool on : {false, true}) {
    Builder b;
    NodeId a = b.clone_of_input({4});
    NodeId c = b.clone_of_input({4});
    NodeId z = add_offering_other(b, a, c);
    b.output({a, z});
    Plan p = on ? b.plan(destinations_on()) : b.plan();
    if (on) {
      EXPECT_TRUE(rewritten(at(p, z), Action::kInplace, c));
      EXPECT_EQ(at(p, z).slot, 1);
    } else {
      EXPECT_EQ(at(p, z).action, Action::kKeep);
      EXPECT_EQ(at(p, z).reason, Reason::kUsedLater);
    }
  }
}

// g = threshold_backward(z, a): no in-place form; z dead -> out= into z.
TEST(Destinations, AnOpWithoutInplaceFormWritesADeadOperandThroughOut) {
  Builder b;
  NodeId a = b.clone_of_input({4});
  NodeId z = b.clone_of_input({4});
  NodeId g = b.op({z, a}, {4}, /*has_inplace=*/false);
  add_destination(b, g, z, Destination::kOut);
  add_destination(b, g, a, Destination::kOut);
  b.output({a, g});
  Plan p = b.plan(destinations_on());
  EXPECT_TRUE(rewritten(at(p, g), Action::kInplace, z));
  EXPECT_EQ(at(p, g).slot, 1);
}

// Both operands are read later: nothing to write into; the node reports self's refusal.
TEST(Destinations, NoDeadOperandKeepsTheNodeWithSelfsReason) {
  Builder b;
  NodeId a = b.clone_of_input({4});
  NodeId c = b.clone_of_input({4});
  NodeId z = add_offering_other(b, a, c);
  b.output({a, c, z});
  Plan p = b.plan(destinations_on());
  EXPECT_EQ(at(p, z).action, Action::kKeep);
  EXPECT_TRUE(refused(at(p, z), Reason::kUsedLater, static_cast<NodeId>(b.g.size()) - 1));
}

// z = add(a, y) with y a graph input: an input is never a destination unless
// written back (the epilogue rule), like self.
TEST(Destinations, AGraphInputIsNotADestination) {
  Builder b;
  NodeId a = b.clone_of_input({4});
  NodeId y = b.input({4});
  NodeId z = add_offering_other(b, a, y);
  b.output({a, z});
  EXPECT_EQ(at(b.plan(destinations_on()), z).action, Action::kKeep);
}

// z = add(a, c) with c of shape [1] broadcast to [4]: the result does not fit c.
TEST(Destinations, AnOperandOfAnotherShapeIsNotADestination) {
  Builder b;
  NodeId a = b.clone_of_input({4});
  NodeId c = b.clone_of_input({1});
  NodeId z = add_offering_other(b, a, c);
  b.output({a, z});
  EXPECT_EQ(at(b.plan(destinations_on()), z).action, Action::kKeep);
}

// ---- a comparison's cast (WriteSlot::cast; PlanOptions::dead_operand_destinations)

namespace {
constexpr int32_t kFloat = 0;
constexpr int32_t kBool = 1;
}  // namespace

// a = clone(x); c = ge(a, y) [bool]; n = _to_copy(c, float); z = mul(n, 2); return z
// -> ge_(a, y) stores the converted booleans in a; the cast goes, z reads a.
TEST(CastSlots, AComparisonWritesItsSelfThroughItsCast) {
  for (bool on : {false, true}) {
    Builder b;
    NodeId a = b.clone_of_input({4});
    NodeId y = b.input({4});
    NodeId c = b.op_of_dtype({a, y}, {4}, kBool);
    NodeId n = b.cast(c, kFloat);
    NodeId z = b.op({n}, {4});
    b.output({z});
    Plan p = on ? b.plan(destinations_on()) : b.plan();
    if (on) {
      EXPECT_TRUE(rewritten(at(p, c), Action::kInplace, a));
      EXPECT_EQ(at(p, c).slot, 1);
      EXPECT_TRUE(rewritten(at(p, n), Action::kRemoveCast, a));
      EXPECT_TRUE(rewritten(at(p, z), Action::kInplace, a));  // n's value lives in a
    } else {
      EXPECT_EQ(at(p, c).action, Action::kKeep);
      EXPECT_EQ(at(p, c).reason, Reason::kMetadataMismatch);
      EXPECT_EQ(at(p, n).action, Action::kKeep);
    }
  }
}

// a = clone(x) [self_size]; c = ge(a, y) [4, bool]; n = _to_copy(c, cast_dtype);
// z = mul(n, ...); the cast must stay where a cannot hold n's value or a's
// old values are read later.
TEST(CastSlots, TheCastStaysWhereSelfCannotHoldItsValue) {
  struct Case {
    const char* why;
    Int self_size;
    int32_t cast_dtype;
    bool self_read_later;
  };
  for (const Case& k :
       {Case{"self read later", 4, kFloat, true}, Case{"another dtype than self's", 4, 2, false},
        Case{"broadcast into a larger result", 1, kFloat, false}}) {
    Builder b;
    NodeId a = b.clone_of_input({k.self_size});
    NodeId y = b.input({4});
    NodeId c = b.op_of_dtype({a, y}, {4}, kBool);
    NodeId n = b.cast(c, k.cast_dtype);
    b.output({k.self_read_later ? b.op({n, a}, {4}) : b.op({n}, {4})});
    Plan p = b.plan(destinations_on());
    EXPECT_EQ(at(p, c).action, Action::kKeep) << k.why;
    EXPECT_EQ(at(p, n).action, Action::kKeep) << k.why;
  }
}

TEST(CastSlots, TheBuilderRefusesACastOfAnOpWithoutSelf) {
  GraphBuilder b;
  OpTraits read_only;
  read_only.reads_memory = false;
  NodeId x = b.input("x", {TensorRecord{0, contiguous({4}), 0}});
  NodeId s = b.op("sym_size", read_only, std::nullopt, {x}, {});
  EXPECT_THROW(b.cast_slot(s, x), std::invalid_argument);
}
