// Decides, for every node of a functional graph, whether it can write into a
// buffer it reads instead of allocating, following the stock
// torch.fx.passes.reinplace rules where they are sound and refusing where they
// are not. One forward walk over one alias model (alias_classes.h); every query
// is O(1) amortised against per-class summaries. Each rule writes a result into
// a *write slot* (graph_ir.h: an op's `self`, an auto_functionalized_v2 base)
// and passes the same checks (planner_slots.cpp).
#pragma once

#include <vector>

#include "decision.h"
#include "graph_ir.h"
#include "memory_plan.h"

namespace fxinplace::core {

struct PlanOptions {
  // Let an op write its result into a graph input that the program overwrites
  // afterwards with a write-back copy_ and reads nowhere in between; the
  // copy_ goes when it would copy the result onto itself. auto_functionalized_v2
  // bases always may (a custom op mutating its input in place is what the
  // program asked for); for ATen ops it changes the code the stock pass makes.
  bool reuse_written_back_inputs = false;
  // When `self` cannot be written, let an elementwise op write its result
  // into another operand that is dead afterwards: `add(a, b)` -> `b.add_(a)`
  // for commutative ops, `foo(a, b)` -> `foo.out(a, b, out=b)` where foo has
  // an out= form (the stock pass never does either).
  bool dead_operand_destinations = false;
  // The graph goes on to Inductor (its post-grad re-inplacing slot), whose
  // scheduler fuses the ops it generates and reuses their buffers itself:
  // rewrite only what Inductor lowers as a write and profits from (indexed
  // writes, collectives, scatters worth it, `_foreach_*` into written-back
  // inputs, auto_functionalized bases, ops it runs as library kernels), never
  // an op it would fuse (see planner_inductor.cpp).
  bool inductor = false;
  // The graph's outputs go to torch.compile's runtime (AOTAutograd), which
  // hands them to the next compiled graph and replays views on them: a
  // returned result keeps a storage of its own, never becoming a view of part
  // of another buffer (policies "compile" and "inductor"). A plain FX graph
  // may return such a view, as the stock pass makes it.
  bool outputs_taken_by_torch_compile = false;
  // The graph comes from AOTAutograd, which passes graph inputs that share a
  // storage, one of them mutated, as separate inputs only when no two of them
  // overlap (it merges overlapping ones into one synthetic base, and guards on
  // it under dynamic shapes): they are then disjoint memory even where their
  // symbolic storage offsets cannot show it. Set by the compile backend and
  // the Inductor hook; a plain FX graph's inputs may overlap in any way.
  bool shared_inputs_disjoint = false;
  // After re-inplacing, let results that still allocate go into buffers that
  // are dead by then, through the op's out= kernel (memory_plan.h). For a
  // graph run as it is (policy "compile"); never for Inductor, which plans its
  // own buffers.
  bool plan_memory = false;
};

struct Plan {
  std::vector<Decision> decisions;  // one per node, in graph order
  // How many forward walks were needed: a walk that removes a scatter the
  // verifier then proves wrong is repeated with that scatter kept.
  int walks = 0;
  // PlanOptions::plan_memory: the memory walk's outcome (empty otherwise).
  MemoryPlan memory;
  int count(Action a) const;
};

Plan plan_reinplace(const Graph& graph, const PlanOptions& options = {});

// Whether PlanOptions::inductor lets an op node write in place at all (the
// walk still checks each write): indexed writes, collectives, scatters (when
// worth it), ops Inductor runs as library kernels. `_foreach_*` and
// auto_functionalized nodes are decided per slot.
bool inductor_may_write(const Node& op);

}  // namespace fxinplace::core
