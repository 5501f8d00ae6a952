// What the planner decided for one node, and why, in words a user can act on.
#pragma once

#include <cstdint>

#include "graph_ir.h"

namespace fxinplace::core {

enum class Action : uint8_t {
  kKeep,           // left as it is
  kInplace,        // swapped for its in-place overload
  kScatterToCopy,  // `x_scatter(base, src, args)` -> `view(base, args).copy_(src)`
  kRemoveScatter,  // a scatter whose write already happened in place: deleted
};

enum class Reason : uint8_t {
  kNotCandidate,           // no tensor `self` to write into
  kView,                   // a view allocates nothing, so there is nothing to save
  kDone,                   // the action was taken
  kResultNotSingleTensor,  // the op returns several tensors or none
  kMetadataMismatch,       // result numel/dtype differs from self's
  kShapeMismatch,          // result shape differs from self's (broadcasting into self)
  kSelfOverlaps,           // self has internal overlap (e.g. an expanded tensor)
  kSelfIsInput,            // self shares storage with a graph input or constant
  kSelfRepeated,           // self is passed to the op more than once
  kOperandAliasesSelf,     // another operand shares self's storage
  kUsedLater,              // self, or an alias of it, is read after the op
  kNoInplaceVariant,       // the operator has no in-place overload
  kLayoutSensitiveUse,     // self is laid out differently and a later view depends on layout
  kScatterUnproven,  // a later scatter would only be a no-op if its source landed in place, and it does not
};

const char* action_name(Action a);
const char* reason_text(Reason r);
const char* reason_name(Reason r);  // a stable identifier, e.g. "used_later"

struct Decision {
  Action action = Action::kKeep;
  Reason reason = Reason::kNotCandidate;
  NodeId culprit = kNoNode;      // the later use or the aliasing operand behind a refusal
  NodeId replacement = kNoNode;  // for a rewritten node: who its users read instead
};

}  // namespace fxinplace::core
