// The rewrite checker's output layouts (rule 2) and Inductor's contract (rule 5,
// inductor_contract.h) on hand-built graphs. Tensors are float32 (4-byte) unless said.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "check_test_helpers.h"
#include "rewrite_checker.h"

namespace fxinplace::checker {
namespace {

using namespace testing;

CheckNode code(CheckNode n, InductorCode c) {
  n.inductor = c;
  return n;
}

// ----------------------------------------------------------------------------
// Rule 2: output layouts.

// F: a = f(x) into a contiguous 2x2 buffer; return a.
// R: the same value in a buffer of the given layout (`nbytes` of storage).
CheckResult output_layout(std::vector<int64_t> strides, int64_t offset, int64_t nbytes,
                          std::vector<int64_t> sizes = {2, 2}) {
  Pair t(4);
  const int32_t a = t.slot("a", sizes);
  const int32_t fa = t.f_storage(16);
  const int32_t f_a = t.f(node("a", {operand("self", "x_1", strided(0, sizes, {sizes[1], 1}))},
                               {fill(strided(fa, sizes, {sizes[1], 1}), a)}));
  const int32_t f_out = t.f(output({operand("output[0]", "a", strided(fa, sizes, {sizes[1], 1}))}));
  const int32_t ra = t.r_storage(nbytes);
  const TensorRef mine = strided(ra, sizes, std::move(strides), offset);
  t.r(node("a", {operand("self", "x_1", strided(0, sizes, {sizes[1], 1}))}, {fill(mine, a)}, f_a));
  t.r(output({operand("output[0]", "a", mine)}, f_out));
  return t.check();
}

TEST(RewriteCheckerLayout, TheSameLayoutPasses) { expect_ok(output_layout({2, 1}, 0, 16)); }

TEST(RewriteCheckerLayout, OtherStridesAreCaught) {
  expect_violation(output_layout({1, 2}, 0, 16), "output_layout", 1, 0,
                   {"has strides [1, 2]", "has strides [2, 1]"});
}

// An output in place in a view of a dead intermediate starts where the view
// does (the stock pass's rewrite too): values, sizes and strides are eager's.
TEST(RewriteCheckerLayout, AnotherStorageOffsetIsNotCompared) { expect_ok(output_layout({2, 1}, 1, 20)); }

TEST(RewriteCheckerLayout, StridesOfDimensionsOfSizeOneAreNotCompared) {
  expect_ok(output_layout({1, 7}, 0, 16, {4, 1}));
}

// ----------------------------------------------------------------------------
// Rule 5: Inductor's contract. The graphs below are checked against themselves
// (every node its own counterpart): they are right as FX runs them, so only
// rule 5 can reject them.

TensorRef mat(int32_t storage) { return strided(storage, {2, 2}, {2, 1}); }
TensorRef mat_t(int32_t storage) { return strided(storage, {2, 2}, {1, 2}); }
TensorRef rows_reversed(int32_t storage) { return strided(storage, {2, 2}, {-2, 1}, 2); }

struct Mirror {
  CheckProblem p;
  explicit Mirror(int64_t n = 4) {
    p.inputs.push_back(InputStorage{"x_1", n * 4, 4, false});
    storage(n * 4, 0);
    p.inductor = true;
    p.inputs_written_back_may_be_written = true;
  }
  int32_t storage(int64_t nbytes, int32_t input = -1, int32_t dtype = 4) {
    for (CheckGraph* g : {&p.functional, &p.rewritten})
      g->storages.push_back(StorageDecl{nbytes, 4, input, dtype});
    return static_cast<int32_t>(p.functional.storages.size()) - 1;
  }
  int32_t slot(std::string name, std::vector<int64_t> sizes) {
    p.slots.push_back(Slot{std::move(name), std::move(sizes), 4, 4});
    return static_cast<int32_t>(p.slots.size()) - 1;
  }
  int32_t add(CheckNode n) {
    const int32_t index = static_cast<int32_t>(p.functional.nodes.size());
    p.functional.nodes.push_back(n);
    n.counterpart = index;
    p.rewritten.nodes.push_back(std::move(n));
    return index;
  }
  CheckResult check() const { return check_rewrite(p); }

  // The nodes most tests below start and end with, over 2x2 values.
  // a = clone(x): x_1 copied into storage `a`.
  void clone_x(int32_t a) {
    add(code(node("clone", {operand("self", "x_1", mat(0))}, {copy(mat(a), mat(0))}),
             InductorCode::kPointwise));
  }
  // `name` = f(self): slot `slot`'s value into storage `into`, lowered as `c`.
  void produce(std::string name, Operand self, int32_t into, int32_t slot, InductorCode c) {
    add(code(node(std::move(name), {std::move(self)}, {fill(mat(into), slot)}), c));
  }
  // clone.op_(other), other being `other_name`'s value in `other_storage`: the
  // new in-place write (pointwise) of slot `op`, then returned.
  void write_op_and_return(int32_t a, std::string other_name, int32_t other_storage, int32_t op) {
    add(code(inplace(node("op",
                          {operand("self", "clone", mat(a)),
                           operand("other", std::move(other_name), mat(other_storage))},
                          {fill(mat(a), op)})),
             InductorCode::kPointwise));
    add(output({operand("output[0]", "op", mat(a))}));
  }
};

// a = clone(x); r = <producer>(a), lowered as `lowered`; [the nodes `between`
// adds, given a's and r's storages]; a.op_(r) (a new in-place write, pointwise);
// return a.
Mirror write_after_producer(const std::string& producer, InductorCode lowered,
                            const std::function<void(Mirror&, int32_t a, int32_t r)>& between = nullptr) {
  Mirror t;
  const int32_t produced = t.slot(producer, {2, 2});
  const int32_t a = t.storage(16), r = t.storage(16);
  t.clone_x(a);
  t.produce(producer, operand("self", "clone", mat(a)), r, produced, lowered);
  if (between) between(t, a, r);
  t.write_op_and_return(a, producer, r, t.slot("op", {2, 2}));
  return t;
}

// r = rev(a); a.op_(r). rev is kAnyIndex: every element of a is read for every
// element written.
TEST(RewriteCheckerInductor, ANewWriteFusedWithAFlipOfItsBufferIsCaught) {
  Mirror t = write_after_producer("rev", InductorCode::kAnyIndex);
  expect_violation(t.check(), "fused_read_hazard", 2, 1, {"through rev", "for every element written"});
  // Without Inductor's contract the same graph is fine.
  t.p.inductor = false;
  expect_ok(t.check());
}

TEST(RewriteCheckerInductor, AnExternProducerIsRealizedBeforeTheWrite) {
  expect_ok(write_after_producer("mm", InductorCode::kExtern).check());
}

// a.op_(p) with p = pointwise(view of a): fine when p reads a's element i for the
// write of element i, a hazard through a transposed view.
CheckResult pointwise_producer(TensorRef view) {
  Mirror t;
  const int32_t p = t.slot("p", {2, 2}), op = t.slot("op", {2, 2});
  const int32_t a = t.storage(16), pb = t.storage(16);
  view.storage = a;
  t.clone_x(a);
  t.produce("p", operand("self", "view", view), pb, p, InductorCode::kPointwise);
  t.write_op_and_return(a, "p", pb, op);
  return t.check();
}

TEST(RewriteCheckerInductor, APointwiseProducerReadingTheSameElementIsFine) {
  expect_ok(pointwise_producer(mat(0)));
}

TEST(RewriteCheckerInductor, APointwiseProducerReadingATransposeIsCaught) {
  expect_violation(pointwise_producer(mat_t(0)), "fused_read_hazard", 2, 1,
                   {"reads self's element [1, 0] for the write of element [0, 1]"});
}

TEST(RewriteCheckerInductor, AReversedViewReadDirectlyIsCaught) {
  // A copy_ (a scatter rewritten as view + copy_) whose source is a's rows reversed.
  Mirror t;
  const int32_t a = t.storage(16);
  t.clone_x(a);
  CheckNode c = inplace(
      node("copy_", {operand("self", "clone", mat(a), false), operand("src", "rev", rows_reversed(a))},
           {copy(mat(a), rows_reversed(a))}));
  t.add(code(std::move(c), InductorCode::kPointwise));
  t.add(output({operand("output[0]", "copy_", mat(a))}));
  // (ATen's own in-place rule, rule 4, already rejects a copy_ whose source
  // overlaps self other than exactly: rule 5 is not reached.)
  expect_violation(t.check(), "operand_overlaps_self", 1, 1);
}

TEST(RewriteCheckerInductor, AProducerWhoseOperandIsWrittenBeforeTheWriteIsRealized) {
  // r = rev(a); a.fill_(...); a.op_(r): Inductor realizes r when a is mutated.
  const auto fill_a = [](Mirror& t, int32_t a, int32_t /*r*/) {
    const int32_t filled = t.slot("fill", {2, 2});
    t.add(code(inplace(node("fill_", {operand("self", "clone", mat(a), false)}, {fill(mat(a), filled)})),
               InductorCode::kPointwise));
  };
  expect_ok(write_after_producer("rev", InductorCode::kAnyIndex, fill_a).check());
}

// r = rev(a); ext_(r[0]) (an extern op writing r's first element in place, as
// an auto_functionalized op Inductor reinplaces); a.op_(r): the mutation needs
// r's buffer, so Inductor realizes rev before it and never fuses it into op_
// (random pipelines seed 1567).
TEST(RewriteCheckerInductor, AProducerWhoseResultIsMutatedByAnExternIsRealized) {
  const auto extern_writes_r0 = [](Mirror& t, int32_t /*a*/, int32_t r) {
    const int32_t ext = t.slot("ext", {});
    const TensorRef first = strided(r, {}, {});
    t.add(code(inplace(node("ext_", {operand("self", "rev", first)}, {fill(first, ext)})),
               InductorCode::kExtern));
  };
  expect_ok(write_after_producer("rev", InductorCode::kAnyIndex, extern_writes_r0).check());
}

TEST(RewriteCheckerInductor, AScatterReadingItsBufferAtAllIsCaught) {
  // index_put_(a, idx, p) with p = pointwise(a): the elements written depend on
  // values; a read of a's element i for the value written at idx[i] may follow the
  // write of element i.
  Mirror t;
  const int32_t p = t.slot("p", {2, 2}), op = t.slot("index_put", {2, 2});
  const int32_t a = t.storage(16), pb = t.storage(16);
  t.clone_x(a);
  t.produce("p", operand("self", "clone", mat(a)), pb, p, InductorCode::kPointwise);
  t.add(code(inplace(node("index_put_", {operand("self", "clone", mat(a)), operand("values", "p", mat(pb))},
                          {fill(mat(a), op)}),
                     false),
             InductorCode::kAnyIndex));
  t.add(output({operand("output[0]", "index_put_", mat(a))}));
  expect_violation(t.check(), "fused_read_hazard", 2, 1);
}

// The write-back copy_(x, add), add = add(x, rev(x)): Inductor's own, reading x
// under its old name: fine. With x written by a rewrite before rev reads it: caught.
CheckResult write_back_over_flip(bool written_before) {
  Mirror t;
  const int32_t early = t.slot("early", {2, 2}), rev = t.slot("rev", {2, 2}), add = t.slot("add", {2, 2});
  const int32_t r = t.storage(16), s = t.storage(16);
  if (written_before)
    t.add(code(inplace(node("early_", {operand("self", "x_1", mat(0))}, {fill(mat(0), early)})),
               InductorCode::kPointwise));
  t.produce("rev", operand("self", "x_1", mat(0)), r, rev, InductorCode::kAnyIndex);
  t.add(code(
      node("add", {operand("self", "x_1", mat(0)), operand("other", "rev", mat(r))}, {fill(mat(s), add)}),
      InductorCode::kPointwise));
  CheckNode wb = node("copy_", {operand("self", "x_1", mat(0), false), operand("src", "add", mat(s))},
                      {copy(mat(0), mat(s))});
  wb.write_rule = WriteRule::kWriteBack;
  t.add(code(std::move(wb), InductorCode::kPointwise));
  t.add(output({operand("output[0]", "copy_", mat(0))}));
  return t.check();
}

TEST(RewriteCheckerInductor, InductorsOwnWriteBackOverAFlipOfTheInputIsFine) {
  expect_ok(write_back_over_flip(false));
}

TEST(RewriteCheckerInductor, AWriteBackOverAFlipOfAValueMovedIntoTheInputIsCaught) {
  expect_violation(write_back_over_flip(true), "fused_read_hazard", 3, 1,
                   {"through add <- rev", "holds the value early_ wrote"});
}

// _foreach_op_([a, b], [p0, p1]): p1 = pointwise(a) is element 1's operand, read in
// a loop Inductor may run beside element 0's write of a.
TEST(RewriteCheckerInductor, AForeachElementReadingAnotherElementsSelfIsCaught) {
  Mirror t(8);
  const int32_t p = t.slot("p", {2, 2}), op0 = t.slot("op[0]", {2, 2}), op1 = t.slot("op[1]", {2, 2});
  const int32_t a = t.storage(16), b = t.storage(16), pb = t.storage(16);
  const TensorRef x0 = mat(0), x1 = strided(0, {2, 2}, {2, 1}, 4);
  t.add(code(node("clone", {operand("self", "x_1", x0)}, {copy(mat(a), x0)}), InductorCode::kPointwise));
  t.add(code(node("clone_1", {operand("self", "x_1", x1)}, {copy(mat(b), x1)}), InductorCode::kPointwise));
  t.produce("p", operand("self", "clone", mat(a)), pb, p, InductorCode::kPointwise);
  CheckNode fe = node("_foreach_op_",
                      {operand("self[0]", "clone", mat(a)), operand("self[1]", "clone_1", mat(b)),
                       operand("other[0]", "clone_1", mat(b)), operand("other[1]", "p", mat(pb))},
                      {fill(mat(a), op0), fill(mat(b), op1)});
  fe.write_rule = WriteRule::kForeachInplace;
  fe.pointwise = true;
  fe.self_operands = {0, 1};
  fe.element_of = {0, 1, 0, 1};
  t.add(code(std::move(fe), InductorCode::kPointwise));
  t.add(output({operand("output[0]", "clone", mat(a)), operand("output[1]", "clone_1", mat(b))}));
  // other[0] is b, element 1's self, read for element 0: rule 4 already.
  expect_violation(t.check(), "operand_overlaps_other_element", 3, 2);
  // With other[0] a fresh buffer, other[1] = p(a) reads element 0's self for element 1.
  t.p.functional.nodes[3].reads[2] = operand("other[0]", "p", mat(pb));
  t.p.rewritten.nodes[3].reads[2] = operand("other[0]", "p", mat(pb));
  expect_violation(t.check(), "fused_read_hazard", 3, 3, {"writes self[0] (clone)"});
}

TEST(RewriteCheckerInductor, AWriteThroughADtypeViewIsCaught) {
  Mirror t;
  const int32_t op = t.slot("op", {2, 2});
  const int32_t a = t.storage(16, -1, /*dtype=*/4);
  TensorRef as_int = mat(a);
  as_int.dtype = 7;  // another 4-byte dtype
  t.p.slots[op].dtype = 7;
  t.clone_x(a);
  t.add(code(inplace(node("op", {operand("self", "view", as_int)}, {fill(as_int, op)})),
             InductorCode::kPointwise));
  t.add(output({operand("output[0]", "clone", mat(a))}));
  const CheckResult r = t.check();
  expect_violation(r, "write_through_dtype_view", 1, 0);
  t.p.inductor = false;
  expect_ok(t.check());
}

TEST(RewriteCheckerInductor, ReasonsHaveStableNamesAndTexts) {
  EXPECT_STREQ(check_reason_name(CheckReason::kWrongValue), "wrong_value");
  EXPECT_STREQ(check_reason_name(CheckReason::kOutputLayout), "output_layout");
  EXPECT_STREQ(check_reason_name(CheckReason::kFusedReadHazard), "fused_read_hazard");
  EXPECT_STREQ(check_reason_name(CheckReason::kWriteThroughDtypeView), "write_through_dtype_view");
  EXPECT_STRNE(check_reason_text(CheckReason::kCannotCheck), "");
}

}  // namespace
}  // namespace fxinplace::checker
