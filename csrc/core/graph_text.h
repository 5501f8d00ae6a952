// The planner's input as text, and back: a failing case found by a random run
// on the Python side is saved as a file and replayed by a C++ test
// (test/cpp/replay_test.cpp) without torch. One line per node:
//
//   storages 3
//   node 0 input x_1 results=[s0 d0 sizes(4,4) strides(4,1) offset 0]
//   node 1 op add self=0 slots=[0:0:0:0] operands=0 inplace pointwise results=[s1 d0 ...]
//   expect 1 inplace done
//
// Extents are integers or `$<symbol>`; absent fields take the IR's defaults.
// `expect` lines (node, action, reason code) are what the replay checks.
#pragma once

#include <string>
#include <vector>

#include "graph_ir.h"
#include "reinplace_planner.h"

namespace fxinplace::core {

std::string graph_to_text(const Graph& g);

struct ExpectedDecision {
  NodeId node = kNoNode;
  std::string action;  // action_name()
  std::string reason;  // reason_name()
};

struct GraphText {
  Graph graph;
  std::vector<ExpectedDecision> expected;
};

// Throws std::invalid_argument naming the line on malformed text.
GraphText graph_from_text(const std::string& text);

// `expect` lines for a plan (only nodes that are candidates or changed).
std::string expectations_to_text(const Plan& plan);

}  // namespace fxinplace::core
