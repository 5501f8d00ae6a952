// Replays saved planner inputs (test/cpp/cases/*.ir, written by
// fxinplace.testing.planner_input from a graph, e.g. a failing random case)
// and checks each file's `expect` lines, without torch.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "graph_text.h"
#include "reinplace_planner.h"
#include "test_geometry_helpers.h"

using namespace fxinplace::core;

namespace {

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

}  // namespace

TEST(Replay, EverySavedCaseMeetsItsExpectations) {
  int cases = 0;
  for (const auto& entry : std::filesystem::directory_iterator(FXINPLACE_REPLAY_CASES)) {
    if (entry.path().extension() != ".ir") continue;
    ++cases;
    SCOPED_TRACE(entry.path().filename().string());
    GraphText parsed = graph_from_text(read_file(entry.path()));
    ASSERT_FALSE(parsed.expected.empty()) << "a case without expect lines checks nothing";
    Plan plan = plan_reinplace(parsed.graph);
    for (const ExpectedDecision& e : parsed.expected) {
      ASSERT_LT(static_cast<size_t>(e.node), plan.decisions.size());
      const Decision& d = plan.decisions[static_cast<size_t>(e.node)];
      EXPECT_EQ(action_name(d.action), e.action) << "node " << e.node << " " << parsed.graph.at(e.node).name;
      EXPECT_EQ(reason_name(d.reason), e.reason) << "node " << e.node << " " << parsed.graph.at(e.node).name;
    }
  }
  EXPECT_GT(cases, 0);
}

// x = input; a = clone(x) (symbolic rows); v = slice(a); r = add(a, v); return r
TEST(Replay, TextRoundTripsTheIR) {
  Graph g;
  Node x;
  x.kind = NodeKind::kInput;
  x.name = "x";
  TensorValue v;
  v.storage = g.new_storage();
  Geometry geom;
  geom.sizes = {Extent::symbolic(0), 4};
  geom.strides = {4, 1};
  geom.proven_dense_order = std::vector<int32_t>{1, 0};
  v.geom = g.geom(geom);
  v.shape = g.shape(geom.sizes);
  v.dtype = 3;
  x.results.push_back(v);
  g.add(x);
  Node op;
  op.kind = NodeKind::kOp;
  op.name = "add";
  op.self = 0;
  op.operands = {0, 0};
  op.has_inplace = op.pointwise = true;
  op.slots = {WriteSlot{0, 0, 0, false}};
  op.scatter.kind = ScatterKind::kSlice;
  op.scatter.ints = {0, 1, ScatterSpec::kUnset, 1};
  op.scatter.replayable = true;
  op.scatter.view_on_recorded_base = geom;
  TensorValue r = v;
  r.storage = g.new_storage();
  op.results.push_back(r);
  g.add(op);
  std::string text = graph_to_text(g);
  GraphText back = graph_from_text(text);
  EXPECT_EQ(graph_to_text(back.graph), text);
  EXPECT_FALSE(back.graph.geometries().at(back.graph.at(1).results[0].geom).is_known());
  EXPECT_THROW(graph_from_text("node 0 nonsense x\n"), std::invalid_argument);
}
