// Writing through expand(): folding the written view back into its base.
//
// An expanded view shows every base element several times (its copies). A
// write that does not repeat memory (eager rejects the ones that do, except
// for ops that write a location's copies alike, see eager_write_rules.cpp)
// changes at most one copy of each element in eager; the functional value
// holds every copy separately. Each byte of a base element is therefore the
// copy's byte that differs from the old one (the last, where several do, as a
// sequential eager kernel leaves it), or the old byte where none does. An
// accumulating index_put_ adds to the shared location once per copy instead.
#pragma once

#include <ATen/core/Tensor.h>

namespace fxinplace::functionalize {

// How the copies of one element combine when a write repeats memory.
enum class CopiesFold {
  kWrittenCopy,   // the copy that changed (each location written alike, or once)
  kUniform,       // every element written with one value (fill_, zero_): any copy is the location's
  kSumOfChanges,  // the old value plus every copy's change (accumulating index_put_)
};

// The new base after `mutated` (a value for `base.expand(sizes)`) was written.
at::Tensor fold_expand_back(const at::Tensor& base, const at::Tensor& mutated, bool reapply_views,
                            CopiesFold fold = CopiesFold::kWrittenCopy);

}  // namespace fxinplace::functionalize
