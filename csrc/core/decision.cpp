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
  static constexpr const char* kNames[] = {
#define FXINPLACE_ACTION_NAME(id, label, name) name,
      FXINPLACE_ACTIONS(FXINPLACE_ACTION_NAME)
#undef FXINPLACE_ACTION_NAME
  };
  auto k = static_cast<size_t>(a);
  return k < std::size(kNames) ? kNames[k] : "?";
}

const char* reason_text(Reason r) { return words_of(r).text; }

const char* reason_name(Reason r) { return words_of(r).name; }

}  // namespace fxinplace::core
