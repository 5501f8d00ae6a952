// The rewrite checker on `_foreach_*_` nodes (WriteRule::kForeachInplace):
// element k of the self list gets the functional node's result k, ATen's
// in-place rule holds per element, and no element's operand touches another
// element's self. Tensors are float32 (4-byte).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "check_test_helpers.h"
#include "rewrite_checker.h"

namespace fxinplace::checker {
namespace {

using namespace testing;

struct ForeachOperand {
  std::string arg;    // "self[0]", "other[1]", "scalars"
  std::string value;  // "a", "b" or "a_flipped" (a read backwards)
  int32_t element;    // the list element it belongs to; -1: every element's
};

// F: a = clone(x[0:4]); b = clone(x[4:8]); ys = _foreach_op(<operands>); return (ys[0], ys[1], ...)
// R: a, b as in F; _foreach_op_(<operands>), writing each ys[k] into self[k]; return (self[0], ...)
struct ForeachPair {
  Pair t{8};
  int32_t fa = -1, fb = -1, ra = -1, rb = -1;
  int32_t f_op = -1;
  std::vector<int32_t> ys;          // slots of the functional results
  std::vector<int32_t> f_ys;        // their storages in F
  std::vector<std::string> selves;  // the value each self element is

  ForeachPair() {
    fa = t.f_storage(16);
    fb = t.f_storage(16);
    ra = t.r_storage(16);
    rb = t.r_storage(16);
    const int32_t f_a = t.f(node("a", {operand("self", "x_1", vec(0, 4))}, {copy(vec(fa, 4), vec(0, 4))}));
    const int32_t f_b =
        t.f(node("b", {operand("self", "x_1", vec(0, 4, 4))}, {copy(vec(fb, 4), vec(0, 4, 4))}));
    t.r(node("a", {operand("self", "x_1", vec(0, 4))}, {copy(vec(ra, 4), vec(0, 4))}, f_a));
    t.r(node("b", {operand("self", "x_1", vec(0, 4, 4))}, {copy(vec(rb, 4), vec(0, 4, 4))}, f_b));
  }

  TensorRef ref(const std::string& value, bool rewritten) const {
    const int32_t s = value[0] == 'a' ? (rewritten ? ra : fa) : (rewritten ? rb : fb);
    return value == "a_flipped" ? strided(s, {4}, {-1}, 3) : vec(s, 4);
  }

  // The foreach node in both graphs; `rewrite` false keeps R's out of place.
  void foreach_op(const std::vector<ForeachOperand>& operands, bool rewrite = true, bool pointwise = true) {
    std::vector<Operand> f_reads, r_reads;
    std::vector<int32_t> element_of, self_operands;
    for (const ForeachOperand& o : operands) {
      f_reads.push_back(operand(o.arg, o.value, ref(o.value, false)));
      r_reads.push_back(operand(o.arg, o.value, ref(o.value, true)));
      element_of.push_back(o.element);
      if (o.arg.rfind("self[", 0) == 0) {
        self_operands.push_back(static_cast<int32_t>(f_reads.size()) - 1);
        selves.push_back(o.value);
      }
    }
    std::vector<Effect> f_effects, r_effects;
    for (size_t k = 0; k < selves.size(); ++k) {
      ys.push_back(t.slot("_foreach_mul[" + std::to_string(k) + "]", {4}));
      f_ys.push_back(t.f_storage(16));
      f_effects.push_back(fill(vec(f_ys[k], 4), ys[k]));
      r_effects.push_back(fill(rewrite ? ref(selves[k], true) : vec(t.r_storage(16), 4), ys[k]));
    }
    f_op = t.f(node("_foreach_mul", f_reads, f_effects));
    CheckNode r = node("_foreach_mul", r_reads, r_effects, f_op);
    if (rewrite) {
      r.write_rule = WriteRule::kForeachInplace;
      r.pointwise = pointwise;
      r.self_operands = self_operands;
      r.element_of = element_of;
    }
    t.r(r);
  }

  // Outputs ys[...] (R: the self elements), then `also` (values read after the op).
  void outputs(const std::vector<std::string>& also = {}) {
    std::vector<Operand> f_reads, r_reads;
    for (size_t k = 0; k < ys.size(); ++k) {
      const std::string arg = "output[" + std::to_string(k) + "]";
      f_reads.push_back(operand(arg, "getitem", vec(f_ys[k], 4)));
      r_reads.push_back(operand(arg, selves[k], ref(selves[k], true)));
    }
    for (const std::string& value : also) {
      const std::string arg = "output[" + std::to_string(f_reads.size()) + "]";
      f_reads.push_back(operand(arg, value, ref(value, false)));
      r_reads.push_back(operand(arg, value, ref(value, true)));
    }
    const int32_t f_out = t.f(output(f_reads));
    t.r(output(r_reads, f_out));
  }
};

constexpr int32_t kForeach = 2;  // the foreach node's index in R (after the clones a and b)

TEST(RewriteCheckerForeach, EachElementWrittenWithItsResultIsCorrect) {
  ForeachPair p;
  p.foreach_op({{"self[0]", "a", 0}, {"self[1]", "b", 1}});
  p.outputs();
  expect_ok(p.t.check());
}

TEST(RewriteCheckerForeach, OutOfPlaceAsInTheFunctionalGraphIsCorrect) {
  ForeachPair p;
  p.foreach_op({{"self[0]", "a", 0}, {"self[1]", "b", 1}}, /*rewrite=*/false);
  // R's outputs read the fresh results, not a and b: rebuild them by hand.
  const int32_t f_out = p.t.f(output({operand("output[0]", "getitem", vec(p.f_ys[0], 4))}));
  const TensorRef r_y0 = p.t.p.rewritten.nodes[kForeach].effects[0].dst;
  p.t.r(output({operand("output[0]", "getitem", r_y0)}, f_out));
  expect_ok(p.t.check());
}

TEST(RewriteCheckerForeach, AnElementStillReadAfterTheOpIsCaught) {
  // F returns a as well: in R, a now holds ys[0]. A deliberately wrong rewrite.
  ForeachPair p;
  p.foreach_op({{"self[0]", "a", 0}, {"self[1]", "b", 1}});
  p.outputs({"a"});
  expect_violation(p.t.check(), "wrong_value", kForeach + 1, 2,
                   {"reads output[2] (a) at element [0], which holds _foreach_mul[0]'s value at [0] "
                    "(written by _foreach_mul); the functional graph has the original contents of "
                    "input x_1 at storage element 0 there"});
}

TEST(RewriteCheckerForeach, ElementsReadingExactlyTheirOwnSelfAreCorrect) {
  // _foreach_add_.List([a, b], [a, b]): each element reads exactly its own self.
  ForeachPair p;
  p.foreach_op({{"self[0]", "a", 0}, {"self[1]", "b", 1}, {"other[0]", "a", 0}, {"other[1]", "b", 1}});
  p.outputs();
  expect_ok(p.t.check());
}

TEST(RewriteCheckerForeach, AnOperandOfOneElementTouchingAnotherElementsSelfIsCaught) {
  // _foreach_add_.List([a, b], [b, a]): element 0 reads b, which element 1 writes, in any order.
  ForeachPair p;
  p.foreach_op({{"self[0]", "a", 0}, {"self[1]", "b", 1}, {"other[0]", "b", 0}, {"other[1]", "a", 1}});
  p.outputs();
  expect_violation(p.t.check(), "operand_overlaps_other_element", kForeach, 2,
                   {"writes self[1] (b) in place while operand other[0] (b) (read for element 0) has "
                    "its element [0] in that memory"});
}

TEST(RewriteCheckerForeach, AnOperandOfAnElementOverlappingItsSelfInexactlyIsCaught) {
  ForeachPair p;
  p.foreach_op(
      {{"self[0]", "a", 0}, {"self[1]", "b", 1}, {"other[0]", "a_flipped", 0}, {"other[1]", "b", 1}});
  p.outputs();
  expect_violation(p.t.check(), "operand_overlaps_self", kForeach, 2, {"without being exactly self"});
}

TEST(RewriteCheckerForeach, ANonPointwiseOpMayNotReadItsSelf) {
  ForeachPair p;
  p.foreach_op({{"self[0]", "a", 0}, {"self[1]", "b", 1}, {"other[0]", "a", 0}, {"other[1]", "b", 1}},
               /*rewrite=*/true, /*pointwise=*/false);
  p.outputs();
  expect_violation(p.t.check(), "operand_overlaps_self", kForeach, 2);
}

TEST(RewriteCheckerForeach, TheSameTensorTwiceInTheSelfListIsCaught) {
  ForeachPair p;
  p.foreach_op({{"self[0]", "a", 0}, {"self[1]", "a", 1}});
  p.outputs();
  expect_violation(p.t.check(), "foreach_self_overlap", kForeach, 1,
                   {"writes self[1] (a) in place, but its element [0] shares memory with self[0] (a)"});
}

TEST(RewriteCheckerForeach, AnOperandOfEveryElementMayBeExactlySelfOnlyInAOneElementList) {
  // _foreach_add_.Tensor(self, other): `other` is read for every element.
  ForeachPair one;
  one.foreach_op({{"self[0]", "a", 0}, {"other", "a", -1}});
  one.outputs();
  expect_ok(one.t.check());
  ForeachPair two;
  two.foreach_op({{"self[0]", "a", 0}, {"self[1]", "b", 1}, {"other", "a", -1}});
  two.outputs();
  expect_violation(two.t.check(), "operand_overlaps_other_element", kForeach, 2,
                   {"(read for every element of the list)"});
}

TEST(RewriteCheckerForeach, AnElementOverlappingItselfIsCaught) {
  ForeachPair p;
  p.foreach_op({{"self[0]", "a", 0}});
  p.outputs();
  // self[0] is a.expand-like: one element four times (in F as well, read the same).
  p.t.p.functional.nodes[p.f_op].reads[0].ref = strided(p.fa, {4}, {0});
  p.t.p.rewritten.nodes[kForeach].reads[0].ref = strided(p.ra, {4}, {0});
  p.t.p.rewritten.nodes[kForeach].effects[0].dst = strided(p.ra, {4}, {0});
  expect_violation(p.t.check(), "self_overlap", kForeach, 0);
}

TEST(RewriteCheckerForeach, AnOperandWithoutItsListElementCannotBeChecked) {
  ForeachPair p;
  p.foreach_op({{"self[0]", "a", 0}, {"self[1]", "b", 1}});
  p.outputs();
  p.t.p.rewritten.nodes[kForeach].element_of.pop_back();
  const CheckResult r = p.t.check();
  EXPECT_EQ(r.outcome, Outcome::kCannotCheck) << r.message;
  EXPECT_EQ(r.node, kForeach);
  p.t.p.rewritten.nodes[kForeach].element_of = {0, 0};  // self[1] said to be element 0's
  EXPECT_EQ(p.t.check().outcome, Outcome::kCannotCheck);
}

}  // namespace
}  // namespace fxinplace::checker
