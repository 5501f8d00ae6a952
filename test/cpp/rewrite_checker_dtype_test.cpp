// Views of another element size (view(dtype), view_as_real/view_as_complex):
// a wide element whose bytes different ops wrote through a narrower view is
// held byte for byte (its storage's cells are narrowed), so it is still checked.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "check_test_helpers.h"
#include "rewrite_checker.h"
#include "tag_memory.h"

namespace fxinplace::checker {
namespace {

using namespace testing;

TensorRef complex_vec(int32_t storage, int64_t n) { return strided(storage, {n}, {1}, 0, 8); }
// The real (part 0) or imaginary (part 1) floats of the complex elements of `storage`.
TensorRef parts(int32_t storage, int64_t n, int64_t part) { return strided(storage, {n}, {2}, part); }

TEST(TagMemory, AWriteOfUnrelatedBytesIntoOneCellNarrowsTheCells) {
  CheckProblem problem;
  problem.functional.storages.push_back(StorageDecl{16, 8, -1});
  TagSpace space(problem);
  TagMemory memory(problem.functional, space);
  memory.write(complex_vec(0, 2), {100, 104, 200, 204}, 4, 0);  // byte runs of one value: cells stay
  EXPECT_EQ(memory.granularity(0), 8);
  EXPECT_EQ(memory.byte_tag(0, 13), 205u);
  memory.write(complex_vec(0, 2), {100, 300, 104, 304}, 4,
               1);  // real parts of one value, imaginary of another
  EXPECT_EQ(memory.granularity(0), 4);
  EXPECT_EQ(memory.byte_tag(0, 1), 101u);
  EXPECT_EQ(memory.byte_tag(0, 6), 302u);
  EXPECT_EQ(memory.byte_tag(0, 12), 304u);
  EXPECT_EQ(memory.read(complex_vec(0, 2), 4), (std::vector<Tag>{100, 300, 104, 304}));
  EXPECT_EQ(memory.byte_writer(0, 12), 1);
}

// F: re, im fill the real and imaginary parts of S's complex elements through
//    float views; clone = clone(S as complex); neg = neg(clone's real parts);
//    return clone, neg.
// R: the same, neg either fresh or (wrongly) in place into clone's real parts.
// clone's complex cells are built from re's and im's floats. Returns R's check.
CheckResult check_complex_from_parts(bool neg_in_place) {
  Pair t;
  const int32_t re = t.slot("re", {2}), im = t.slot("im", {2}), neg = t.slot("neg", {2});
  auto build = [&](CheckGraph& g, bool rewritten, std::vector<int32_t> counterparts) {
    const int32_t s = Pair::storage(g, 16, 4), c = Pair::storage(g, 16, 8);
    const auto at = [&](size_t k) { return rewritten ? counterparts.at(k) : -1; };
    std::vector<CheckNode> nodes;
    nodes.push_back(node("re", {}, {fill(parts(s, 2, 0), re)}, at(0)));
    nodes.push_back(node("im", {}, {fill(parts(s, 2, 1), im)}, at(1)));
    nodes.push_back(node("clone", {operand("self", "view_as_complex", complex_vec(s, 2))},
                         {copy(complex_vec(c, 2), complex_vec(s, 2))}, at(2)));
    int32_t n = c;
    if (!(rewritten && neg_in_place)) n = Pair::storage(g, 8, 4);
    CheckNode negate = node("neg", {operand("self", "real", parts(c, 2, 0))},
                            {fill(n == c ? parts(c, 2, 0) : vec(n, 2), neg)}, at(3));
    nodes.push_back(n == c ? inplace(negate) : negate);
    nodes.push_back(output({operand("output[0]", "clone", complex_vec(c, 2)),
                            operand("output[1]", "neg", n == c ? parts(c, 2, 0) : vec(n, 2))},
                           at(4)));
    std::vector<int32_t> indices;
    for (CheckNode& one : nodes) {
      g.nodes.push_back(std::move(one));
      indices.push_back(static_cast<int32_t>(g.nodes.size()) - 1);
    }
    return indices;
  };
  const std::vector<int32_t> functional = build(t.p.functional, false, {});
  build(t.p.rewritten, true, functional);
  return t.check();
}

TEST(RewriteChecker, AComplexValueBuiltFromTwoFloatWritesIsCopiedAndCompared) {
  expect_ok(check_complex_from_parts(false));
}

TEST(RewriteChecker, AFloatWriteIntoTheRealPartsOfAComplexValueIsCaught) {
  expect_violation(check_complex_from_parts(true), "wrong_value", 4, 0,
                   {"reads output[0] (clone) at element [0], which holds neg's value at [0] (written "
                    "by neg); the functional graph has re's value at [0] there"});
}

}  // namespace
}  // namespace fxinplace::checker
