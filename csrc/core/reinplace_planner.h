// Decides, for every node of a functional graph, whether it can write into its
// `self` buffer instead of allocating, following the stock
// torch.fx.passes.reinplace rules where they are sound and refusing where they
// are not. One forward walk; every query is O(1) amortised against per-class
// summaries (union-find over storages).
#pragma once

#include <vector>

#include "decision.h"
#include "graph_ir.h"

namespace fxinplace::core {

struct Plan {
  std::vector<Decision> decisions;  // one per node, in graph order
  // How many forward walks were needed: a walk that removes a scatter the
  // verifier then proves wrong is repeated with that scatter kept.
  int walks = 0;
  int num_inplace() const;
  int num_scatters_removed() const;
  int num_scatters_to_copy() const;
};

Plan plan_reinplace(const Graph& graph);

}  // namespace fxinplace::core
