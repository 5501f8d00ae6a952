#include "decision.h"

namespace fxinplace::core {

const char* action_name(Action a) {
  switch (a) {
    case Action::kKeep:
      return "keep";
    case Action::kInplace:
      return "inplace";
    case Action::kScatterToCopy:
      return "scatter_to_copy";
    case Action::kRemoveScatter:
      return "remove_scatter";
  }
  return "?";
}

const char* reason_text(Reason r) {
  switch (r) {
    case Reason::kNotCandidate:
      return "not a candidate: no tensor self argument";
    case Reason::kView:
      return "a view op: it allocates nothing";
    case Reason::kDone:
      return "done";
    case Reason::kResultNotSingleTensor:
      return "the op does not return exactly one tensor";
    case Reason::kMetadataMismatch:
      return "result numel or dtype differs from self";
    case Reason::kShapeMismatch:
      return "result shape differs from self (it would broadcast into self)";
    case Reason::kSelfOverlaps:
      return "self has internal overlap (several indices share one element)";
    case Reason::kSelfIsInput:
      return "self aliases a graph input or constant";
    case Reason::kSelfRepeated:
      return "self is passed to the op more than once";
    case Reason::kOperandAliasesSelf:
      return "another operand shares storage with self";
    case Reason::kUsedLater:
      return "self or an alias of it is used later";
    case Reason::kNoInplaceVariant:
      return "the operator has no in-place variant";
    case Reason::kLayoutSensitiveUse:
      return "self is laid out differently from the result, and a later view (view/as_strided), a result "
             "computed from it or a graph output would show the other layout";
    case Reason::kScatterUnproven:
      return "a later scatter reads self's memory and cannot be removed: its source never lands in place";
  }
  return "?";
}

const char* reason_name(Reason r) {
  switch (r) {
    case Reason::kNotCandidate:
      return "not_candidate";
    case Reason::kView:
      return "view";
    case Reason::kDone:
      return "done";
    case Reason::kResultNotSingleTensor:
      return "result_not_single_tensor";
    case Reason::kMetadataMismatch:
      return "metadata_mismatch";
    case Reason::kShapeMismatch:
      return "shape_mismatch";
    case Reason::kSelfOverlaps:
      return "self_overlaps";
    case Reason::kSelfIsInput:
      return "self_is_input";
    case Reason::kSelfRepeated:
      return "self_repeated";
    case Reason::kOperandAliasesSelf:
      return "operand_aliases_self";
    case Reason::kUsedLater:
      return "used_later";
    case Reason::kNoInplaceVariant:
      return "no_inplace_variant";
    case Reason::kLayoutSensitiveUse:
      return "layout_sensitive_use";
    case Reason::kScatterUnproven:
      return "scatter_unproven";
  }
  return "?";
}

}  // namespace fxinplace::core
