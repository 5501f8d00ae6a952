#include "decision.h"

#include <cstddef>
#include <iterator>

#include "memory_plan.h"

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

// The memory walk's reasons (memory_plan.h), the same way.
constexpr ReasonWords kMemoryReasonWords[] = {
#define FXINPLACE_MEMORY_REASON_WORDS(id, name, text) {name, text},
    FXINPLACE_MEMORY_REASONS(FXINPLACE_MEMORY_REASON_WORDS)
#undef FXINPLACE_MEMORY_REASON_WORDS
};

constexpr ReasonWords kUnknownReason = {"?", "?"};

template <class E, size_t N>
const ReasonWords& words_in(const ReasonWords (&table)[N], E r) {
  auto k = static_cast<size_t>(r);
  return k < N ? table[k] : kUnknownReason;
}

const ReasonWords& words_of(Reason r) { return words_in(kReasonWords, r); }

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

const char* memory_reason_text(MemoryReason r) { return words_in(kMemoryReasonWords, r).text; }

const char* memory_reason_name(MemoryReason r) { return words_in(kMemoryReasonWords, r).name; }

}  // namespace fxinplace::core
