// The memory planner: a second forward walk over the re-inplacing planner's
// alias model, after its decisions. What re-inplacing cannot recover (a
// result whose operands are all still live) may still go into a buffer that
// is already dead: `y = mm(a, b)` -> `y = mm.out(a, b, out=d)`, where `d` is
// a tensor of exactly y's sizes, strides, dtype and device whose memory no
// one reads again. The op then allocates nothing (policy "compile" only: a
// compiler that plans its own buffers, Inductor, gets none of this).
//
//   before                          after
//   d = bmm(p, q)                   d = bmm(p, q)
//   e = sum(d)       # d dies       e = sum(d)
//   y = mm(a, b)     # allocates    y = mm.out(a, b, out=d)
//
// A buffer of another layout but the same byte count, dtype and device serves
// too when the result is dense from offset 0 (it then covers the same bytes):
// `y = mm.out(a, b, out=as_strided(d, y.sizes, y.strides, 0))`.
//
// Safe because every alias of d's memory (views included) is read for the
// last time strictly before the op, so the op reads none of it (an `out=`
// kernel may not overlap its inputs), and no input, constant, output or
// opaque node ever owns that memory; ATen's `out=` kernel keeps `out`'s
// strides when its sizes match, so y is laid out as the functional op lays
// it out, and structured kernels compute the same values both ways.
#pragma once

#include <cstdint>
#include <vector>

#include "alias_classes.h"
#include "decision.h"
#include "graph_ir.h"

namespace fxinplace::core {

// Every outcome of the memory walk for an op node, in one list (enum, stable
// name and text generated from it, as for the re-inplacing reasons).
#define FXINPLACE_MEMORY_REASONS(X)                                                                     \
  X(kNotAllocating, "not_allocating", "allocates nothing the planner could place (not an op result)")   \
  X(kReused, "reused", "written into a dead buffer")                                                    \
  X(kWrittenInPlace, "written_in_place", "already written in place by re-inplacing: allocates nothing") \
  X(kSeveralResults, "several_results", "the op returns more or less than one tensor")                  \
  X(kNoOutKernel, "no_out_kernel",                                                                      \
    "the op has no out= kernel of its own for this device (a generated out= form computes and copies, " \
    "saving nothing)")                                                                                  \
  X(kNoDeadBuffer, "no_dead_buffer",                                                                    \
    "no dead buffer of the same device, dtype, sizes and strides (or byte count, where the result "     \
    "can be laid out in any)")                                                                          \
  X(kWouldRaisePeak, "would_raise_peak",                                                                \
    "holding the dead buffer until this op would raise the modelled peak of live bytes")

enum class MemoryReason : uint8_t {
#define FXINPLACE_MEMORY_REASON_ENUM(id, name, text) id,
  FXINPLACE_MEMORY_REASONS(FXINPLACE_MEMORY_REASON_ENUM)
#undef FXINPLACE_MEMORY_REASON_ENUM
};

const char* memory_reason_text(MemoryReason r);
const char* memory_reason_name(MemoryReason r);

struct MemoryDecision {
  MemoryReason reason = MemoryReason::kNotAllocating;
  // kReused: the node whose tensor is passed as out=, and the last node that
  // read its memory before (the buffer is held from there to this op).
  NodeId donor = kNoNode;
  NodeId freed_after = kNoNode;
  // kReused into a buffer of the same byte count but another layout: the
  // op writes into `as_strided(donor, sizes, strides, 0)` of its own result.
  bool restrided = false;
  // The op's result size in bytes as the frontend gave it (a size hint for
  // symbolic sizes: it only feeds the peak model, never a decision on layout).
  Int bytes = 0;
};

struct MemoryPlan {
  std::vector<MemoryDecision> decisions;  // one per node
  Int bytes_reused = 0;                   // summed over reuses
  Int modelled_peak = 0;                  // live bytes at the peak, before and after (it never rises)
};

// `classes` is the re-inplacing walk's final alias model (merged by its
// decisions); the memory walk merges it further as results take buffers.
MemoryPlan plan_memory(const Graph& g, AliasClasses& classes, const std::vector<Decision>& decisions);

}  // namespace fxinplace::core
