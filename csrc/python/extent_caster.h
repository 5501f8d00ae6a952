// Python <-> core::Extent: a plain int is a known extent, a `_C.Symbol` a
// symbolic one (known to the planner only by identity).
#pragma once

#include <pybind11/pybind11.h>

#include "core/extent.h"

namespace fxinplace::python {

struct SymbolicExtent {
  int32_t id;
};

}  // namespace fxinplace::python

namespace pybind11::detail {

template <>
struct type_caster<fxinplace::core::Extent> {
  PYBIND11_TYPE_CASTER(fxinplace::core::Extent, const_name("int | Symbol"));

  bool load(handle src, bool convert) {
    if (PyLong_Check(src.ptr())) {
      make_caster<int64_t> ints;
      if (!ints.load(src, convert)) return false;
      value = fxinplace::core::Extent(cast_op<int64_t>(ints));
      return true;
    }
    make_caster<fxinplace::python::SymbolicExtent> symbols;
    if (!symbols.load(src, convert)) return false;
    value = fxinplace::core::Extent::symbolic(cast_op<const fxinplace::python::SymbolicExtent&>(symbols).id);
    return true;
  }

  static handle cast(const fxinplace::core::Extent& e, return_value_policy, handle) {
    if (e.is_known()) return PyLong_FromLongLong(e.value());
    return pybind11::cast(fxinplace::python::SymbolicExtent{e.symbol()}).release();
  }
};

}  // namespace pybind11::detail
