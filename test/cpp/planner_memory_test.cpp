// The memory walk (memory_plan.h) on hand-built IR: which op writes its result
// into which dead buffer, and why the others still allocate.
#include <gtest/gtest.h>

#include "memory_plan.h"
#include "planner_test_builder.h"
#include "reinplace_planner.h"

using namespace fxinplace::core;
using namespace fxinplace::core::testing;

namespace {

PlanOptions planning_memory() {
  PlanOptions o;
  o.outputs_taken_by_torch_compile = true;
  o.plan_memory = true;
  return o;
}

const MemoryDecision& memory_at(const Plan& p, NodeId n) {
  return p.memory.decisions.at(static_cast<size_t>(n));
}

// `n` writes its result into `donor`'s dead buffer, laid out anew
// (as_strided) or as it is.
void expect_reused(const Plan& p, NodeId n, NodeId donor, bool restrided) {
  EXPECT_EQ(memory_at(p, n).reason, MemoryReason::kReused);
  EXPECT_EQ(memory_at(p, n).donor, donor);
  EXPECT_EQ(memory_at(p, n).restrided, restrided);
}

// An op that allocates its result as mm does: no in-place form, not
// pointwise; `bytes` of `sizes`, an out= kernel on `device` (or none).
// `restridable`: the result may be laid out anew over a buffer of its byte
// count (it or its size-1 dims' strides need not be the recorded ones).
NodeId allocating(Builder& b, std::vector<NodeId> reads, std::vector<Int> sizes, Int bytes,
                  bool restridable = false, bool out_kernel = true, int32_t device = 0) {
  NodeId n = b.op(std::move(reads), std::move(sizes), /*has_inplace=*/false, /*pointwise=*/false);
  b.memory_facts(n, bytes, out_kernel, device, restridable);
  return n;
}

// mm-like; 64 bytes of {4, 4}.
NodeId matmul(Builder& b, NodeId x, NodeId w, bool out_kernel = true, int32_t device = 0) {
  return allocating(b, {x, w}, {4, 4}, 64, /*restridable=*/false, out_kernel, device);
}

}  // namespace

// m1 = mm(x, w); m2 = mm(m1, w); m3 = mm(m2, w); m4 = mm(m3, w); return m4
TEST(MemoryPlan, AChainTakesTheBuffersThatDied) {
  Builder b;
  NodeId x = b.input({4, 4});
  NodeId w = b.input({4, 4});
  NodeId m1 = matmul(b, x, w);
  NodeId m2 = matmul(b, m1, w);
  NodeId m3 = matmul(b, m2, w);
  NodeId m4 = matmul(b, m3, w);
  b.output({m4});
  Plan p = b.plan(planning_memory());
  EXPECT_EQ(memory_at(p, m1).reason, MemoryReason::kNoDeadBuffer);
  EXPECT_EQ(memory_at(p, m2).reason, MemoryReason::kNoDeadBuffer);  // m1 is its operand
  EXPECT_EQ(memory_at(p, m3).reason, MemoryReason::kReused);
  EXPECT_EQ(memory_at(p, m3).donor, m1);
  EXPECT_EQ(memory_at(p, m3).freed_after, m2);
  // m3's buffer is m1's: m3 is read by m4, so m1's buffer is not free for m4,
  // but m2's is.
  EXPECT_EQ(memory_at(p, m4).donor, m2);
  EXPECT_EQ(p.memory.bytes_reused, 128);
}

TEST(MemoryPlan, NothingWithoutTheOption) {
  Builder b;
  NodeId x = b.input({4, 4});
  NodeId m1 = matmul(b, x, x);
  NodeId m2 = matmul(b, m1, x);
  b.output({matmul(b, m2, x)});
  EXPECT_TRUE(b.plan(under_torch_compile()).memory.decisions.empty());
}

// m1 = mm(x, w); opaque(m1); m2 = mm(x, w); m3 = mm(m2, w): an opaque node
// read m1 (it may keep an alias): m1's buffer never dies.
TEST(MemoryPlan, ABufferAnOpaqueNodeTouchedIsNeverReused) {
  Builder b;
  NodeId x = b.input({4, 4});
  NodeId w = b.input({4, 4});
  NodeId m1 = matmul(b, x, w);
  b.opaque({m1});
  NodeId m2 = matmul(b, x, w);
  NodeId m3 = matmul(b, m2, w);
  b.output({m3});
  Plan p = b.plan(planning_memory());
  EXPECT_EQ(memory_at(p, m3).reason, MemoryReason::kNoDeadBuffer);
}

// A buffer on another device, or an op without a backend out= kernel.
TEST(MemoryPlan, AnotherDeviceOrNoOutKernelAllocates) {
  Builder b;
  NodeId x = b.input({4, 4});
  NodeId w = b.input({4, 4});
  NodeId m1 = matmul(b, x, w);
  NodeId m2 = matmul(b, m1, w);
  NodeId on_other_device = matmul(b, m2, w, /*out_kernel=*/true, /*device=*/1);
  NodeId composite = matmul(b, on_other_device, w, /*out_kernel=*/false);
  b.output({composite});
  Plan p = b.plan(planning_memory());
  EXPECT_EQ(memory_at(p, on_other_device).reason, MemoryReason::kNoDeadBuffer);
  EXPECT_EQ(memory_at(p, composite).reason, MemoryReason::kNoOutKernel);
}

// a = clone(x); r = relu(a) (re-inplaced into a); m = mm(r, w): relu
// allocates nothing, and a's buffer lives on through r.
TEST(MemoryPlan, AnOpWrittenInPlaceAllocatesNothing) {
  Builder b;
  NodeId a = b.clone_of_input({4, 4});
  b.memory_facts(a, 64, false);
  NodeId r = b.op({a}, {4, 4});
  b.memory_facts(r, 64, true);
  NodeId w = b.input({4, 4});
  NodeId m = matmul(b, r, w);
  NodeId m2 = matmul(b, m, w);
  b.output({m2});
  Plan p = b.plan(planning_memory());
  EXPECT_EQ(memory_at(p, r).reason, MemoryReason::kWrittenInPlace);
  EXPECT_EQ(memory_at(p, m).reason, MemoryReason::kNoDeadBuffer);  // a's buffer is r, m's operand
  EXPECT_EQ(memory_at(p, m2).reason, MemoryReason::kReused);
  EXPECT_EQ(memory_at(p, m2).donor, a);
}

// m1 = mm(x, w) {4, 4}; m2 = mm(m1, w); r = f(m2) {2, 8}; k = f(r) {8, 2};
// return k: r has m1's 64 bytes in another shape and may be laid anywhere
// (as_strided over m1's buffer). k leaves the graph: when the caller gets it
// (or a view of it), it takes no view of another tensor's buffer even though
// m2's is dead and as large; when only the compiled program does (a saved
// activation, a gradient: Node::internal_output), it may.
TEST(MemoryPlan, AResultLaidOutAnewTakesABufferOfItsByteCountUnlessTheCallerGetsIt) {
  enum class Returned { kToTheCaller, kInternally, kInternallyAndAViewToTheCaller };
  for (Returned how :
       {Returned::kToTheCaller, Returned::kInternally, Returned::kInternallyAndAViewToTheCaller}) {
    SCOPED_TRACE(static_cast<int>(how));
    Builder b;
    NodeId x = b.input({4, 4});
    NodeId w = b.input({4, 4});
    NodeId m1 = matmul(b, x, w);
    NodeId m2 = matmul(b, m1, w);
    NodeId r = allocating(b, {m2}, {2, 8}, 64, /*restridable=*/true);
    NodeId k = allocating(b, {r}, {8, 2}, 64, /*restridable=*/true);
    if (how == Returned::kInternallyAndAViewToTheCaller)
      b.output({k, b.view(k, strided({16}, {1}))});
    else
      b.output({k});
    if (how != Returned::kToTheCaller) b.internal_output(k);
    Plan p = b.plan(planning_memory());
    expect_reused(p, r, m1, /*restrided=*/true);
    if (how == Returned::kInternally) {
      expect_reused(p, k, m2, /*restrided=*/true);
    } else {
      EXPECT_EQ(memory_at(p, k).reason, MemoryReason::kNoDeadBuffer);
    }
  }
}

// m1 = mm(x, w) {4, 1}; m2 = mm(m1, v) {4, 1}; m3 = mm(m2, v) {4, 1}; return
// m3: m3 takes m1's buffer of its very layout, but laid out anew (as_strided
// to its recorded strides), as a size-1 dim's recorded stride need not be the
// one the kernel that made the buffer gave it (random pipelines seed 140296);
// without a way to lay it out, it allocates.
TEST(MemoryPlan, AResultWithASizeOneDimTakesABufferOfItsLayoutOnlyLaidOutAnew) {
  for (bool restridable : {true, false}) {
    Builder b;
    NodeId x = b.input({4, 4});
    NodeId v = b.input({1, 1});
    NodeId m1 = allocating(b, {x, x}, {4, 1}, 16, restridable);
    NodeId m2 = allocating(b, {m1, v}, {4, 1}, 16, restridable);
    NodeId m3 = allocating(b, {m2, v}, {4, 1}, 16, restridable);
    NodeId y = b.op({m3}, {}, /*has_inplace=*/false, /*pointwise=*/false);
    b.output({y});
    Plan p = b.plan(planning_memory());
    if (restridable) {
      expect_reused(p, m3, m1, /*restrided=*/true);
    } else {
      EXPECT_EQ(memory_at(p, m3).reason, MemoryReason::kNoDeadBuffer);
    }
  }
}

// saved (donated), g: s = sin(saved); m = mul(g, s); r = neg(m); return r.
// sin reads saved for the last time: written in place into it. mul goes into
// that buffer too (s dies there); neg's result is returned, so it may not.
TEST(MemoryPlan, ADonatedInputIsWrittenInPlaceButReturnsNothing) {
  Builder b;
  NodeId saved = b.input({4, 4});
  b.memory_facts(saved, 64, false);
  b.donated(saved);
  NodeId g = b.input({4, 4});
  NodeId s = b.op({saved}, {4, 4});
  NodeId m = b.op({s, g}, {4, 4});
  NodeId r = b.op({m}, {4, 4});
  b.output({r});
  Plan p = b.plan(planning_memory());
  EXPECT_EQ(p.decisions.at(static_cast<size_t>(s)).action, Action::kInplace);
  EXPECT_EQ(p.decisions.at(static_cast<size_t>(m)).action, Action::kInplace);
  EXPECT_EQ(p.decisions.at(static_cast<size_t>(r)).reason, Reason::kReturnedFromDonatedInput);
}

// saved (donated): t = sum(saved) (saved dies); y = mm(w, w) {4, 4}; return
// y, t: y leaves the graph, so it takes no donated input's buffer.
// An internal output (a gradient) neither: it would still live in an input's memory.
TEST(MemoryPlan, AResultThatLeavesTheGraphTakesNoDonatedBuffer) {
  for (bool internal : {false, true}) {
    Builder b;
    NodeId saved = b.input({4, 4});
    b.memory_facts(saved, 64, false);
    b.donated(saved);
    NodeId w = b.input({4, 4});
    NodeId t = b.op({saved}, {}, /*has_inplace=*/false, /*pointwise=*/false);
    NodeId y = matmul(b, w, w);
    b.output({y, t});
    if (internal) b.internal_output(y);
    Plan p = b.plan(planning_memory());
    EXPECT_EQ(memory_at(p, y).reason, MemoryReason::kNoDeadBuffer);
  }
}

// c = ge(a, y) written as ge_(a, y), its cast n removed: c's own buffer never
// exists (its memory is a's), and n allocates nothing, so a later boolean
// result of c's size may not take c's buffer as dead.
TEST(MemoryPlan, AComparisonWrittenThroughItsCastLeavesNoBuffer) {
  Builder b;
  NodeId a = b.clone_of_input({4, 4});
  NodeId y = b.input({4, 4});
  NodeId c = b.op_of_dtype({a, y}, {4, 4}, /*bool*/ 1);
  b.memory_facts(c, 16, true);
  NodeId n = b.cast(c, /*float*/ 0);
  b.memory_facts(n, 64, true);
  NodeId z = b.op({n}, {4, 4});
  NodeId w = b.op_of_dtype({y, y}, {4, 4}, /*bool*/ 1);  // y is an input: w cannot write it
  b.memory_facts(w, 16, true);
  b.output({z, w});
  PlanOptions o = planning_memory();
  o.dead_operand_destinations = true;
  Plan p = b.plan(o);
  ASSERT_EQ(at(p, n).action, Action::kRemoveCast);
  EXPECT_EQ(memory_at(p, n).reason, MemoryReason::kWrittenInPlace);
  EXPECT_NE(memory_at(p, w).donor, c);
  EXPECT_NE(memory_at(p, w).reason, MemoryReason::kReused);
}

// a = f(x) {4, 4}; b = g(x) {2, 8}; s = h(a); big = k(x) {16, 16}; t = h(big);
// u = h(b, t); r = m(t, u) {4, 4}; y = h(r); return y, s. a, of r's layout,
// died before the peak at big: held until r it would raise the peak. b has
// r's byte count and died just before r: r takes it, laid out anew.
TEST(MemoryPlan, ABufferOfTheByteCountThatDiedLaterIsTakenWhereTheLayoutsOneWouldRaiseThePeak) {
  for (bool restridable : {true, false}) {
    SCOPED_TRACE(restridable);
    Builder b;
    NodeId x = b.input({4, 4});
    NodeId a = allocating(b, {x}, {4, 4}, 64, restridable);
    NodeId same_bytes = allocating(b, {x}, {2, 8}, 64, restridable);
    NodeId s = allocating(b, {a}, {}, 4);
    NodeId big = allocating(b, {x}, {16, 16}, 1024);
    NodeId t = allocating(b, {big}, {}, 4);
    NodeId u = allocating(b, {same_bytes, t}, {}, 4);
    NodeId r = allocating(b, {t, u}, {4, 4}, 64, restridable);
    b.output({allocating(b, {r}, {}, 4), s});
    Plan p = b.plan(planning_memory());
    if (restridable) {
      expect_reused(p, r, same_bytes, /*restrided=*/true);
    } else {
      EXPECT_EQ(memory_at(p, r).reason, MemoryReason::kWouldRaisePeak);
    }
  }
}
