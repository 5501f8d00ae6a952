// What the planner decided for one node, and why, in words a user can act on.
#pragma once

#include <cstdint>
#include <vector>

#include "graph_ir.h"

namespace fxinplace::core {

// What the plan does with a node, in one list (the enum, its Python name and
// its stable name are generated from it):
//   keep             left as it is
//   inplace          swapped for its in-place overload; for auto_functionalized_v2: no base cloned
//   partial_inplace  auto_functionalized_v2: some bases written in place, others still cloned
//   scatter_to_copy  `x_scatter(base, src, args)` -> `view(base, args).copy_(src)`
//   remove_scatter   a scatter whose write already happened in place: deleted
//   remove_copy      a write-back copy_(input, value) whose value already is the input: deleted
//   remove_cast      `_to_copy(c, dtype=a.dtype)` of a `c = foo(a, ...)` now written as `foo_(a, ...)`,
//                    which stores the converted value itself: deleted (WriteSlot::cast)
#define FXINPLACE_ACTIONS(X)                             \
  X(kKeep, KEEP, "keep")                                 \
  X(kInplace, INPLACE, "inplace")                        \
  X(kPartialInplace, PARTIAL_INPLACE, "partial_inplace") \
  X(kScatterToCopy, SCATTER_TO_COPY, "scatter_to_copy")  \
  X(kRemoveScatter, REMOVE_SCATTER, "remove_scatter")    \
  X(kRemoveCopy, REMOVE_COPY, "remove_copy")             \
  X(kRemoveCast, REMOVE_CAST, "remove_cast")

enum class Action : uint8_t {
#define FXINPLACE_ACTION_ENUM(id, label, name) id,
  FXINPLACE_ACTIONS(FXINPLACE_ACTION_ENUM)
#undef FXINPLACE_ACTION_ENUM
};

// Every reason the planner gives, in one list: the enum, its stable name and
// its text are generated from it (decision.cpp), so they cannot drift apart.
#define FXINPLACE_REASONS(X)                                                                             \
  X(kNotCandidate, "not_candidate", "not a candidate: it writes no buffer it could reuse")               \
  X(kView, "view", "a view op: it allocates nothing")                                                    \
  X(kDone, "done", "done")                                                                               \
  X(kResultNotSingleTensor, "result_not_single_tensor", "the op does not return exactly one tensor")     \
  X(kMetadataMismatch, "metadata_mismatch", "result numel or dtype differs from self")                   \
  X(kShapeMismatch, "shape_mismatch", "result shape differs from self (it would broadcast into self)")   \
  X(kEmptyResult, "empty_result",                                                                        \
    "the result has no elements: in place it saves nothing, and kernels lay empty results out as they "  \
    "please, not always as recorded (policy='compile' or 'inductor')")                                   \
  X(kSelfOverlaps, "self_overlaps", "self has internal overlap (several indices share one element)")     \
  X(kViewOutsideSelf, "view_outside_self",                                                               \
    "as_strided_scatter's view reaches elements outside self, which its result does not carry back")     \
  X(kSelfIsInput, "self_is_input", "self aliases a graph input or constant")                             \
  X(kInputShared, "input_shared", "self is a graph input sharing storage with another input")            \
  X(kReturnedFromDonatedInput, "returned_from_donated_input",                                            \
    "self is a donated backward input and the result is returned: an output may not live in an "         \
    "input's memory")                                                                                    \
  X(kInputNotWrittenBack, "input_not_written_back",                                                      \
    "self is a graph input the program does not write back (no copy_ into it after the op)")             \
  X(kWritesOutsideInput, "writes_outside_input",                                                         \
    "the write reaches storage of a graph input outside its elements, which its write-back does not "    \
    "restore")                                                                                           \
  X(kResultReadAfterWriteBack, "result_read_after_write_back",                                           \
    "self is a graph input; the result would be read after the input's write-back, or returned")         \
  X(kWriteBackReordersResult, "write_back_reorders_result",                                              \
    "self is a graph input written back with another view of the result (a transpose): in the input's "  \
    "memory, the write-back would copy it onto itself in another order")                                 \
  X(kSelfRepeated, "self_repeated", "self is passed to the op more than once")                           \
  X(kOperandAliasesSelf, "operand_aliases_self", "another operand shares storage with self")             \
  X(kUsedLater, "used_later", "self or an alias of it is used later")                                    \
  X(kNoInplaceVariant, "no_inplace_variant", "the operator has no in-place variant")                     \
  X(kLayoutSensitiveUse, "layout_sensitive_use",                                                         \
    "self is laid out differently from the result, and a later view (view/as_strided), a read of its "   \
    "strides, a result computed from it or a graph output would show the other layout")                  \
  X(kCompilerFuses, "compiler_fuses",                                                                    \
    "Inductor generates and fuses this op's code and reuses its buffers itself; an in-place op here "    \
    "would only block fusion (policy='inductor')")                                                       \
  X(kScatterKeptForFusion, "scatter_kept_for_fusion",                                                    \
    "the scatter stays functional so that Inductor fuses it with its producers and users: neither "      \
    "its base nor its result is in a buffer of its own anyway (policy='inductor')")                      \
  X(kForeachIntoIntermediate, "foreach_into_intermediate",                                               \
    "a _foreach_* op is rewritten only where the epilogue copies its result straight back into the "     \
    "list's graph input; Inductor fuses it otherwise (policy='inductor')")                               \
  X(kScatterUnproven, "scatter_unproven",                                                                \
    "a later scatter reads self's memory and cannot be removed: its source never lands in place")        \
  X(kSelfFlipsValues, "self_flips_values",                                                               \
    "self is a conj() or _neg_view() view: the result would read back conjugated or negated, and its "   \
    "users would see the bit")                                                                           \
  X(kInductorDtypeView, "inductor_dtype_view",                                                           \
    "self is a view whose dtype differs from its buffer's; Inductor lowers a write through it as a "     \
    "value conversion (policy='inductor')")                                                              \
  X(kInductorFusedRead, "inductor_fused_read",                                                           \
    "Inductor would compute, inside the loop that writes this buffer, a value read from the buffer at "  \
    "other elements than the loop writes (a flip, transpose, gather or reduction of it): it would read " \
    "elements already overwritten (policy='inductor')")                                                  \
  X(kInductorOpaqueView, "inductor_opaque_view",                                                         \
    "the write goes through a view Inductor runs as a library kernel (its tensors are of a type "        \
    "Inductor generates no code for, complex): Inductor would not see the write as one of the base "     \
    "and could order a later read of the base before it (policy='inductor')")                            \
  X(kInductorEmptyOutputView, "inductor_empty_output_view",                                              \
    "the result's memory is returned through a view with no elements; Inductor would return that view "  \
    "of a buffer it sees written in place as a fresh empty tensor, without the buffer's storage "        \
    "(policy='inductor')")                                                                               \
  X(kInductorLazyViewBase, "inductor_lazy_view_base",                                                    \
    "the base is a view of code Inductor has not put in a buffer of its own: written in place, later "   \
    "users would see Inductor's lazy view of that code where a fresh buffer stood, which its "           \
    "as_strided lowering cannot take through a dtype view (policy='inductor')")                          \
  X(kNoCompilerInplaceLowering, "no_compiler_inplace_lowering",                                          \
    "Inductor has no lowering for the in-place form: it would run as a library kernel and keep a "       \
    "buffer the functional form fuses away (policy='inductor')")                                         \
  X(kReturnedAsPartialView, "returned_as_partial_view",                                                  \
    "the result is returned, and self views only part of a buffer: the output would be that view "       \
    "(another storage, a _base) where the program returns a tensor of its own (policies 'compile' and "  \
    "'inductor', whose outputs torch.compile's runtime takes)")

enum class Reason : uint8_t {
#define FXINPLACE_REASON_ENUM(id, name, text) id,
  FXINPLACE_REASONS(FXINPLACE_REASON_ENUM)
#undef FXINPLACE_REASON_ENUM
};

const char* action_name(Action a);
const char* reason_text(Reason r);
const char* reason_name(Reason r);  // a stable identifier, e.g. "used_later"

// One write slot's outcome (see WriteSlot), in the node's slot order.
struct SlotDecision {
  bool in_place = false;
  Reason reason = Reason::kNotCandidate;
  NodeId culprit = kNoNode;
};

struct Decision {
  Action action = Action::kKeep;
  Reason reason = Reason::kNotCandidate;
  NodeId culprit = kNoNode;         // the later use or the aliasing operand behind a refusal
  NodeId replacement = kNoNode;     // for a rewritten node: who its users read instead
  std::vector<SlotDecision> slots;  // auto_functionalized_v2 / _foreach_*: one per write slot
  int32_t slot = 0;                 // ATen ops: the write slot taken (0: self)
};

}  // namespace fxinplace::core
