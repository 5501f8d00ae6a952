// Reads the node records the Python side extracts from an fx.Graph into the
// core IR, and hands back the planner's decisions as plain tuples.
#pragma once

#include <pybind11/pybind11.h>

#include <cstdint>

namespace fxinplace::python {

// A symbolic size, stride or offset in a record (Python: `_C.Symbol(id)`);
// records pass known extents as plain ints.
struct SymbolicExtent {
  int32_t id;
};

// `records`: a list with one tuple per node, in graph order (see
// python/fxinplace/_graph_records.py for the layout). Returns one tuple
// (action, reason, culprit, replacement) per node, plus the walk count.
pybind11::tuple plan_from_records(const pybind11::list& records, int num_storages);

}  // namespace fxinplace::python
