// A size, stride or storage offset as the planner knows it: either a known
// integer, or a symbolic value (a SymInt of a dynamic-shape or data-dependent
// trace) known only by identity. Two symbolic extents with the same symbol are
// the same expression, hence equal; nothing else is assumed of them, so every
// question whose answer needs a symbolic value's magnitude gets the cautious
// answer. Known values are combined with overflow-checked arithmetic for the
// same reason: a wrapped product must never pass for a small one.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>

namespace fxinplace::core {

using Int = int64_t;

class Extent {
 public:
  // Implicit: a plain integer is a known extent (keeps literals readable).
  constexpr Extent(Int value = 0) : value_(value), symbol_(kKnown) {}  // NOLINT(google-explicit-constructor)
  static constexpr Extent symbolic(int32_t symbol) { return Extent(symbol, /*is_symbol=*/true); }

  constexpr bool is_known() const { return symbol_ == kKnown; }
  // The integer; only meaningful when is_known().
  constexpr Int value() const { return value_; }
  // The symbol's id; only meaningful when !is_known().
  constexpr int32_t symbol() const { return static_cast<int32_t>(value_); }
  // True only when the extent is known to equal `v`.
  constexpr bool is(Int v) const { return is_known() && value_ == v; }

  constexpr bool operator==(const Extent& other) const {
    return symbol_ == other.symbol_ && value_ == other.value_;
  }
  constexpr bool operator!=(const Extent& other) const { return !(*this == other); }

  size_t hash() const { return std::hash<Int>()(value_) ^ (static_cast<size_t>(symbol_) << 1); }

 private:
  static constexpr int8_t kKnown = 0;
  static constexpr int8_t kSymbol = 1;
  constexpr Extent(Int symbol, bool) : value_(symbol), symbol_(kSymbol) {}

  Int value_;
  int8_t symbol_;
};

// Overflow-checked arithmetic on known integers: nullopt when the exact result
// does not fit in 64 bits.
inline std::optional<Int> checked_add(Int a, Int b) {
  Int r = 0;
  if (__builtin_add_overflow(a, b, &r)) return std::nullopt;
  return r;
}
inline std::optional<Int> checked_mul(Int a, Int b) {
  Int r = 0;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}

}  // namespace fxinplace::core
