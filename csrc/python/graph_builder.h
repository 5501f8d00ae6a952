// fxinplace._C.planner.GraphBuilder: the typed boundary between the Python side,
// which reads an fx.Graph, and the core IR the planner decides on. One method
// per kind of node; node references are the ids earlier calls returned.
#pragma once

#include <pybind11/pybind11.h>

namespace fxinplace::python {

void bind_graph_builder(pybind11::module_& m);

}  // namespace fxinplace::python
