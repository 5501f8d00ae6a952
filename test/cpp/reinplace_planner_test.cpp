// Planner tests on hand-built IR: each builds the functional graph in the
// comment above it and checks the decisions, not the printed graph.
#include "reinplace_planner.h"

#include <gtest/gtest.h>

#include "test_geometry_helpers.h"

using namespace fxinplace::core;
using fxinplace::core::testing::contiguous;

namespace {

class Builder {
 public:
  NodeId input(std::vector<Int> sizes) {
    Node n;
    n.kind = NodeKind::kInput;
    n.results.push_back(value(g.new_storage(), contiguous(sizes)));
    return g.add(std::move(n));
  }
  // A functional op writing fresh memory of `sizes`, reading `operands`.
  NodeId op(std::vector<NodeId> operands, std::vector<Int> sizes, bool has_inplace = true,
            bool pointwise = true) {
    Node n;
    n.kind = NodeKind::kOp;
    n.self_is_tensor = true;
    n.has_inplace = has_inplace;
    n.pointwise = pointwise;
    n.self = operands.at(0);
    n.operands = operands;
    n.results.push_back(value(g.new_storage(), contiguous(sizes)));
    return g.add(std::move(n));
  }
  NodeId view(NodeId base, Geometry geom) {
    Node n;
    n.kind = NodeKind::kOp;
    n.view = ViewKind::kSingle;
    n.self_is_tensor = true;
    n.self = base;
    n.view_of = base;
    n.layout_parent = base;
    n.operands = {base};
    n.results.push_back(value(g.at(base).results[0].storage, geom));
    return g.add(std::move(n));
  }
  NodeId select_scatter(NodeId base, NodeId src, Int dim, Int index) {
    Node n;
    n.kind = NodeKind::kOp;
    n.self_is_tensor = true;
    n.self = base;
    n.scatter_src = src;
    n.scatter.kind = ScatterKind::kSelect;
    n.scatter.ints = {dim, index};
    n.scatter.replayable = true;
    n.operands = {base, src};
    n.results.push_back(value(g.new_storage(), g.geometries().at(g.at(base).results[0].geom)));
    return g.add(std::move(n));
  }
  NodeId output(std::vector<NodeId> operands) {
    Node n;
    n.kind = NodeKind::kOutput;
    n.operands = operands;
    return g.add(std::move(n));
  }
  Plan plan() { return plan_reinplace(g); }

  Graph g;

 private:
  TensorValue value(StorageId s, const Geometry& geom) {
    TensorValue v;
    v.storage = s;
    v.geom = g.geom(geom);
    v.shape = g.shape(geom.sizes);
    v.dtype = 0;
    return v;
  }
};

const Decision& at(const Plan& p, NodeId n) { return p.decisions.at(static_cast<size_t>(n)); }

}  // namespace

// a = clone(x); b = relu(a); c = mul(b, 2); return c
TEST(Planner, ChainReinplacesEverythingButTheReadOfTheInput) {
  Builder b;
  NodeId x = b.input({4, 4});
  NodeId a = b.op({x}, {4, 4}, /*has_inplace=*/false);
  NodeId r = b.op({a}, {4, 4});
  NodeId m = b.op({r}, {4, 4});
  b.output({m});
  Plan p = b.plan();
  EXPECT_EQ(at(p, a).reason, Reason::kNoInplaceVariant);
  EXPECT_EQ(at(p, r).action, Action::kInplace);
  EXPECT_EQ(at(p, r).replacement, a);
  EXPECT_EQ(at(p, m).action, Action::kInplace);
  EXPECT_EQ(at(p, m).replacement, a);  // users of m read a, through r's rewrite
  EXPECT_EQ(p.num_inplace(), 2);
}

// a = clone(x); b = add(a, 1); c = mul(a, 2); return b, c
TEST(Planner, ALaterReadBlocksAndIsNamed) {
  Builder b;
  NodeId x = b.input({4});
  NodeId a = b.op({x}, {4}, false);
  NodeId add = b.op({a}, {4});
  NodeId mul = b.op({a}, {4});
  b.output({add, mul});
  Plan p = b.plan();
  EXPECT_EQ(at(p, add).reason, Reason::kUsedLater);
  EXPECT_EQ(at(p, add).culprit, mul);
  EXPECT_EQ(at(p, mul).action, Action::kInplace);
}

// a = clone(x); v = select(a, 0, 0); f = fill(v); s = select_scatter(a, f, 0, 0); return s
TEST(Planner, ScatterInvertingAViewIsRemoved) {
  Builder b;
  NodeId x = b.input({4, 4});
  NodeId a = b.op({x}, {4, 4}, false);
  Geometry row0 = contiguous({4});
  NodeId v = b.view(a, row0);
  NodeId f = b.op({v}, {4});
  NodeId s = b.select_scatter(a, f, 0, 0);
  b.output({s});
  Plan p = b.plan();
  EXPECT_EQ(at(p, f).action, Action::kInplace);
  EXPECT_EQ(at(p, s).action, Action::kRemoveScatter);
  EXPECT_EQ(at(p, s).replacement, a);
  EXPECT_EQ(p.walks, 1);
}

// a = clone(x); v = select(a, 0, 0); f = fill(v); s = select_scatter(a, f, 0, 0)
// m = mul(s, 2); d = add(s, 1); return m, d
// Once `s` is removed its readers read `a`, so `m` may not write into `a`
// while `d` still reads it (no view of `s` exists to link the two classes).
TEST(Planner, ReadsOfARemovedScatterAreReadsOfItsBase) {
  Builder b;
  NodeId x = b.input({4, 4});
  NodeId a = b.op({x}, {4, 4}, false);
  NodeId v = b.view(a, contiguous({4}));
  NodeId f = b.op({v}, {4});
  NodeId s = b.select_scatter(a, f, 0, 0);
  NodeId m = b.op({s}, {4, 4});
  NodeId d = b.op({s}, {4, 4});
  b.output({m, d});
  Plan p = b.plan();
  EXPECT_EQ(at(p, s).action, Action::kRemoveScatter);
  EXPECT_EQ(at(p, m).reason, Reason::kUsedLater);
  EXPECT_EQ(at(p, m).culprit, d);
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
  EXPECT_EQ(at(p, s).action, Action::kScatterToCopy);
  EXPECT_EQ(at(p, s).replacement, a);
}

// a = clone(x); v = select(a,0,0); c = fill(v); e = flip(c); d = select_scatter(a, e, 0, 0)
// The stock pass removes d because its geometry matches, though e (flip has no
// in-place form) never lands in a: the verifier must keep d.
TEST(Planner, VerifierKeepsAScatterWhoseSourceNeverLandsInPlace) {
  Builder b;
  NodeId x = b.input({4, 4});
  NodeId a = b.op({x}, {4, 4}, false);
  NodeId v = b.view(a, contiguous({4}));
  NodeId c = b.op({v}, {4});
  NodeId e = b.op({c}, {4}, /*has_inplace=*/false, /*pointwise=*/false);
  NodeId d = b.select_scatter(a, e, 0, 0);
  b.output({d});
  Plan p = b.plan();
  EXPECT_EQ(p.walks, 2);
  EXPECT_EQ(at(p, c).reason, Reason::kScatterUnproven);
  EXPECT_EQ(at(p, c).culprit, d);
  EXPECT_EQ(at(p, d).action, Action::kScatterToCopy);
}

// a = clone(x); t = transpose(a); b = add(a, t): writing a while reading a.T is wrong.
TEST(Planner, OperandAliasingSelfWithOtherGeometryIsRefused) {
  Builder b;
  NodeId x = b.input({3, 3});
  NodeId a = b.op({x}, {3, 3}, false);
  Geometry transposed = contiguous({3, 3});
  std::swap(transposed.strides[0], transposed.strides[1]);
  NodeId t = b.view(a, transposed);
  NodeId add = b.op({a, t}, {3, 3});
  b.output({add});
  Plan p = b.plan();
  EXPECT_EQ(at(p, add).reason, Reason::kOperandAliasesSelf);
  EXPECT_EQ(at(p, add).culprit, t);
}

// a = clone(x); same = alias(a); b = add(a, same): elementwise on identical memory is fine.
TEST(Planner, PointwiseOpMayReadSelfThroughAnIdenticalView) {
  Builder b;
  NodeId x = b.input({3, 3});
  NodeId a = b.op({x}, {3, 3}, false);
  NodeId same = b.view(a, contiguous({3, 3}));
  NodeId add = b.op({a, same}, {3, 3});
  b.output({add});
  EXPECT_EQ(at(b.plan(), add).action, Action::kInplace);
}

// a = clone(x); b = mul(a, a)
TEST(Planner, SelfPassedTwiceIsRefused) {
  Builder b;
  NodeId x = b.input({3});
  NodeId a = b.op({x}, {3}, false);
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
  NodeId x = b.input({1, 4});
  NodeId a = b.op({x}, {1, 4}, false);
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
  NodeId x = b.input({2});
  NodeId prev = b.op({x}, {2}, false);
  for (int i = 0; i < 5000; ++i) prev = b.op({prev}, {2});
  b.output({prev});
  Plan p = b.plan();
  EXPECT_EQ(p.walks, 1);
  EXPECT_EQ(p.num_inplace(), 5000);
}

// a = clone(x); r = slice(a, 0, 1, 4); b = add(r, 1); s = as_strided(b, [1], [1], 2); return s
// b would move into a at offset 1, and as_strided addresses storage offset 2
// absolutely: it would read a different element. Refused.
TEST(Planner, AsStridedOfTheResultBlocksAMoveToAnotherOffset) {
  Builder b;
  NodeId x = b.input({4});
  NodeId a = b.op({x}, {4}, false);
  NodeId r = b.view(a, contiguous({3}, 1));
  NodeId add = b.op({r}, {3});
  NodeId s = b.view(add, contiguous({1}, 2));
  b.g.at(s).layout_use = LayoutUse::kAbsolute;
  b.output({s});
  EXPECT_EQ(at(b.plan(), add).reason, Reason::kLayoutSensitiveUse);
}

// Same graph with a logical view (select) instead: the move is invisible.
TEST(Planner, LogicalViewOfTheResultAllowsTheMove) {
  Builder b;
  NodeId x = b.input({4});
  NodeId a = b.op({x}, {4}, false);
  NodeId r = b.view(a, contiguous({3}, 1));
  NodeId add = b.op({r}, {3});
  NodeId s = b.view(add, contiguous({}, 2));
  b.output({s});
  EXPECT_EQ(at(b.plan(), add).action, Action::kInplace);
}

// a = clone(x); v1 = alias(a); ...; v200000 = alias(v199999); b = add(v200000, a)
// Working out where v200000 lives walks the whole chain: it must not recurse.
TEST(Planner, DeepViewChainsAreWalkedWithoutRecursion) {
  Builder b;
  NodeId x = b.input({4});
  NodeId a = b.op({x}, {4}, false);
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
    NodeId x = b.input({3, 4});
    NodeId y = b.op({x}, {3, 4}, /*has_inplace=*/false);
    Node& yn = b.g.at(y);
    yn.results[0].geom = b.g.geom(fxinplace::core::testing::strided({3, 4}, {1, 3}));
    NodeId z = b.op({y}, {3, 4});
    NodeId w = b.op({z}, {3, 4}, /*has_inplace=*/false);
    b.output(returned ? std::vector<NodeId>{w} : std::vector<NodeId>{});
    Plan p = b.plan();
    if (returned) {
      EXPECT_EQ(at(p, z).reason, Reason::kLayoutSensitiveUse);
    } else {
      EXPECT_EQ(at(p, z).action, Action::kInplace);
    }
  }
}
