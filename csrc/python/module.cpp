// fxinplace._C: the module; each bind_* lives beside what it binds.
#include <pybind11/pybind11.h>

#include "python/checker_bindings.h"
#include "python/functionalize_bindings.h"
#include "python/graph_builder.h"
#include "python/plan_bindings.h"

PYBIND11_MODULE(_C, m) {
  m.doc() =
      "Native core of fxinplace: operator facts, the re-inplacing planner, its checker, and the "
      "functionalization kernels.";
  fxinplace::python::bind_plan_types(m);
  fxinplace::python::bind_graph_builder(m);
  fxinplace::python::bind_checker(m);
  fxinplace::python::bind_functionalize(m);
}
