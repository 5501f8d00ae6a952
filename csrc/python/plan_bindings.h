// Python bindings of the planner's vocabulary: the enums that cross the
// boundary, operator facts, symbols, and the plan the planner returns.
#pragma once

#include <pybind11/pybind11.h>

namespace fxinplace::python {

void bind_plan_types(pybind11::module_& m);

}  // namespace fxinplace::python
