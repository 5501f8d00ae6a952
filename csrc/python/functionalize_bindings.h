// Python bindings of the functionalization kernels (fxinplace._C.functionalize).
#pragma once

#include <pybind11/pybind11.h>

namespace fxinplace::python {

void bind_functionalize(pybind11::module_& m);

}  // namespace fxinplace::python
