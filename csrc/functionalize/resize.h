// resize_ on a functional tensor, without the functional `aten::resize` op
// (whose meta kernel fails on symbolic shapes).
//
// Eager resize_ keeps the storage and the storage offset and lays the new
// sizes out contiguously: the elements are the storage's, read in memory
// order from the offset, with new memory (uninitialized) where the storage
// grows. Within the memory the tensor spans, the tensor becomes the
// contiguous view at its offset (resize_ writes no data, and other views of
// the memory keep theirs); a tensor that is not a view and grows gets a grown
// value as its new base.
#pragma once

#include <ATen/core/Tensor.h>
#include <ATen/core/dispatch/Dispatcher.h>

namespace fxinplace::functionalize {

// Runs resize_(self, sizes, memory_format) for a functional `self`.
// `strides`: the layout the tensor takes after the resize, where not
// contiguous (TensorIterator resizes an out= argument, then restrides it to
// the layout it computes in: torch.sub(x.t(), y, out=v) leaves v transposed).
void resize_functional(const c10::OperatorHandle& op, const at::Tensor& self, c10::SymIntArrayRef sizes,
                       std::optional<at::MemoryFormat> memory_format, bool reapply_views,
                       std::optional<c10::SymIntArrayRef> strides = std::nullopt);

}  // namespace fxinplace::functionalize
