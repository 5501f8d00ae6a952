#include "python/graph_builder.h"

#include <pybind11/stl.h>

#include "core/reinplace_planner.h"

namespace py = pybind11;
using namespace fxinplace::core;

namespace fxinplace::python {
namespace {

std::vector<Int> ints(const py::handle& h) { return h.cast<std::vector<Int>>(); }

Extent extent(const py::handle& h) {
  if (PyLong_Check(h.ptr())) return Extent(h.cast<Int>());
  return Extent::symbolic(h.cast<const SymbolicExtent&>().id);
}

std::vector<Extent> extents(const py::handle& h) {
  std::vector<Extent> out;
  for (const py::handle& item : h.cast<py::list>()) out.push_back(extent(item));
  return out;
}

// (sizes, strides, offset, proven_dense_order) starting at t[first].
Geometry read_geometry(const py::tuple& t, size_t first) {
  Geometry geom;
  geom.sizes = extents(t[first]);
  geom.strides = extents(t[first + 1]);
  geom.offset = extent(t[first + 2]);
  if (!t[first + 3].is_none()) geom.proven_dense_order = t[first + 3].cast<std::vector<int32_t>>();
  if (geom.sizes.size() != geom.strides.size()) throw py::value_error("sizes and strides differ in rank");
  return geom;
}

NodeId node_ref(const py::handle& h) { return h.is_none() ? kNoNode : h.cast<NodeId>(); }

TensorValue read_value(Graph& g, const py::handle& h) {
  auto t = h.cast<py::tuple>();
  if (t.size() != 6)
    throw py::value_error(
        "tensor record must be (storage, sizes, strides, offset, proven_dense_order, dtype)");
  TensorValue v;
  v.storage = t[0].cast<StorageId>();
  Geometry geom = read_geometry(t, 1);
  v.shape = g.shape(geom.sizes);
  v.geom = g.geom(geom);
  v.dtype = t[5].cast<int32_t>();
  return v;
}

ScatterSpec read_scatter(const py::handle& h) {
  ScatterSpec s;
  if (h.is_none()) return s;
  auto t = h.cast<py::tuple>();
  s.kind = static_cast<ScatterKind>(t[0].cast<int>());
  s.ints = ints(t[1]);
  s.sizes = ints(t[2]);
  s.strides = ints(t[3]);
  s.replayable = t[4].cast<bool>();
  if (!t[5].is_none()) s.view_on_recorded_base = read_geometry(t[5].cast<py::tuple>(), 0);
  return s;
}

}  // namespace

py::tuple plan_from_records(const py::list& records, int num_storages) {
  Graph g;
  for (int s = 0; s < num_storages; ++s) g.new_storage();
  for (const py::handle& h : records) {
    auto r = h.cast<py::tuple>();
    if (r.size() != 15) throw py::value_error("node record must have 15 fields");
    Node n;
    n.kind = static_cast<NodeKind>(r[0].cast<int>());
    n.name = r[1].cast<std::string>();
    n.view = static_cast<ViewKind>(r[2].cast<int>());
    n.self_is_tensor = r[3].cast<bool>();
    n.has_inplace = r[4].cast<bool>();
    n.pointwise = r[5].cast<bool>();
    n.is_resize = r[6].cast<bool>();
    n.scatter = read_scatter(r[7]);
    n.self = node_ref(r[8]);
    n.scatter_src = node_ref(r[9]);
    n.view_of = node_ref(r[10]);
    n.operands = r[11].cast<std::vector<NodeId>>();
    for (const py::handle& v : r[12].cast<py::list>()) n.results.push_back(read_value(g, v));
    n.layout_use = static_cast<LayoutUse>(r[13].cast<int>());
    n.layout_parent = node_ref(r[14]);
    try {
      g.add(std::move(n));
    } catch (const std::invalid_argument& e) {
      throw py::value_error(e.what());
    }
  }
  Plan plan = plan_reinplace(g);
  py::list out;
  for (const Decision& d : plan.decisions)
    out.append(
        py::make_tuple(static_cast<int>(d.action), static_cast<int>(d.reason), d.culprit, d.replacement));
  return py::make_tuple(out, plan.walks);
}

}  // namespace fxinplace::python
