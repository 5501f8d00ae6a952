// view(dtype) of a functional value, whose layout need not be eager's tensor's:
// a functional kernel's strides in size-1 dims, a symbolic trace's storage
// offsets counted from a written input's own start.
#pragma once

#include <ATen/core/Tensor.h>

namespace fxinplace::functionalize {

// Whether view(dtype) accepts `t`'s layout: between element sizes the last
// dim must be contiguous, and into wider elements every other stride and the
// storage offset a multiple of the ratio, size-1 dims included.
bool viewable_as(const at::Tensor& t, at::ScalarType dtype);

// `t`, with its size-1 dims given the strides a contiguous layout has where
// they keep view(dtype) from accepting it (a size-1 dim addresses one element
// whatever its stride: the same memory), or may, under a symbolic trace.
at::Tensor with_contiguous_unit_strides(const at::Tensor& t, at::ScalarType dtype, bool reapply_views);

// `t`, or the same elements laid out so that view(dtype) accepts them where
// eager's tensor would: size-1 dims given the strides a contiguous layout has
// (the same memory), else a contiguous copy. The caller checked eager's
// layout, which decides whether eager raises. With `reapply_views` false, no
// view op is used.
at::Tensor viewable_as_dtype(const at::Tensor& t, at::ScalarType dtype, bool reapply_views);

}  // namespace fxinplace::functionalize
