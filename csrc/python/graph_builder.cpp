#include "python/graph_builder.h"

#include <pybind11/stl.h>

#include <optional>
#include <tuple>

#include "core/graph_text.h"
#include "core/reinplace_planner.h"
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
using TensorRecord = std::tuple<StorageId, std::vector<Extent>, std::vector<Extent>, Extent,
                                std::optional<std::vector<int32_t>>, int32_t>;
using Results = std::vector<TensorRecord>;

// (sizes, strides, offset, proven_dense_order) of a view a scatter inverts.
using GeometryRecord =
    std::tuple<std::vector<Extent>, std::vector<Extent>, Extent, std::optional<std::vector<int32_t>>>;

Geometry geometry(const std::vector<Extent>& sizes, const std::vector<Extent>& strides, const Extent& offset,
                  const std::optional<std::vector<int32_t>>& dense_order) {
  if (sizes.size() != strides.size()) throw py::value_error("sizes and strides differ in rank");
  Geometry g;
  g.sizes = sizes;
  g.strides = strides;
  g.offset = offset;
  g.proven_dense_order = dense_order;
  return g;
}

NodeId id_or_none(const std::optional<NodeId>& id) { return id ? *id : kNoNode; }

class GraphBuilder {
 public:
  NodeId input(std::string name, const Results& results) {
    return add(leaf(NodeKind::kInput, name, results));
  }
  NodeId constant(std::string name, const Results& results) {
    return add(leaf(NodeKind::kConstant, name, results));
  }
  NodeId other(std::string name, std::vector<NodeId> operands, const Results& results) {
    Node n = leaf(NodeKind::kOther, name, results);
    n.operands = std::move(operands);
    return add(std::move(n));
  }
  NodeId output(std::string name, std::vector<NodeId> operands) {
    Node n = leaf(NodeKind::kOutput, name, {});
    n.operands = std::move(operands);
    return add(std::move(n));
  }

  NodeId op(std::string name, const OpFacts& facts, std::optional<NodeId> self, std::vector<NodeId> operands,
            const Results& results,
            std::optional<std::tuple<std::vector<Int>, std::vector<Int>, std::vector<Int>>> scatter_args,
            std::optional<NodeId> scatter_src, std::optional<GeometryRecord> scatter_view,
            const std::vector<std::tuple<NodeId, Destination>>& destinations) {
    Node n = leaf(NodeKind::kOp, name, results);
    n.view = facts.view;
    n.has_inplace = facts.has_inplace;
    n.pointwise = facts.pointwise;
    n.is_resize = facts.is_resize;
    n.indexed_write = facts.indexed_write;
    n.collective = facts.collective;
    n.reads_memory = facts.reads_memory;
    n.layout_use = facts.layout_use;
    n.self = id_or_none(self);
    n.operands = std::move(operands);
    if (self) {
      if (facts.view == ViewKind::kSingle) n.view_of = *self;
      if (facts.view == ViewKind::kSingle || facts.layout_use != LayoutUse::kLogical) n.layout_parent = *self;
      // `self` passed twice (mul(a, a)) must be seen twice.
      if (facts.self_is_tensor && !facts.mutates && facts.view == ViewKind::kNone && !n.results.empty())
        n.slots.push_back(WriteSlot{*self, 0, 0, false});
    }
    // Other operands the result may go into: only after `self` (slot 0).
    for (const auto& [target, via] : destinations) {
      at(target);
      if (n.slots.empty()) break;  // no self to write first: none of the others either
      if (via == Destination::kSelf) throw py::value_error("a destination other than self is SWAPPED or OUT");
      WriteSlot slot{target, 0, 0, false};
      slot.via = via;
      n.slots.push_back(slot);
    }
    n.scatter.kind = facts.scatter;
    if (facts.scatter != ScatterKind::kNone) {
      n.scatter_src = id_or_none(scatter_src);
      if (scatter_args) {
        std::tie(n.scatter.ints, n.scatter.sizes, n.scatter.strides) = *scatter_args;
        n.scatter.replayable = true;
      }
      if (scatter_view) n.scatter.view_on_recorded_base = std::apply(geometry, *scatter_view);
    }
    return add(std::move(n));
  }

  // What Inductor does with node `id` (read only under PlanOptions::inductor);
  // inplace_form: Inductor provides an in-place form ATen lacks
  // (_unsafe_index_put -> prims._unsafe_index_put_); lacks_inplace_lowering:
  // Inductor generates the op's code but has no lowering for its in-place form
  // (_foreach_maximum_). Facts accumulate: a node may be described more than
  // once (a scatter's base, by the scatter).
  void compiler_facts(NodeId id, bool realized, bool extern_kernel, bool inplace_form,
                      bool lacks_inplace_lowering, bool opaque) {
    at(id);  // bounds
    Node& n = g_.at(id);
    n.realized = n.realized || realized;
    n.compiler_extern = n.compiler_extern || extern_kernel;
    n.has_inplace = n.has_inplace || inplace_form;
    n.compiler_lacks_inplace = n.compiler_lacks_inplace || lacks_inplace_lowering;
    n.compiler_opaque = n.compiler_opaque || opaque;
  }

  NodeId getitem(std::string name, NodeId source, int32_t index, const Results& results) {
    Node n = leaf(NodeKind::kGetItem, name, results);
    n.item_of = source;
    n.item_index = index;
    n.operands = {source};
    const Node& src = at(source);
    // An item of a multi-output view (split, unbind) views that view's input.
    if (src.kind == NodeKind::kOp && src.view == ViewKind::kMulti && src.self != kNoNode)
      n.view_of = n.layout_parent = src.self;
    return add(std::move(n));
  }

  using SlotRecords = std::vector<std::tuple<NodeId, int32_t, int32_t, bool>>;

  NodeId auto_functionalized(std::string name, std::vector<NodeId> operands, const Results& results,
                             const SlotRecords& slots, std::vector<NodeId> absolute_layout_reads) {
    NodeId id = slotted(NodeKind::kAutoFunctionalized, name, std::move(operands), results, slots);
    for (NodeId op : absolute_layout_reads)
      if (op < 0 || op >= id) throw py::index_error("absolute_layout_reads: no such earlier node");
    g_.at(id).absolute_layout_reads = std::move(absolute_layout_reads);
    return id;
  }

  NodeId foreach (std::string name, std::vector<NodeId> operands, const Results& results,
                  const std::vector<NodeId>& self_list, bool collective,
                  std::vector<int32_t> operand_elements) {
    if (!operand_elements.empty() && operand_elements.size() != operands.size())
      throw std::invalid_argument("foreach: operand_elements must have one entry per operand");
    SlotRecords slots;
    for (size_t k = 0; k < self_list.size(); ++k) {
      auto item = static_cast<int32_t>(k);
      slots.emplace_back(self_list[k], item, item, false);
    }
    NodeId id = slotted(NodeKind::kForeach, name, std::move(operands), results, slots);
    g_.at(id).collective = collective;
    g_.at(id).operand_elements = std::move(operand_elements);
    return id;
  }

  NodeId write_back(std::string name, NodeId written_input, NodeId written, std::optional<NodeId> value,
                    std::vector<NodeId> operands, const Results& results) {
    Node n = leaf(NodeKind::kWriteBack, name, results);
    n.written_input = written_input;
    n.self = written;
    n.written_value = id_or_none(value);
    n.operands = std::move(operands);
    return add(std::move(n));
  }

  // The planner's input as text, with the plan's decisions as `expect` lines
  // (core/graph_text.h): a case a C++ test can replay.
  std::string dump(bool reuse_written_back_inputs, bool dead_operand_destinations, bool inductor,
                   bool outputs_taken_by_torch_compile) {
    return graph_to_text(g_) + expectations_to_text(plan(reuse_written_back_inputs, dead_operand_destinations,
                                                         inductor, outputs_taken_by_torch_compile));
  }

  Plan plan(bool reuse_written_back_inputs, bool dead_operand_destinations, bool inductor,
            bool outputs_taken_by_torch_compile) {
    PlanOptions options;
    options.reuse_written_back_inputs = reuse_written_back_inputs;
    options.dead_operand_destinations = dead_operand_destinations;
    options.inductor = inductor;
    options.outputs_taken_by_torch_compile = outputs_taken_by_torch_compile;
    return plan_reinplace(g_, options);
  }

 private:
  const Node& at(NodeId id) {
    if (id < 0 || static_cast<size_t>(id) >= g_.size()) throw py::index_error("no such node");
    return g_.at(id);
  }

  NodeId slotted(NodeKind kind, std::string& name, std::vector<NodeId> operands, const Results& results,
                 const SlotRecords& slots) {
    Node n = leaf(kind, name, results);
    n.operands = std::move(operands);
    for (const auto& [target, result, item, in_place] : slots) {
      if (target < 0 || static_cast<size_t>(target) >= g_.size()) throw py::index_error("no such node");
      n.slots.push_back(WriteSlot{target, result, item, in_place});
    }
    return add(std::move(n));
  }

  Node leaf(NodeKind kind, std::string& name, const Results& results) {
    Node n;
    n.kind = kind;
    n.name = std::move(name);
    n.results.reserve(results.size());
    for (const auto& [storage, sizes, strides, offset, dense_order, dtype] : results) {
      // Storage ids are small non-negative ints handed out by the caller in
      // any order; the graph learns each when first named.
      if (storage < 0) throw py::value_error("storage ids are non-negative");
      while (g_.num_storages() <= storage) g_.new_storage();
      TensorValue v;
      v.storage = storage;
      Geometry geom = geometry(sizes, strides, offset, dense_order);
      v.shape = g_.shape(geom.sizes);
      v.geom = g_.geom(geom);
      v.dtype = dtype;
      n.results.push_back(v);
    }
    return n;
  }

  NodeId add(Node n) {
    try {
      return g_.add(std::move(n));
    } catch (const std::invalid_argument& e) {
      throw py::value_error(e.what());
    }
  }

  Graph g_;
};

}  // namespace

void bind_graph_builder(py::module_& m) {
  py::class_<GraphBuilder>(m, "GraphBuilder",
                           "Builds the planner's picture of a graph, one node per call, in graph order.")
      .def(py::init<>())
      .def("input", &GraphBuilder::input, py::arg("name"), py::arg("results"))
      .def("constant", &GraphBuilder::constant, py::arg("name"), py::arg("results"))
      .def("other", &GraphBuilder::other, py::arg("name"), py::arg("operands"), py::arg("results"),
           "Any other call: reads its operands, returns fresh tensors.")
      .def("output", &GraphBuilder::output, py::arg("name"), py::arg("operands"))
      .def("op", &GraphBuilder::op, py::arg("name"), py::arg("facts"), py::arg("self"), py::arg("operands"),
           py::arg("results"), py::arg("scatter_args") = py::none(), py::arg("scatter_src") = py::none(),
           py::arg("scatter_view") = py::none(),
           py::arg("destinations") = std::vector<std::tuple<NodeId, Destination>>{},
           "An ATen operator overload. scatter_args (ints, sizes, strides): a *_scatter's view arguments "
           "when all are known; scatter_view: the geometry of that view on the recorded base; destinations: "
           "other operands its result may go into (node, SWAPPED or OUT), tried in order after self.")
      .def("getitem", &GraphBuilder::getitem, py::arg("name"), py::arg("source"), py::arg("index"),
           py::arg("results"))
      .def("auto_functionalized", &GraphBuilder::auto_functionalized, py::arg("name"), py::arg("operands"),
           py::arg("results"), py::arg("slots"), py::arg("absolute_layout_reads") = std::vector<NodeId>{},
           "auto_functionalized_v2 (or auto_functionalized, v1); slots: (base node (v1: written argument), "
           "index of its new value in results, its position in the node's value, already not cloned); "
           "absolute_layout_reads: bases it views by storage offset and strides (as_strided encodings).")
      .def("foreach", &GraphBuilder::foreach, py::arg("name"), py::arg("operands"), py::arg("results"),
           py::arg("self_list"), py::arg("collective") = false,
           py::arg("operand_elements") = std::vector<int32_t>{},
           "A _foreach_* op with a _foreach_*_ form; self_list: the nodes of its first list, in order "
           "(result k may be written into self_list[k]; all or none); collective: a list collective "
           "(all_reduce_coalesced) rather than a _foreach_* op; operand_elements: for each operand, "
           "the list position it is passed at, -1 for one every element reads (empty: unknown).")
      .def("write_back", &GraphBuilder::write_back, py::arg("name"), py::arg("written_input"),
           py::arg("written"), py::arg("value"), py::arg("operands"), py::arg("results"),
           "A write-back into a graph input: copy_(written, value), or resize_/as_strided_ (value None).")
      .def("compiler_facts", &GraphBuilder::compiler_facts, py::arg("id"), py::arg("realized"),
           py::arg("extern_kernel"), py::arg("inplace_form"), py::arg("lacks_inplace_lowering") = false,
           py::arg("opaque") = false,
           "What Inductor does with node id (read under the inductor policy only; facts accumulate): its "
           "value is in a buffer anyway; Inductor runs it as a library kernel; Inductor has an in-place "
           "form of it; Inductor has no lowering for its in-place form; Inductor runs it as a library "
           "kernel because of its tensors' types (a view so run hides writes through it).")
      .def("plan", &GraphBuilder::plan, py::arg("reuse_written_back_inputs") = false,
           py::arg("dead_operand_destinations") = false, py::arg("inductor") = false,
           py::arg("outputs_taken_by_torch_compile") = false)
      .def("dump", &GraphBuilder::dump, py::arg("reuse_written_back_inputs") = false,
           py::arg("dead_operand_destinations") = false, py::arg("inductor") = false,
           py::arg("outputs_taken_by_torch_compile") = false,
           "The planner's input as text, with today's decisions as expectations (see test/cpp/cases).");
}

}  // namespace fxinplace::python
