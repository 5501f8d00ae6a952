#include "decision.h"

namespace fxinplace::core {

const char* action_name(Action a) {
  switch (a) {
    case Action::kKeep:
      return "keep";
    case Action::kInplace:
      return "inplace";
    case Action::kPartialInplace:
      return "partial_inplace";
    case Action::kScatterToCopy:
      return "scatter_to_copy";
    case Action::kRemoveScatter:
      return "remove_scatter";
    case Action::kRemoveCopy:
      return "remove_copy";
  }
  return "?";
}

const char* reason_text(Reason r) {
  switch (r) {
#define FXINPLACE_REASON_TEXT(id, name, text) \
  case Reason::id:                            \
    return text;
    FXINPLACE_REASONS(FXINPLACE_REASON_TEXT)
#undef FXINPLACE_REASON_TEXT
  }
  return "?";
}

const char* reason_name(Reason r) {
  switch (r) {
#define FXINPLACE_REASON_NAME(id, name, text) \
  case Reason::id:                            \
    return name;
    FXINPLACE_REASONS(FXINPLACE_REASON_NAME)
#undef FXINPLACE_REASON_NAME
  }
  return "?";
}

}  // namespace fxinplace::core
