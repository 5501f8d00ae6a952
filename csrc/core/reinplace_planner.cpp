#include "reinplace_planner.h"

#include <algorithm>

#include "planner_walk.h"

namespace fxinplace::core {

int Plan::count(Action a) const {
  return static_cast<int>(
      std::count_if(decisions.begin(), decisions.end(), [a](const Decision& d) { return d.action == a; }));
}

Plan plan_reinplace(const Graph& graph, const PlanOptions& options) {
  std::vector<bool> kept(graph.size(), false);
  Plan plan;
  while (true) {
    ++plan.walks;
    Walk walk(graph, options, kept);
    walk.run();
    std::vector<NodeId> bad = walk.unsound_removals();
    if (bad.empty()) {
      plan.decisions = walk.decisions();
      if (options.plan_memory && !options.inductor)
        plan.memory = plan_memory(graph, walk.classes(), plan.decisions);
      return plan;
    }
    for (NodeId j : bad) kept[static_cast<size_t>(j)] = true;
  }
}

}  // namespace fxinplace::core
