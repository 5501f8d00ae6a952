// Shared by the core's GoogleTest files: geometries written by size only.
#pragma once

#include <vector>

#include "geometry.h"

namespace fxinplace::core::testing {

// Row-major strides for `sizes`, starting at `offset`.
inline Geometry contiguous(std::vector<Int> sizes, Int offset = 0) {
  Geometry g;
  g.sizes = sizes;
  g.strides.resize(sizes.size());
  Int stride = 1;
  for (size_t d = sizes.size(); d-- > 0;) {
    g.strides[d] = stride;
    stride *= sizes[d];
  }
  g.offset = offset;
  return g;
}

}  // namespace fxinplace::core::testing
