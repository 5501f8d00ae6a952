// The rewrite checker on hand-built graph pairs: each violation is caught and
// named, and correct rewrites pass. Tensors are float32 (4-byte) unless said.
#include "rewrite_checker.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "check_test_helpers.h"
#include "tag_memory.h"

namespace fxinplace::checker {
namespace {

using namespace testing;

// F: clone = clone(x); add = add(clone, 1); return add
Pair clone_then_add(bool rewrite_inplace) {
  Pair t;
  const int32_t add = t.slot("add", {4});
  const int32_t fc = t.f_storage(16), fa = t.f_storage(16);
  const int32_t f_clone =
      t.f(node("clone", {operand("self", "x_1", vec(0, 4))}, {copy(vec(fc, 4), vec(0, 4))}));
  const int32_t f_add = t.f(node("add", {operand("self", "clone", vec(fc, 4))}, {fill(vec(fa, 4), add)}));
  const int32_t f_out = t.f(output({operand("output[0]", "add", vec(fa, 4))}));
  const int32_t rc = t.r_storage(16);
  t.r(node("clone", {operand("self", "x_1", vec(0, 4))}, {copy(vec(rc, 4), vec(0, 4))}, f_clone));
  if (rewrite_inplace) {
    t.r(inplace(node("add", {operand("self", "clone", vec(rc, 4))}, {fill(vec(rc, 4), add)}, f_add)));
    t.r(output({operand("output[0]", "add", vec(rc, 4))}, f_out));
  } else {
    const int32_t ra = t.r_storage(16);
    t.r(node("add", {operand("self", "clone", vec(rc, 4))}, {fill(vec(ra, 4), add)}, f_add));
    t.r(output({operand("output[0]", "add", vec(ra, 4))}, f_out));
  }
  return t;
}

TEST(RewriteChecker, IdenticalGraphsPass) { expect_ok(clone_then_add(false).check()); }

TEST(RewriteChecker, InplaceIntoADeadCloneIsCorrect) { expect_ok(clone_then_add(true).check()); }

// F: a = add(x, 1); b = mul(a, 2); c = sub(a, 3); return (b, c)
// R: b = mul_(a, 2) clobbers a, which sub still reads.
TEST(RewriteChecker, ReadOfAValueOverwrittenInPlaceIsCaught) {
  Pair t;
  const int32_t add = t.slot("add", {4}), mul = t.slot("mul", {4}), sub = t.slot("sub", {4});
  const int32_t fa = t.f_storage(16), fb = t.f_storage(16), fc = t.f_storage(16);
  const int32_t f_add = t.f(node("add", {operand("self", "x_1", vec(0, 4))}, {fill(vec(fa, 4), add)}));
  const int32_t f_mul = t.f(node("mul", {operand("self", "add", vec(fa, 4))}, {fill(vec(fb, 4), mul)}));
  const int32_t f_sub = t.f(node("sub", {operand("self", "add", vec(fa, 4))}, {fill(vec(fc, 4), sub)}));
  const int32_t f_out =
      t.f(output({operand("output[0]", "mul", vec(fb, 4)), operand("output[1]", "sub", vec(fc, 4))}));
  const int32_t ra = t.r_storage(16), rc = t.r_storage(16);
  t.r(node("add", {operand("self", "x_1", vec(0, 4))}, {fill(vec(ra, 4), add)}, f_add));
  t.r(inplace(node("mul", {operand("self", "add", vec(ra, 4))}, {fill(vec(ra, 4), mul)}, f_mul)));
  t.r(node("sub", {operand("self", "add", vec(ra, 4))}, {fill(vec(rc, 4), sub)}, f_sub));
  t.r(output({operand("output[0]", "mul", vec(ra, 4)), operand("output[1]", "sub", vec(rc, 4))}, f_out));
  expect_violation(t.check(), "wrong_value", 2, 0,
                   {"node sub: reads self (add) at element [0], which holds mul's value at [0] "
                    "(written by mul); the functional graph has add's value at [0] there"});
}

// F: m = mul(e) of a fresh, never written buffer e (uninitialised: the gaps of
//    a buffer laid out like a strided input); R: mul reads the input instead.
// Any value is one the functional graph could have read there (seed 5140);
// the other way round is caught.
CheckResult mul_of_uninitialised(bool functional_uninitialised) {
  Pair t;
  const int32_t mul = t.slot("mul", {4});
  const int32_t fe = t.f_storage(16), fm = t.f_storage(16);
  const int32_t re = t.r_storage(16), rm = t.r_storage(16);
  const TensorRef f_read = functional_uninitialised ? vec(fe, 4) : vec(0, 4);
  const TensorRef r_read = functional_uninitialised ? vec(0, 4) : vec(re, 4);
  const int32_t f_mul = t.f(node("mul", {operand("self", "e", f_read)}, {fill(vec(fm, 4), mul)}));
  const int32_t f_out = t.f(output({operand("output[0]", "mul", vec(fm, 4))}));
  t.r(node("mul", {operand("self", "e", r_read)}, {fill(vec(rm, 4), mul)}, f_mul));
  t.r(output({operand("output[0]", "mul", vec(rm, 4))}, f_out));
  return t.check();
}

TEST(RewriteChecker, AnyValueWhereTheFunctionalGraphReadsUninitialisedMemoryIsFine) {
  expect_ok(mul_of_uninitialised(true));
}

TEST(RewriteChecker, UninitialisedMemoryWhereTheFunctionalGraphReadsAValueIsCaught) {
  expect_violation(mul_of_uninitialised(false), "wrong_value", 0, 0);
}

// F: a = clone(x); m = mul(a[1:3], 2); s = slice_scatter(a, m, 0, 1, 3); return s
// R (correct): m = mul_(a[1:3], 2); the scatter removed; return a.
// R (wrong): m = mul(a[1:3], 2) kept out of place; the scatter removed anyway.
Pair scatter_removed(bool src_in_place) {
  Pair t;
  const int32_t mul = t.slot("mul", {2});
  const int32_t fa = t.f_storage(16), fm = t.f_storage(8), fs = t.f_storage(16);
  const int32_t f_clone =
      t.f(node("clone", {operand("self", "x_1", vec(0, 4))}, {copy(vec(fa, 4), vec(0, 4))}));
  const int32_t f_mul =
      t.f(node("mul", {operand("self", "slice_1", vec(fa, 2, 1))}, {fill(vec(fm, 2), mul)}));
  t.f(node("slice_scatter", {operand("self", "clone", vec(fa, 4)), operand("src", "mul", vec(fm, 2))},
           {copy(vec(fs, 4), vec(fa, 4)), copy(vec(fs, 2, 1), vec(fm, 2))}));
  const int32_t f_out = t.f(output({operand("output[0]", "slice_scatter", vec(fs, 4))}));
  const int32_t ra = t.r_storage(16);
  t.r(node("clone", {operand("self", "x_1", vec(0, 4))}, {copy(vec(ra, 4), vec(0, 4))}, f_clone));
  if (src_in_place) {
    t.r(inplace(node("mul", {operand("self", "slice_1", vec(ra, 2, 1))}, {fill(vec(ra, 2, 1), mul)}, f_mul)));
  } else {
    const int32_t rm = t.r_storage(8);
    t.r(node("mul", {operand("self", "slice_1", vec(ra, 2, 1))}, {fill(vec(rm, 2), mul)}, f_mul));
  }
  t.r(output({operand("output[0]", "clone", vec(ra, 4))}, f_out));
  return t;
}

TEST(RewriteChecker, ScatterRemovedAfterItsSourceLandedInPlaceIsCorrect) {
  expect_ok(scatter_removed(true).check());
}

TEST(RewriteChecker, ScatterRemovedWhoseSourceNeverLandedIsCaught) {
  expect_violation(scatter_removed(false).check(), "wrong_value", 2, 0,
                   {"at element [1], which holds the original contents of input x_1 at storage "
                    "element 1 (written by clone); the functional graph has mul's value at [0] there"});
}

// F: add = add(input, 1) into fresh memory, the start of several pairs below.
struct InputAdd {
  std::string input;
  int32_t value = -1, f_storage = -1, f_node = -1;  // the slot of add's value, F's buffer and node
  explicit InputAdd(Pair& t, std::string input_name = "x_1") : input(std::move(input_name)) {
    value = t.slot("add", {4});
    f_storage = t.f_storage(16);
    f_node = t.f(node("add", {operand("self", input, vec(0, 4))}, {fill(vec(f_storage, 4), value)}));
  }
  // R's counterpart, writing add's value to `dst`.
  CheckNode rewritten(TensorRef dst) const {
    return node("add", {operand("self", input, vec(0, 4))}, {fill(std::move(dst), value)}, f_node);
  }
};

// F: a = add(x, 1); copy_(x, a); return ()
Pair write_back(bool keep_write_back, bool write_early) {
  Pair t;
  const InputAdd add(t);
  CheckNode f_copy =
      node("copy_", {operand("self", "x_1", vec(0, 4), false), operand("src", "add", vec(add.f_storage, 4))},
           {copy(vec(0, 4), vec(add.f_storage, 4))});
  f_copy.write_rule = WriteRule::kWriteBack;
  const int32_t f_copy_at = t.f(f_copy);
  const int32_t f_out = t.f(output({}));
  if (write_early) {
    t.r(inplace(add.rewritten(vec(0, 4))));
  } else {
    const int32_t ra = t.r_storage(16);
    t.r(add.rewritten(vec(ra, 4)));
    if (keep_write_back) {
      CheckNode r_copy = f_copy;
      r_copy.reads[1].ref = vec(ra, 4);
      r_copy.effects[0].src = vec(ra, 4);
      r_copy.counterpart = f_copy_at;
      t.r(r_copy);
    }
  }
  t.r(output({}, f_out));
  return t;
}

TEST(RewriteChecker, WriteBackIntoAnInputIsAllowed) { expect_ok(write_back(true, false).check()); }

TEST(RewriteChecker, ADroppedWriteBackIsCaughtAtTheEnd) {
  expect_violation(write_back(false, false).check(), "final_input", -1, -1,
                   {"at the end, storage element 0 of graph input x_1 holds the original contents of "
                    "input x_1 at storage element 0; the functional graph leaves add's value at [0] there"});
}

TEST(RewriteChecker, AnInPlaceOpIntoAnInputIsCaught) {
  // Even though the final contents would match: only write-backs write inputs.
  expect_violation(write_back(false, true).check(), "input_written", 0, -1,
                   {"writes graph input x_1 at storage element 0"});
}

TEST(RewriteChecker, AConstantIsNeverWritten) {
  Pair t(4, /*constant=*/true);
  const InputAdd add(t, "w");
  t.r(inplace(add.rewritten(vec(0, 4))));
  expect_violation(t.check(), "constant_written", 0);
}

// F: a = clone(x); b = clone(x); return (a, b)
TEST(RewriteChecker, OutputsSharingMemoryUnlikeTheFunctionalGraphAreCaught) {
  Pair t;
  const int32_t fa = t.f_storage(16), fb = t.f_storage(16);
  const int32_t f_a = t.f(node("a", {operand("self", "x_1", vec(0, 4))}, {copy(vec(fa, 4), vec(0, 4))}));
  t.f(node("b", {operand("self", "x_1", vec(0, 4))}, {copy(vec(fb, 4), vec(0, 4))}));
  const int32_t f_out =
      t.f(output({operand("output[0]", "a", vec(fa, 4)), operand("output[1]", "b", vec(fb, 4))}));
  const int32_t ra = t.r_storage(16);
  t.r(node("a", {operand("self", "x_1", vec(0, 4))}, {copy(vec(ra, 4), vec(0, 4))}, f_a));
  t.r(output({operand("output[0]", "a", vec(ra, 4)), operand("output[1]", "a", vec(ra, 4))}, f_out));
  expect_violation(t.check(), "output_aliases_output", 1, 1);
}

TEST(RewriteChecker, AnOutputAliasingAnInputUnlikeTheFunctionalGraphIsCaught) {
  Pair t;
  const int32_t fa = t.f_storage(16);
  t.f(node("clone", {operand("self", "x_1", vec(0, 4))}, {copy(vec(fa, 4), vec(0, 4))}));
  const int32_t f_out = t.f(output({operand("output[0]", "clone", vec(fa, 4))}));
  t.r(output({operand("output[0]", "x_1", vec(0, 4))}, f_out));
  expect_violation(t.check(), "output_aliases_input", 0, 0, {"shares memory with graph input x_1"});
}

// F: a = clone(x) as [2, 2]; b = add(a, t(a)) (or add(a, a)); return b
Pair add_with_alias_of_self(bool transposed, bool pointwise) {
  Pair t;
  const int32_t add = t.slot("add", {2, 2});
  const int32_t fa = t.f_storage(16), fb = t.f_storage(16);
  const TensorRef other = transposed ? strided(fa, {2, 2}, {1, 2}) : strided(fa, {2, 2}, {2, 1});
  const int32_t f_clone =
      t.f(node("clone", {operand("self", "x_1", vec(0, 4))}, {copy(vec(fa, 4), vec(0, 4))}));
  const int32_t f_add =
      t.f(node("add", {operand("self", "clone", strided(fa, {2, 2}, {2, 1})), operand("other", "t", other)},
               {fill(strided(fb, {2, 2}, {2, 1}), add)}));
  const int32_t f_out = t.f(output({operand("output[0]", "add", strided(fb, {2, 2}, {2, 1}))}));
  const int32_t ra = t.r_storage(16);
  t.r(node("clone", {operand("self", "x_1", vec(0, 4))}, {copy(vec(ra, 4), vec(0, 4))}, f_clone));
  TensorRef r_other = other;
  r_other.storage = ra;
  t.r(inplace(
      node("add", {operand("self", "clone", strided(ra, {2, 2}, {2, 1})), operand("other", "t", r_other)},
           {fill(strided(ra, {2, 2}, {2, 1}), add)}, f_add),
      pointwise));
  t.r(output({operand("output[0]", "add", strided(ra, {2, 2}, {2, 1}))}, f_out));
  return t;
}

TEST(RewriteChecker, PointwiseInPlaceOpMayReadExactlySelf) {
  expect_ok(add_with_alias_of_self(false, true).check());
}

TEST(RewriteChecker, InPlaceOpReadingATransposeOfSelfIsCaught) {
  expect_violation(add_with_alias_of_self(true, true).check(), "operand_overlaps_self", 1, 1,
                   {"without being exactly self"});
}

TEST(RewriteChecker, NonPointwiseInPlaceOpMayNotReadSelfAtAll) {
  expect_violation(add_with_alias_of_self(false, false).check(), "operand_overlaps_self", 1, 1);
}

TEST(RewriteChecker, InPlaceWriteIntoASelfOverlappingItselfIsCaught) {
  // F: a = clone(x[:1]); e = a.expand(4); f = fill(e); R: fill_(e), writing one element four times.
  Pair t;
  const int32_t fill_slot = t.slot("fill", {4});
  const int32_t fa = t.f_storage(4), ff = t.f_storage(16);
  const int32_t f_clone =
      t.f(node("clone", {operand("self", "x_1", vec(0, 1))}, {copy(vec(fa, 1), vec(0, 1))}));
  const int32_t f_fill =
      t.f(node("fill", {operand("self", "expand", strided(fa, {4}, {0}))}, {fill(vec(ff, 4), fill_slot)}));
  const int32_t ra = t.r_storage(4);
  t.r(node("clone", {operand("self", "x_1", vec(0, 1))}, {copy(vec(ra, 1), vec(0, 1))}, f_clone));
  t.r(inplace(node("fill", {operand("self", "expand", strided(ra, {4}, {0}))},
                   {fill(strided(ra, {4}, {0}), fill_slot)}, f_fill)));
  expect_violation(t.check(), "self_overlap", 1, 0);
}

// An auto_functionalized_v2 node on base b = add(x, 1) (F: clones b, the op
// writes the clone) against its direct call writing b itself (R).
struct CustomOpPair {
  Pair t;
  int32_t f_call = -1, f_out = -1, rb = -1;
  int32_t new_x = -1, add = -1;
  int32_t fb = -1, fclone = -1;
  CustomOpPair() {
    add = t.slot("add", {4});
    new_x = t.slot("auto_functionalized_v2 (new x)", {4});
    fb = t.f_storage(16);
    fclone = t.f_storage(16);
    t.f(node("add", {operand("self", "x_1", vec(0, 4))}, {fill(vec(fb, 4), add)}));
    CheckNode call =
        node("auto_functionalized_v2", {operand("x", "add", vec(fclone, 4))}, {fill(vec(fclone, 4), new_x)});
    call.prepare.push_back(copy(vec(fclone, 4), vec(fb, 4)));
    f_call = t.f(call);
    rb = t.r_storage(16);
    t.r(node("add", {operand("self", "x_1", vec(0, 4))}, {fill(vec(rb, 4), add)}, 0));
  }
  void direct_call(std::vector<Operand> reads) {
    CheckNode call = node("my_op_default", std::move(reads), {fill(vec(rb, 4), new_x)}, f_call);
    call.write_rule = WriteRule::kCustomOp;
    call.written_operands = {0};
    t.r(call);
  }
};

TEST(RewriteChecker, CustomOpWritingADeadBaseInPlaceIsCorrect) {
  CustomOpPair c;
  c.f_out = c.t.f(output({operand("output[0]", "getitem", vec(c.fclone, 4))}));
  c.direct_call({operand("x", "add", vec(c.rb, 4))});
  c.t.r(output({operand("output[0]", "add", vec(c.rb, 4))}, c.f_out));
  expect_ok(c.t.check());
}

TEST(RewriteChecker, CustomOpWritingABaseStillReadLaterIsCaught) {
  CustomOpPair c;
  c.f_out = c.t.f(
      output({operand("output[0]", "getitem", vec(c.fclone, 4)), operand("output[1]", "add", vec(c.fb, 4))}));
  c.direct_call({operand("x", "add", vec(c.rb, 4))});
  c.t.r(output({operand("output[0]", "add", vec(c.rb, 4)), operand("output[1]", "add", vec(c.rb, 4))},
               c.f_out));
  expect_violation(c.t.check(), "wrong_value", 2, 1,
                   {"holds auto_functionalized_v2 (new x)'s value at [0] (written by my_op_default)"});
}

TEST(RewriteChecker, CustomOpWritingAnOperandItAlsoReadsIsCaught) {
  // The op's other argument y is a view of the base it now writes in place.
  CustomOpPair c;
  c.t.p.functional.nodes[c.f_call].reads.push_back(operand("y", "add", vec(c.fb, 2)));
  c.f_out = c.t.f(output({operand("output[0]", "getitem", vec(c.fclone, 4))}));
  c.direct_call({operand("x", "add", vec(c.rb, 4)), operand("y", "add", vec(c.rb, 2))});
  c.t.r(output({operand("output[0]", "add", vec(c.rb, 4))}, c.f_out));
  expect_violation(c.t.check(), "operand_overlaps_written", 1, 0);
}

// auto_functionalized_v2 on the input itself, written back by F's trailing copy_.
Pair custom_op_on_input(bool written_back) {
  Pair t;
  const int32_t new_x = t.slot("auto_functionalized_v2 (new x)", {4});
  const int32_t fclone = t.f_storage(16);
  CheckNode call =
      node("auto_functionalized_v2", {operand("x", "x_1", vec(fclone, 4))}, {fill(vec(fclone, 4), new_x)});
  call.prepare.push_back(copy(vec(fclone, 4), vec(0, 4)));
  const int32_t f_call = t.f(call);
  if (written_back) {
    CheckNode f_copy =
        node("copy_", {operand("self", "x_1", vec(0, 4), false), operand("src", "getitem", vec(fclone, 4))},
             {copy(vec(0, 4), vec(fclone, 4))});
    f_copy.write_rule = WriteRule::kWriteBack;
    t.f(f_copy);
  }
  const int32_t f_out = t.f(output({}));
  CheckNode direct =
      node("my_op_default", {operand("x", "x_1", vec(0, 4))}, {fill(vec(0, 4), new_x)}, f_call);
  direct.write_rule = WriteRule::kCustomOp;
  direct.written_operands = {0};
  t.r(direct);
  t.r(output({}, f_out));
  return t;
}

TEST(RewriteChecker, CustomOpMayWriteAnInputTheFunctionalGraphWritesBack) {
  expect_ok(custom_op_on_input(true).check());
}

TEST(RewriteChecker, CustomOpMayNotWriteAnInputTheFunctionalGraphLeavesAlone) {
  expect_violation(custom_op_on_input(false).check(), "input_written", 0);
}

TEST(RewriteChecker, AComputedValueOfTheWrongShapeIsCaught) {
  // add_ into a [1, 4] self where the functional add is [4]: the same bytes, another shape.
  Pair t;
  const InputAdd add(t);
  const int32_t ra = t.r_storage(16);
  t.r(add.rewritten(strided(ra, {1, 4}, {4, 1})));
  expect_violation(t.check(), "wrong_shape", 0);
}

TEST(RewriteChecker, AComputedValueStoredInAnotherDtypeIsCaught) {
  // add_ of a float result into an int32 self: same shape and itemsize, the values truncated.
  Pair t;
  const InputAdd add(t);
  const int32_t ri = t.r_storage(16);
  TensorRef int_self = vec(ri, 4);
  int_self.dtype = 99;
  t.r(inplace(add.rewritten(int_self)));
  expect_violation(t.check(), "wrong_dtype", 0, -1, {"stores add's value in a tensor of another dtype"});
}

TEST(RewriteChecker, ByteViewsOfAFloatStorageCompareByteForByte) {
  // R reads the clone through a uint8 view (1-byte cells), F through float32.
  Pair t;
  const int32_t f_clone_storage = t.f_storage(16);
  const int32_t f_clone =
      t.f(node("clone", {operand("self", "x_1", vec(0, 4))}, {copy(vec(f_clone_storage, 4), vec(0, 4))}));
  const int32_t f_out = t.f(output({operand("output[0]", "clone", vec(f_clone_storage, 4))}));
  const int32_t rc = Pair::storage(t.p.rewritten, 16, /*granularity=*/1);
  t.r(node("clone", {operand("self", "x_1", vec(0, 4))}, {copy(vec(rc, 4), vec(0, 4))}, f_clone));
  t.r(output({operand("output[0]", "clone", vec(rc, 4))}, f_out));
  expect_ok(t.check());
  // And a one-byte write through the uint8 view is seen in the float element it lands in.
  const int32_t zero = t.slot("zero", {1});
  t.p.slots[zero].itemsize = 1;
  t.p.slots[zero].dtype = 1;
  CheckNode write = node("zero", {}, {fill(strided(rc, {1}, {1}, 5, 1), zero)});
  t.p.rewritten.nodes.insert(t.p.rewritten.nodes.begin() + 1, write);
  expect_violation(t.check(), "wrong_value", 2, 0,
                   {"at element [1], which holds zero's value at [0] (written by zero)"});
}

TEST(RewriteChecker, NodesOutOfTheFunctionalOrderCannotBeChecked) {
  // F: a = clone(x); b = clone(x); R runs b before a.
  Pair t;
  const int32_t fa = t.f_storage(16), fb = t.f_storage(16);
  const int32_t f_a = t.f(node("a", {operand("self", "x_1", vec(0, 4))}, {copy(vec(fa, 4), vec(0, 4))}));
  const int32_t f_b = t.f(node("b", {operand("self", "x_1", vec(0, 4))}, {copy(vec(fb, 4), vec(0, 4))}));
  const int32_t ra = t.r_storage(16), rb = t.r_storage(16);
  t.r(node("b", {operand("self", "x_1", vec(0, 4))}, {copy(vec(rb, 4), vec(0, 4))}, f_b));
  t.r(node("a", {operand("self", "x_1", vec(0, 4))}, {copy(vec(ra, 4), vec(0, 4))}, f_a));
  const CheckResult r = t.check();
  EXPECT_EQ(r.outcome, Outcome::kCannotCheck) << r.message;
  EXPECT_EQ(r.node, 1);
}

TEST(RewriteChecker, AResizedInputIsComparedWhole) {
  // F: resize_(x, 8); copy_(x, fill) — a write-back that grows the input.
  Pair t;
  const int32_t full = t.slot("full", {8});
  const int32_t ff = t.f_storage(32);
  const int32_t f_full = t.f(node("full", {}, {fill(vec(ff, 8), full)}));
  Effect grow;
  grow.kind = EffectKind::kGrow;
  grow.dst = vec(0, 8);
  grow.nbytes = 32;
  CheckNode resize = node("resize_", {operand("self", "x_1", vec(0, 4), false)}, {grow});
  resize.write_rule = WriteRule::kWriteBack;
  const int32_t f_resize = t.f(resize);
  CheckNode write =
      node("copy_", {operand("self", "resize_", vec(0, 8), false), operand("src", "full", vec(ff, 8))},
           {copy(vec(0, 8), vec(ff, 8))});
  write.write_rule = WriteRule::kWriteBack;
  const int32_t f_copy = t.f(write);
  const int32_t rf = t.r_storage(32);
  t.r(node("full", {}, {fill(vec(rf, 8), full)}, f_full));
  resize.counterpart = f_resize;
  t.r(resize);
  write.counterpart = f_copy;
  write.reads[1].ref = vec(rf, 8);
  write.effects[0].src = vec(rf, 8);
  t.r(write);
  expect_ok(t.check());
  t.p.rewritten.nodes.pop_back();  // without the copy_, the grown bytes stay uninitialised
  expect_violation(t.check(), "final_input", -1, -1,
                   {"storage element 0 of graph input x_1 holds the original contents of input x_1 at "
                    "storage element 0; the functional graph leaves full's value at [0] there"});
}

TEST(TagMemory, ElementAddressesFollowStridesInLogicalOrder) {
  EXPECT_EQ(element_addresses(strided(0, {2, 3}, {1, 2}, 1)), (std::vector<int64_t>{4, 12, 20, 8, 16, 24}));
  EXPECT_EQ(element_addresses(strided(0, {3}, {0})), (std::vector<int64_t>{0, 0, 0}));
  EXPECT_TRUE(element_addresses(strided(0, {2, 0}, {1, 1})).empty());
}

}  // namespace
}  // namespace fxinplace::checker
