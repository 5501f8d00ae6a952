// fxinplace._C: the only translation unit that defines Python bindings.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "core/decision.h"
#include "python/checker_bindings.h"
#include "python/functionalize_bindings.h"
#include "python/graph_builder.h"
#include "torch/op_facts.h"

namespace py = pybind11;
namespace tb = fxinplace::torch_bridge;
namespace core = fxinplace::core;

PYBIND11_MODULE(_C, m) {
  m.doc() = "Native core of fxinplace: op facts from schemas and the re-inplacing planner.";

  m.def(
      "op_facts",
      [](const std::string& name, const std::string& overload) {
        tb::OpFacts f = tb::op_facts(name, overload);
        py::dict d;
        d["found"] = f.found;
        d["self_is_tensor"] = f.self_is_tensor;
        d["view"] = static_cast<int>(f.view);
        d["mutates"] = f.mutates;
        d["pointwise"] = f.pointwise;
        d["first_arg_name"] = f.first_arg_name;
        d["has_inplace"] = f.has_inplace;
        d["inplace_overload"] = f.inplace_overload;
        return d;
      },
      py::arg("name"), py::arg("overload"),
      "Schema facts of an operator overload, e.g. op_facts('aten::add', 'Tensor').");

  py::class_<fxinplace::python::SymbolicExtent>(
      m, "Symbol", "A symbolic size, stride or offset, known to the planner only by identity.")
      .def(py::init([](int32_t id) { return fxinplace::python::SymbolicExtent{id}; }), py::arg("id"))
      .def_readonly("id", &fxinplace::python::SymbolicExtent::id)
      .def("__repr__",
           [](const fxinplace::python::SymbolicExtent& s) { return "Symbol(" + std::to_string(s.id) + ")"; });

  m.def("plan", &fxinplace::python::plan_from_records, py::arg("records"), py::arg("num_storages"),
        "Plan re-inplacing over node records; returns (decisions, walks).");

  fxinplace::python::bind_functionalize(m);
  fxinplace::python::bind_checker(m);

  m.def("action_name", [](int a) { return core::action_name(static_cast<core::Action>(a)); });
  m.def("reason_text", [](int r) { return core::reason_text(static_cast<core::Reason>(r)); });
  m.def("reason_name", [](int r) { return core::reason_name(static_cast<core::Reason>(r)); });
}
