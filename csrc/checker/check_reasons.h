// The rewrite checker's verdicts: one table, the checker's own (the planner's
// reasons are FXINPLACE_REASONS in decision.h; the two share nothing).
//
// Each entry: enumerator, stable name (what ReinplaceCheckError.reason says;
// tests compare it, so it never changes), text. Reasons found by the Python
// frontend (python/fxinplace/_checker/: argument comparison, a node that
// raises, graphs it cannot read) are in the table too; Python reads them as
// fxinplace._C.checker.CheckReason.<name>.
#pragma once

#include <cstddef>
#include <cstdint>
#include <iterator>

namespace fxinplace::checker {

#define FXINPLACE_CHECK_REASONS(X)                                                                         \
  X(kOk, "ok", "the rewritten graph computes what the functional graph computes")                          \
  /* Values (rule 1). */                                                                                   \
  X(kWrongValue, "wrong_value", "an operand or output holds another value than the functional graph's")    \
  X(kWrongShape, "wrong_shape", "an operand, output or computed value has another shape")                  \
  X(kWrongDtype, "wrong_dtype", "an operand, output or computed value has another dtype")                  \
  X(kOperandCount, "operand_count", "a node has another number of tensor operands")                        \
  X(kWrongArgument, "wrong_argument", "a non-tensor argument differs from the functional node's")          \
  X(kMetadataChanged, "metadata_changed", "an in-place op changed its self's sizes, strides or offset")    \
  X(kFinalInput, "final_input", "a graph input ends with other contents than the functional graph leaves") \
  /* Outputs (rule 2). */                                                                                  \
  X(kOutputAliasesInput, "output_aliases_input",                                                           \
    "an output shares memory with a graph input other than as in the functional graph")                    \
  X(kOutputAliasesOutput, "output_aliases_output",                                                         \
    "two outputs share memory other than as in the functional graph")                                      \
  X(kOutputLayout, "output_layout",                                                                        \
    "an output has other strides or storage offset than the functional graph's (eager's) output")          \
  /* Writes into graph inputs and constants (rule 3). */                                                   \
  X(kInputWritten, "input_written", "a graph input is written other than by a write-back")                 \
  X(kConstantWritten, "constant_written", "a module constant is written")                                  \
  /* Aliasing of in-place ops (rule 4). */                                                                 \
  X(kSelfOverlap, "self_overlap", "an in-place op writes a self whose elements share memory")              \
  X(kOperandOverlapsSelf, "operand_overlaps_self",                                                         \
    "an in-place op reads an operand overlapping self other than as exactly self (pointwise ops)")         \
  X(kForeachSelfOverlap, "foreach_self_overlap", "a _foreach_*_ op writes list elements sharing memory")   \
  X(kOperandOverlapsOtherElement, "operand_overlaps_other_element",                                        \
    "a _foreach_*_ op's operand of one list element overlaps another element's self")                      \
  X(kOperandOverlapsWritten, "operand_overlaps_written",                                                   \
    "a custom op writes an operand sharing memory with another, unlike the functional call")               \
  /* Inductor's contract (rule 5, check_reinplaced(compiler="inductor")). */                               \
  X(kWriteThroughDtypeView, "write_through_dtype_view",                                                    \
    "an in-place write through a view whose dtype differs from its buffer's, which Inductor lowers "       \
    "as a value conversion (or cannot index)")                                                             \
  X(kFusedReadHazard, "fused_read_hazard",                                                                 \
    "a write whose fused producers read the written buffer at other elements than the one written at "     \
    "the same loop index, a hazard the rewrite introduced")                                                \
  /* The rewritten graph raised, or the checker could not decide. */                                       \
  X(kRaised, "raised", "a node of the rewritten graph raised on the sample args")                          \
  X(kCannotCheck, "cannot_check", "the checker cannot model these graphs")                                 \
  X(kFunctionalRaised, "functional_raised",                                                                \
    "the functional graph itself raises on the sample args: no values to check against")

enum class CheckReason : uint8_t {
#define FXINPLACE_CHECK_REASON_ENUM(id, name, text) id,
  FXINPLACE_CHECK_REASONS(FXINPLACE_CHECK_REASON_ENUM)
#undef FXINPLACE_CHECK_REASON_ENUM
};

// The stable name ("wrong_value") and the text of each reason, in the enum's order.
struct CheckReasonWords {
  const char* name;
  const char* text;
};

inline const CheckReasonWords& check_reason_words(CheckReason r) {
  static constexpr CheckReasonWords kWords[] = {
#define FXINPLACE_CHECK_REASON_WORDS(id, name, text) {name, text},
      FXINPLACE_CHECK_REASONS(FXINPLACE_CHECK_REASON_WORDS)
#undef FXINPLACE_CHECK_REASON_WORDS
  };
  static constexpr CheckReasonWords kUnknown = {"?", "?"};
  auto k = static_cast<size_t>(r);
  return k < std::size(kWords) ? kWords[k] : kUnknown;
}

inline const char* check_reason_name(CheckReason r) { return check_reason_words(r).name; }

inline const char* check_reason_text(CheckReason r) { return check_reason_words(r).text; }

}  // namespace fxinplace::checker
