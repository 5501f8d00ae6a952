#include "python/graph_builder.h"

#include <pybind11/stl.h>

#include <optional>
#include <tuple>

#include "core/graph_builder.h"
#include "python/extent_caster.h"
#include "torch/op_facts.h"

namespace py = pybind11;
using namespace fxinplace::core;
using fxinplace::torch_bridge::OpFacts;

namespace fxinplace::python {
namespace {

// (storage, sizes, strides, offset, proven_dense_order, dtype): one tensor a
// node produces. proven_dense_order: for symbolic geometry, its dims from the
// innermost out when the frontend proved it dense (see core::Geometry).
using ResultTuples = std::vector<std::tuple<StorageId, std::vector<Extent>, std::vector<Extent>, Extent,
                                            std::optional<std::vector<int32_t>>, int32_t>>;
using Results = GraphBuilder::Results;

// (sizes, strides, offset, proven_dense_order) of a view a scatter inverts.
using GeometryTuple =
    std::tuple<std::vector<Extent>, std::vector<Extent>, Extent, std::optional<std::vector<int32_t>>>;

Results records(const ResultTuples& results) {
  Results out;
  out.reserve(results.size());
  for (const auto& [storage, sizes, strides, offset, dense_order, dtype] : results)
    out.push_back(TensorRecord{storage, make_geometry(sizes, strides, offset, dense_order), dtype});
  return out;
}

OpTraits traits(const OpFacts& facts) {
  OpTraits t;
  t.view = facts.view;
  t.layout_use = facts.layout_use;
  t.scatter = facts.scatter;
  t.self_is_tensor = facts.self_is_tensor;
  t.mutates = facts.mutates;
  t.has_inplace = facts.has_inplace;
  t.pointwise = facts.pointwise;
  t.is_resize = facts.is_resize;
  t.indexed_write = facts.indexed_write;
  t.collective = facts.collective;
  t.reads_memory = facts.reads_memory;
  t.keeps_self_geometry = facts.keeps_self_geometry;
  return t;
}

PlanOptions options(bool reuse_written_back_inputs, bool dead_operand_destinations, bool inductor,
                    bool outputs_taken_by_torch_compile, bool plan_memory = false,
                    bool shared_inputs_disjoint = false) {
  PlanOptions o;
  o.shared_inputs_disjoint = shared_inputs_disjoint;
  o.plan_memory = plan_memory;
  o.reuse_written_back_inputs = reuse_written_back_inputs;
  o.dead_operand_destinations = dead_operand_destinations;
  o.inductor = inductor;
  o.outputs_taken_by_torch_compile = outputs_taken_by_torch_compile;
  return o;
}

NodeId op(GraphBuilder& b, std::string name, const OpFacts& facts, std::optional<NodeId> self,
          std::vector<NodeId> operands, const ResultTuples& results,
          std::optional<std::tuple<std::vector<Int>, std::vector<Int>, std::vector<Int>>> scatter_args,
          std::optional<NodeId> scatter_src, std::optional<GeometryTuple> scatter_view,
          const std::vector<std::pair<NodeId, Destination>>& destinations) {
  ScatterCall scatter;
  scatter.src = scatter_src ? *scatter_src : kNoNode;
  if (scatter_args) {
    ScatterSpec spec;
    std::tie(spec.ints, spec.sizes, spec.strides) = *scatter_args;
    scatter.args = std::move(spec);
  }
  if (scatter_view) scatter.view = std::apply(make_geometry, *scatter_view);
  return b.op(std::move(name), traits(facts), self, std::move(operands), records(results), scatter,
              destinations);
}

NodeId auto_functionalized(GraphBuilder& b, std::string name, std::vector<NodeId> operands,
                           const ResultTuples& results,
                           const std::vector<std::tuple<NodeId, int32_t, int32_t, bool>>& slots,
                           std::vector<NodeId> absolute_layout_reads) {
  std::vector<SlotRecord> records_of_slots;
  for (const auto& [target, result, item, in_place] : slots)
    records_of_slots.push_back(SlotRecord{target, result, item, in_place});
  return b.auto_functionalized(std::move(name), std::move(operands), records(results), records_of_slots,
                               std::move(absolute_layout_reads));
}

}  // namespace

void bind_graph_builder(py::module_& m) {
  py::class_<GraphBuilder>(m, "GraphBuilder",
                           "Builds the planner's picture of a graph, one node per call, in graph order.")
      .def(py::init<>())
      .def(
          "input",
          [](GraphBuilder& b, std::string name, const ResultTuples& r) { return b.input(name, records(r)); },
          py::arg("name"), py::arg("results"))
      .def(
          "constant",
          [](GraphBuilder& b, std::string name, const ResultTuples& r) {
            return b.constant(name, records(r));
          },
          py::arg("name"), py::arg("results"))
      .def(
          "other",
          [](GraphBuilder& b, std::string name, std::vector<NodeId> operands, const ResultTuples& r) {
            return b.other(name, std::move(operands), records(r));
          },
          py::arg("name"), py::arg("operands"), py::arg("results"),
          "Any other call: reads its operands, returns fresh tensors.")
      .def("output", &GraphBuilder::output, py::arg("name"), py::arg("operands"))
      .def("op", &op, py::arg("name"), py::arg("facts"), py::arg("self"), py::arg("operands"),
           py::arg("results"), py::arg("scatter_args") = py::none(), py::arg("scatter_src") = py::none(),
           py::arg("scatter_view") = py::none(),
           py::arg("destinations") = std::vector<std::pair<NodeId, Destination>>{},
           "An ATen operator overload. scatter_args (ints, sizes, strides): a *_scatter's view arguments "
           "when all are known; scatter_view: the geometry of that view on the recorded base; destinations: "
           "other operands its result may go into (node, SWAPPED or OUT), tried in order after self.")
      .def("cast_slot", &GraphBuilder::cast_slot, py::arg("op"), py::arg("cast"),
           "Node `cast` is `_to_copy(op, dtype=<op's self's dtype>)`, the only user of op's result, and "
           "op's in-place form stores its result converted (OpFacts.inplace_stores_converted): op may "
           "write self through the cast, which then goes (policy 'compile').")
      .def(
          "getitem",
          [](GraphBuilder& b, std::string name, NodeId source, int32_t index, const ResultTuples& r) {
            return b.getitem(name, source, index, records(r));
          },
          py::arg("name"), py::arg("source"), py::arg("index"), py::arg("results"))
      .def("auto_functionalized", &auto_functionalized, py::arg("name"), py::arg("operands"),
           py::arg("results"), py::arg("slots"), py::arg("absolute_layout_reads") = std::vector<NodeId>{},
           "auto_functionalized_v2 (or auto_functionalized, v1); slots: (base node (v1: written argument), "
           "index of its new value in results, its position in the node's value, already not cloned); "
           "absolute_layout_reads: bases it views by storage offset and strides (as_strided encodings).")
      .def(
          "foreach",
          [](GraphBuilder& b, std::string name, std::vector<NodeId> operands, const ResultTuples& r,
             const std::vector<NodeId>& self_list, bool collective, std::vector<int32_t> operand_elements,
             bool keeps_self_geometry) {
            return b.foreach_op(name, std::move(operands), records(r), self_list, collective,
                                std::move(operand_elements), keeps_self_geometry);
          },
          py::arg("name"), py::arg("operands"), py::arg("results"), py::arg("self_list"),
          py::arg("collective") = false, py::arg("operand_elements") = std::vector<int32_t>{},
          py::arg("keeps_self_geometry") = false,
          "A _foreach_* op with a _foreach_*_ form; self_list: the nodes of its first list, in order "
          "(result k may be written into self_list[k]; all or none); collective: a list collective "
          "(all_reduce_coalesced) rather than a _foreach_* op; operand_elements: for each operand, "
          "the list position it is passed at, -1 for one every element reads (empty: unknown); "
          "keeps_self_geometry: result k is laid out as self_list[k], storage offset included "
          "(_foreach_copy).")
      .def(
          "write_back",
          [](GraphBuilder& b, std::string name, NodeId written_input, NodeId written,
             std::optional<NodeId> value, std::vector<NodeId> operands, const ResultTuples& r) {
            return b.write_back(name, written_input, written, value, std::move(operands), records(r));
          },
          py::arg("name"), py::arg("written_input"), py::arg("written"), py::arg("value"),
          py::arg("operands"), py::arg("results"),
          "A write-back into a graph input: copy_(written, value), or resize_/as_strided_ (value None).")
      .def("compiler_facts", &GraphBuilder::compiler_facts, py::arg("id"), py::arg("realized"),
           py::arg("extern_kernel"), py::arg("inplace_form"), py::arg("lacks_inplace_lowering") = false,
           py::arg("opaque") = false,
           "What Inductor does with node id (read under the inductor policy only; facts accumulate): its "
           "value is in a buffer anyway; Inductor runs it as a library kernel; Inductor has an in-place "
           "form of it; Inductor has no lowering for its in-place form; Inductor runs it as a library "
           "kernel because of its tensors' types (a view so run hides writes through it).")
      .def("memory_facts", &GraphBuilder::memory_facts, py::arg("id"), py::arg("device"),
           py::arg("result_bytes"), py::arg("out_kernel"), py::arg("byte_size") = core::Extent(0),
           py::arg("restridable") = false,
           "Memory facts of a node with one tensor result (read under plan_memory only): a code per "
           "device, the result's bytes (a hint for symbolic sizes), whether its op has an out= kernel of "
           "its own on that device, its byte count as an extent (a Symbol per distinct expression), and "
           "whether the graph can express its sizes and strides (so that, when dense from offset 0, it "
           "may take an as_strided view of a dead buffer of that byte count).")
      .def("traced_symbolically", &GraphBuilder::traced_symbolically,
           "The graph was traced with symbolic shapes, even where a guard fixed every size: its recorded "
           "strides of size-1 dims need not be eager's.")
      .def("donated_input", &GraphBuilder::donated_input, py::arg("id"),
           "Input id is a donated buffer (AOTAutograd's bw_donated_idxs): plan_memory may reuse it once "
           "dead.")
      .def("internal_output", &GraphBuilder::internal_output, py::arg("id"),
           "Node id is returned only to the compiled program (AOTAutograd's saved activations of a "
           "forward graph, a backward's gradients), never to the caller's code: plan_memory may "
           "return it as a view of a dead buffer.")
      .def(
          "plan",
          [](const GraphBuilder& b, bool reuse, bool dead, bool inductor, bool taken, bool memory,
             bool disjoint) { return b.plan(options(reuse, dead, inductor, taken, memory, disjoint)); },
          py::arg("reuse_written_back_inputs") = false, py::arg("dead_operand_destinations") = false,
          py::arg("inductor") = false, py::arg("outputs_taken_by_torch_compile") = false,
          py::arg("plan_memory") = false, py::arg("shared_inputs_disjoint") = false)
      .def(
          "dump",
          [](const GraphBuilder& b, bool reuse, bool dead, bool inductor, bool taken) {
            return b.dump(options(reuse, dead, inductor, taken));
          },
          py::arg("reuse_written_back_inputs") = false, py::arg("dead_operand_destinations") = false,
          py::arg("inductor") = false, py::arg("outputs_taken_by_torch_compile") = false,
          "The planner's input as text, with today's decisions as expectations (see test/cpp/cases).");
}

}  // namespace fxinplace::python
