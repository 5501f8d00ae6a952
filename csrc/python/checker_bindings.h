// Python binding of the rewrite checker (fxinplace._C.check_rewrite).
#pragma once

#include <pybind11/pybind11.h>

namespace fxinplace::python {

void bind_checker(pybind11::module_& m);

}  // namespace fxinplace::python
