#include "decision.h"

#include <cstddef>
#include <iterator>

namespace fxinplace::core {
namespace {

// Each reason's stable name and text, in the enum's order: both the enum and
// this table are generated from FXINPLACE_REASONS.
struct ReasonWords {
  const char* name;
  const char* text;
};

constexpr ReasonWords kReasonWords[] = {
#define FXINPLACE_REASON_WORDS(id, name, text) {name, text},
    FXINPLACE_REASONS(FXINPLACE_REASON_WORDS)
#undef FXINPLACE_REASON_WORDS
};

constexpr ReasonWords kUnknownReason = {"?", "?"};

const ReasonWords& words_of(Reason r) {
  auto k = static_cast<size_t>(r);
  return k < std::size(kReasonWords) ? kReasonWords[k] : kUnknownReason;
}

}  // namespace

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

const char* reason_text(Reason r) { return words_of(r).text; }

const char* reason_name(Reason r) { return words_of(r).name; }

}  // namespace fxinplace::core
