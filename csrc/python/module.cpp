// fxinplace._C: one submodule per wing (planner, checker, functionalize); each
// bind_* lives beside what it binds.
#include <pybind11/pybind11.h>

#include "python/checker_bindings.h"
#include "python/functionalize_bindings.h"
#include "python/graph_builder.h"
#include "python/plan_bindings.h"

PYBIND11_MODULE(_C, m) {
  m.doc() =
      "Native core of fxinplace: operator facts, the re-inplacing planner, its checker, and the "
      "functionalization kernels.";
  pybind11::module_ planner = m.def_submodule(
      "planner", "The re-inplacing planner: operator facts, the graph builder, plans and their reasons.");
  fxinplace::python::bind_plan_types(planner);
  fxinplace::python::bind_graph_builder(planner);
  pybind11::module_ checker = m.def_submodule(
      "checker", "The independent checker of re-inplaced graphs (it shares no code with the planner).");
  fxinplace::python::bind_checker(checker);
  pybind11::module_ functionalize =
      m.def_submodule("functionalize", "The functionalization kernels behind fxinplace's own dispatch key.");
  fxinplace::python::bind_functionalize(functionalize);
}
