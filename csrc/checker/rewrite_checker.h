// An independent check of a re-inplaced graph against the functional graph it
// came from, at concrete sizes (see check_model.h for what it is given).
//
// Both graphs are simulated on memory whose bytes hold tags naming the value
// there. The functional graph defines the values: an op that computes writes
// fresh tags, an op that only moves values (clone, copy, a scatter) moves tags,
// a view aliases. The rewritten graph runs on its own memory, its in-place ops
// writing into their `self`. The two advance in lockstep, and:
//
//  1. before each rewritten node that stands for a functional node, each of
//     its operands holds, element by element, the tags the functional node's
//     operand holds (graph outputs likewise); at the end every graph input's
//     bytes hold what the functional graph leaves in them;
//  2. an output shares memory with an input, or with another output, exactly
//     when it does in the functional graph, and has its layout (strides and
//     storage offset; sizes and dtype by rule 1): the functional graph's
//     outputs are what eager returns;
//  3. graph inputs are written only by write-backs (and by custom ops in
//     place of bytes the functional graph writes back); constants never;
//  4. an ATen in-place op reads no memory of `self` except exactly `self`
//     (element for element, and only if the op is pointwise), and `self` does
//     not overlap itself; a `_foreach_*_` op keeps that rule for each list
//     element, and no operand of one element touches another element's self;
//     a custom op writes no operand that shares memory with another unless
//     the functional graph's call shares it too;
//  5. under CheckProblem::inductor, Inductor's contract: no in-place write
//     through a view of another dtype than its buffer's, and no write whose
//     fused producers read the written buffer at other elements, where the
//     rewrite introduced it (inductor_contract.h states both with examples).
//
// Verdicts are CheckReasons (check_reasons.h).
//
// Costs O(elements touched) time and memory.
#pragma once

#include "check_model.h"

namespace fxinplace::checker {

CheckResult check_rewrite(const CheckProblem& problem);

}  // namespace fxinplace::checker
