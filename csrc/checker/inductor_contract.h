// Rule 5 of the rewrite checker (rewrite_checker.h): Inductor's contract, what
// FX semantics cannot show. Checked on the rewritten graph, node by node, when
// CheckProblem::inductor is set (check_reinplaced(compiler="inductor"), which
// reinplace(policy="inductor", check=True) passes).
//
// 5a. No write through a dtype view. Inductor lowers `copy_(dst, src)` as
//     `dst = to_dtype(src, dst.dtype)`: a value conversion, where FX moves
//     bytes. It has no indexer for writes through a DtypeView either. So an
//     in-place write (an ATen in-place op, `copy_`, `_foreach_*_`, `foo.out`)
//     whose destination's dtype differs from the dtype of the buffer it lives
//     in (the tensor that allocated it, or the graph input) is rejected:
//
//         functional (slot graph):                  rewritten (wrong):
//         view = view.dtype(x, float32)             view = view.dtype(x, float32)
//         af = auto_functionalized_v2(negate_,      af = auto_functionalized_v2(negate_,
//                  _all_bases=[view])                        _all_bases=[view])
//         y = view.dtype(af[1], int32)              y = view.dtype(af[1], int32)
//         ds = diagonal_scatter(y, src)             diagonal(y).copy_(src)   # int32 into a
//         return ds                                 return y                 # float32 buffer
//
//     Inductor writes the float value 7.0 into the buffer (bits 0x40e00000
//     read back as int32 1088421888) where FX writes the int32 bits of 7.
//
// 5b. No fused read hazard the rewrite introduces. Inductor inlines the
//     producers of a written value into the loop of the kernel that writes it
//     (the `copy_` of a write-back, `view(...).copy_(src)`, an in-place
//     `index_put_`, a `_foreach_*_` op): transitively through every node it
//     generates code for (InductorCode kPointwise, kAnyIndex), not through
//     extern kernels (mm, convolution, custom ops, fallbacks) nor through
//     another write, and not through a node one of whose operands is written
//     between it and the write (Inductor realizes a buffer's pending readers
//     when the buffer is mutated). If such an inlined read touches the written
//     buffer at an element other than the one the write writes at the same
//     loop index (after a flip, roll, transpose, broadcast, gather or
//     reduction: every element of a kAnyIndex node's operands counts as read
//     at every index; for a scatter write every read of the buffer counts),
//     the kernel may read values it has already overwritten:
//
//         functional (slot graph):                  rewritten (wrong):
//         rev = rev(x, [0])                         rev = rev(x, [0])
//         fa = _foreach_add([x], [rev])             _foreach_add_([x], [rev])  # one loop:
//         copy_(x, fa[0])                                    # x[i] += x[7 - i], x[7 - i]
//         return x                                  return x #   may already be written
//
//     Inductor protects the functional graph it expects itself: a write-back
//     `copy_(x, f(x))` reading the graph input x under its old name is
//     realized apart (its own scheduler refuses to fuse reads of x at other
//     indices with the write). So a read counts only where the rewrite
//     introduced the hazard: the write is new (anything but a write-back of
//     the functional graph), or it reads memory the rewritten graph wrote
//     before (a value the rewrite moved into the written buffer, which
//     Inductor then reads through another name):
//
//         functional (slot graph):                  rewritten (wrong):
//         ip = index_put(x, [i], v)                 ip = index_put_(x, [i], v)  # into x
//         rev = rev(ip, [0])                        rev = rev(ip, [0])   # reads x, new name
//         add = add(ip, rev)                        add = add(ip, rev)
//         copy_(x, add)                             copy_(x, add)   # fused: reads x flipped
//
//     while `add = add(x, rev(x)); copy_(x, add)`, unrewritten, is fine.
//
// Decided on the concrete memory the checker simulates: each element the write
// reads is followed back through the node that last wrote it (the per-cell
// writers of TagMemory), element by element through kPointwise nodes and moves
// (clone, copy, scatters), to every element of a kAnyIndex node's operands.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "check_model.h"
#include "tag_memory.h"

namespace fxinplace::checker {

struct ContractFinding {
  int32_t operand = -1;
  CheckReason reason = CheckReason::kOk;
  std::string message;
};

class InductorContract {
 public:
  // `memory` is the rewritten graph's simulated memory, read at each check.
  InductorContract(const CheckProblem& problem, const TagMemory& memory);

  // The rewritten graph's node `node` wrote `storage` (called for each effect).
  void wrote(int32_t storage, int32_t node);

  // Rule 5 for rewritten node `index`, its operands as they are before it runs.
  std::optional<ContractFinding> check(int32_t index) const;

 private:
  std::optional<ContractFinding> dtype_view(const CheckNode& node) const;
  std::optional<ContractFinding> fused_reads(int32_t index) const;
  // Whether a storage is written by a node strictly between `after` and `before`.
  bool written_between(int32_t storage, int32_t after, int32_t before) const;

  const CheckProblem& problem_;
  const CheckGraph& graph_;
  const TagMemory& memory_;
  std::vector<std::vector<int32_t>> writes_;  // per storage: the nodes that wrote it, in order
};

}  // namespace fxinplace::checker
