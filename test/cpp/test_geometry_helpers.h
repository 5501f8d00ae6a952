// Shared by the core's GoogleTest files: geometries written by size only.
#pragma once

#include <ostream>
#include <vector>

#include "geometry.h"

namespace fxinplace::core {

// Lets GoogleTest print extents in failure messages.
inline void PrintTo(const Extent& e, std::ostream* os) {
  if (e.is_known())
    *os << e.value();
  else
    *os << "s" << e.symbol();
}

namespace testing {

using Extents = std::vector<Extent>;

// Row-major strides for `sizes`, starting at `offset`.
inline Geometry contiguous(std::vector<Int> sizes, Int offset = 0) {
  Geometry g;
  g.sizes.assign(sizes.begin(), sizes.end());
  g.strides.resize(sizes.size());
  Int stride = 1;
  for (size_t d = sizes.size(); d-- > 0;) {
    g.strides[d] = stride;
    if (d > 0) stride *= sizes[d];  // (the outermost size multiplies nothing: no overflow past it)
  }
  g.offset = offset;
  return g;
}

inline Geometry strided(std::vector<Int> sizes, std::vector<Int> strides, Int offset = 0) {
  Geometry g;
  g.sizes.assign(sizes.begin(), sizes.end());
  g.strides.assign(strides.begin(), strides.end());
  g.offset = offset;
  return g;
}

}  // namespace testing
}  // namespace fxinplace::core
