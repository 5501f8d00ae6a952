#include "python/plan_bindings.h"

#include <pybind11/stl.h>

#include <cctype>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "core/reinplace_planner.h"
#include "python/enum_binding.h"
#include "python/extent_caster.h"
#include "torch/op_facts.h"

namespace py = pybind11;
namespace core = fxinplace::core;
namespace tb = fxinplace::torch_bridge;

namespace fxinplace::python {
namespace {

std::optional<core::NodeId> node_or_none(core::NodeId id) {
  return id == core::kNoNode ? std::nullopt : std::optional<core::NodeId>(id);
}

// A reason list as a py::enum_ whose Python names are the stable codes in
// upper case (Reason.USED_LATER), with `code` and `text` properties. py::enum_
// keeps the name pointers, so the strings live as long as the module.
template <class E>
void bind_reasons(py::module_& m, const char* enum_name, const std::vector<E>& values, const char* (*code)(E),
                  const char* (*text)(E), const char* code_doc) {
  static std::vector<std::string> names;  // one instantiation per reason list
  names.reserve(values.size());
  py::enum_<E> e(m, enum_name);
  for (E r : values) {
    std::string upper = code(r);
    for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    names.push_back(std::move(upper));
    e.value(names.back().c_str(), r);
  }
  e.def_property_readonly("code", code, code_doc);
  e.def_property_readonly("text", text);
}

void bind_enums(py::module_& m) {
  using core::ViewKind, core::LayoutUse, core::Destination, core::ScatterKind;
  bind_enum<ViewKind>(
      m, "ViewKind", "Whether a node's result is a view: none, one, or a list of views (split, unbind).",
      {{"NONE", ViewKind::kNone}, {"SINGLE", ViewKind::kSingle}, {"MULTI", ViewKind::kMulti}});
  bind_enum<LayoutUse>(
      m, "LayoutUse",
      "How a view depends on its source's layout: not at all, to reshape, on strides, on storage offsets.",
      {{"LOGICAL", LayoutUse::kLogical},
       {"RESHAPE", LayoutUse::kReshape},
       {"STRIDES", LayoutUse::kStrides},
       {"ABSOLUTE", LayoutUse::kAbsolute}});
  bind_enum<Destination>(
      m, "Destination", "How an ATen op's result gets into a write slot's target.",
      {{"SELF", Destination::kSelf}, {"SWAPPED", Destination::kSwapped}, {"OUT", Destination::kOut}});
  bind_enum<ScatterKind>(m, "ScatterKind", "Which view a *_scatter node inverts, if any.",
                         {{"NONE", ScatterKind::kNone},
                          {"SELECT", ScatterKind::kSelect},
                          {"SLICE", ScatterKind::kSlice},
                          {"DIAGONAL", ScatterKind::kDiagonal},
                          {"AS_STRIDED", ScatterKind::kAsStrided}});
  py::enum_<core::Action> action(m, "Action");
#define FXINPLACE_BIND_ACTION(id, label, name) action.value(#label, core::Action::id);
  FXINPLACE_ACTIONS(FXINPLACE_BIND_ACTION)
#undef FXINPLACE_BIND_ACTION
  action.def_property_readonly(
      "label", [](core::Action a) { return core::action_name(a); },
      "Its stable name, e.g. 'scatter_to_copy'.");
  bind_reasons<core::Reason>(m, "Reason",
                             {
#define FXINPLACE_LIST_REASON(id, name, text) core::Reason::id,
                                 FXINPLACE_REASONS(FXINPLACE_LIST_REASON)
#undef FXINPLACE_LIST_REASON
                             },
                             core::reason_name, core::reason_text,
                             "Its stable identifier, e.g. 'used_later'.");
  bind_reasons<core::MemoryReason>(m, "MemoryReason",
                                   {
#define FXINPLACE_LIST_MEMORY_REASON(id, name, text) core::MemoryReason::id,
                                       FXINPLACE_MEMORY_REASONS(FXINPLACE_LIST_MEMORY_REASON)
#undef FXINPLACE_LIST_MEMORY_REASON
                                   },
                                   core::memory_reason_name, core::memory_reason_text,
                                   "Its stable identifier, e.g. 'reused'.");
}

void bind_op_facts(py::module_& m) {
  py::class_<tb::OpFacts>(m, "OpFacts",
                          "What the planner knows of an operator overload (read from its schema).")
      .def_readonly("found", &tb::OpFacts::found)
      .def_readonly("self_is_tensor", &tb::OpFacts::self_is_tensor)
      .def_readonly("self_is_tensor_list", &tb::OpFacts::self_is_tensor_list)
      .def_readonly("commutative", &tb::OpFacts::commutative)
      .def_readonly("inplace_stores_converted", &tb::OpFacts::inplace_stores_converted)
      .def_readonly("has_out", &tb::OpFacts::has_out)
      .def_readonly("out_overload", &tb::OpFacts::out_overload)
      .def_readonly("out_arg_name", &tb::OpFacts::out_arg_name)
      .def_readonly("has_tensor_sibling_out", &tb::OpFacts::has_tensor_sibling_out)
      .def_readonly("tensor_sibling_out_overload", &tb::OpFacts::tensor_sibling_out_overload)
      .def_readonly("tensor_sibling_out_arg_name", &tb::OpFacts::tensor_sibling_out_arg_name)
      .def_readonly("view", &tb::OpFacts::view)
      .def_readonly("mutates", &tb::OpFacts::mutates)
      .def_readonly("pointwise", &tb::OpFacts::pointwise)
      .def_readonly("first_arg_name", &tb::OpFacts::first_arg_name)
      .def_readonly("has_inplace", &tb::OpFacts::has_inplace)
      .def_readonly("inplace_overload", &tb::OpFacts::inplace_overload)
      .def_readonly("layout_use", &tb::OpFacts::layout_use)
      .def_readonly("scatter", &tb::OpFacts::scatter)
      .def_property_readonly("inverted_view",
                             [](const tb::OpFacts& f) {
                               return std::make_tuple(f.inverted_view.name, f.inverted_view.overload);
                             })
      .def_readonly("aliases_without_annotation", &tb::OpFacts::aliases_without_annotation)
      .def_readonly("returns_its_input", &tb::OpFacts::returns_its_input)
      .def_readonly("reads_memory", &tb::OpFacts::reads_memory)
      .def_readonly("keeps_self_geometry", &tb::OpFacts::keeps_self_geometry)
      .def_readonly("is_resize", &tb::OpFacts::is_resize)
      .def_readonly("indexed_write", &tb::OpFacts::indexed_write)
      .def_readonly("collective", &tb::OpFacts::collective)
      .def_readonly("metadata_write_back", &tb::OpFacts::metadata_write_back);
  m.def("op_facts", &tb::op_facts, py::arg("name"), py::arg("overload"),
        "Facts of an operator overload, e.g. op_facts('aten::add', 'Tensor').");
  m.def("has_backend_kernel", &tb::has_backend_kernel, py::arg("name"), py::arg("overload"),
        py::arg("device_type"),
        "Whether the overload has a kernel of its own for device_type's backend (not only a composite "
        "one), e.g. has_backend_kernel('aten::mm', 'out', 'cpu').");
  m.def(
      "inductor_may_write",
      [](const tb::OpFacts& facts, bool extern_kernel) {
        core::Node op;
        op.indexed_write = facts.indexed_write;
        op.collective = facts.collective;
        op.compiler_extern = extern_kernel;
        op.scatter.kind = facts.scatter;
        return core::inductor_may_write(op);
      },
      py::arg("facts"), py::arg("extern_kernel"),
      "Whether the planner's Inductor policy lets an op with these facts write in place at all.");
}

void bind_plan(py::module_& m) {
  py::class_<SymbolicExtent>(m, "Symbol",
                             "A symbolic size, stride or offset, known to the planner by identity.")
      .def(py::init([](int32_t id) { return SymbolicExtent{id}; }), py::arg("id"))
      .def_readonly("id", &SymbolicExtent::id)
      .def("__repr__", [](const SymbolicExtent& s) { return "Symbol(" + std::to_string(s.id) + ")"; });
  py::class_<core::SlotDecision>(m, "SlotDecision", "The outcome for one write slot (an AFv2 base).")
      .def_readonly("in_place", &core::SlotDecision::in_place)
      .def_readonly("reason", &core::SlotDecision::reason)
      .def_property_readonly("culprit", [](const core::SlotDecision& d) { return node_or_none(d.culprit); });
  py::class_<core::Decision>(m, "Decision", "What the planner decided for one node, and why.")
      .def_readonly("action", &core::Decision::action)
      .def_readonly("reason", &core::Decision::reason)
      .def_property_readonly("culprit", [](const core::Decision& d) { return node_or_none(d.culprit); })
      .def_property_readonly("replacement",
                             [](const core::Decision& d) { return node_or_none(d.replacement); })
      .def_readonly("slots", &core::Decision::slots)
      .def_readonly(
          "slot", &core::Decision::slot,
          "ATen ops: the write slot taken (0: self; then the destinations given to GraphBuilder.op)");
  py::class_<core::MemoryDecision>(m, "MemoryDecision",
                                   "The memory walk's outcome for one node (memory_plan.h).")
      .def_readonly("reason", &core::MemoryDecision::reason)
      .def_property_readonly("donor", [](const core::MemoryDecision& d) { return node_or_none(d.donor); })
      .def_property_readonly("freed_after",
                             [](const core::MemoryDecision& d) { return node_or_none(d.freed_after); })
      .def_readonly("bytes", &core::MemoryDecision::bytes)
      .def_readonly("restrided", &core::MemoryDecision::restrided);
  py::class_<core::Plan>(m, "Plan", "One decision per node, in graph order.")
      .def_readonly("walks", &core::Plan::walks)
      .def("__len__", [](const core::Plan& p) { return p.decisions.size(); })
      .def(
          "decision",
          [](const core::Plan& p, size_t i) {
            if (i >= p.decisions.size()) throw py::index_error("no such node");
            return p.decisions[i];
          },
          py::arg("node"))
      .def(
          "changed",
          [](const core::Plan& p) {
            std::vector<core::NodeId> ids;
            for (size_t i = 0; i < p.decisions.size(); ++i)
              if (p.decisions[i].action != core::Action::kKeep) ids.push_back(static_cast<core::NodeId>(i));
            return ids;
          },
          "The nodes whose action is not KEEP, ascending.")
      .def("count", &core::Plan::count, py::arg("action"))
      .def(
          "reuses",
          [](const core::Plan& p) {
            std::vector<std::tuple<core::NodeId, core::NodeId, bool>> found;
            for (size_t i = 0; i < p.memory.decisions.size(); ++i) {
              const core::MemoryDecision& d = p.memory.decisions[i];
              if (d.reason == core::MemoryReason::kReused)
                found.emplace_back(static_cast<core::NodeId>(i), d.donor, d.restrided);
            }
            return found;
          },
          "plan_memory: (node, donor, restrided) for each node whose result goes into the donor's dead "
          "buffer; restrided: through as_strided(donor, the result's sizes, strides, 0), the donor being "
          "laid out otherwise.")
      .def(
          "memory", [](const core::Plan& p) { return p.memory.decisions; },
          "plan_memory: one memory decision per node (empty without it).")
      .def_property_readonly(
          "bytes_reused", [](const core::Plan& p) { return p.memory.bytes_reused; },
          "plan_memory: the bytes of every result written into a dead buffer.")
      .def_property_readonly(
          "modelled_peak", [](const core::Plan& p) { return p.memory.modelled_peak; },
          "plan_memory: the peak model's live bytes at the peak (reuses never raise it).");
}

}  // namespace

void bind_plan_types(py::module_& m) {
  // The bits of a conj() / _neg_view view in a tensor record's dtype code (graph_ir.h).
  m.attr("CONJ_BIT") = core::kConjBit;
  m.attr("NEG_BIT") = core::kNegBit;
  bind_enums(m);
  bind_op_facts(m);
  bind_plan(m);
}

}  // namespace fxinplace::python
