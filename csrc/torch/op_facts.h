// Everything the re-inplacing planner asks about an operator overload, read
// once from its registered schema through the c10 dispatcher, plus the few
// facts a schema does not state (which views depend on the memory layout,
// which ops hide that they return their input, which `*_scatter` inverts which
// view). The one place that knows these: the functionalization kernels read
// the same schema helpers (op_schema.h).
#pragma once

#include <string>

#include "core/graph_ir.h"

namespace fxinplace::torch_bridge {

struct OpName {
  std::string name;      // qualified, e.g. "aten::select"
  std::string overload;  // e.g. "int"; "" for .default
};

struct OpFacts {
  bool found = false;                // the dispatcher knows this overload
  bool self_is_tensor = false;       // first argument is exactly `Tensor`
  bool self_is_tensor_list = false;  // first argument is `Tensor[]` (the `_foreach_*` ops)
  core::ViewKind view = core::ViewKind::kNone;
  bool mutates = false;  // some argument is annotated as written (`Tensor(a!)`)
  // out[i] depends on in[i] only: tagged pointwise, or elementwise in effect (copy).
  bool pointwise = false;
  std::string first_arg_name;    // so a `self` passed by keyword can be found
  std::string inplace_overload;  // overload name of `<name>_`, when exactly one matches
  bool has_inplace = false;
  // How a view's result depends on its input's layout (see core::LayoutUse).
  core::LayoutUse layout_use = core::LayoutUse::kLogical;
  // `*_scatter` ops that write back a view: which view they invert.
  core::ScatterKind scatter = core::ScatterKind::kNone;
  OpName inverted_view;
  // The result shares its input's memory at run time though the schema says
  // fresh (_unsafe_view); for `returns_its_input` it is the input itself
  // (_c10d_functional.wait_tensor hands back the collective's buffer).
  bool aliases_without_annotation = false;
  bool returns_its_input = false;
  // Reads only its argument's metadata (sym_size, ...): no use of its memory.
  bool reads_memory = true;
  // The result is fresh memory laid out exactly as `self`, storage offset
  // included (ATen clones self with its strides and offset): the `*_scatter`
  // ops and the functional copy.
  bool keeps_self_geometry = false;
  bool is_resize = false;      // aten::resize (functional resize_)
  bool indexed_write = false;  // index_put, _unsafe_index_put
  bool collective = false;     // a _c10d_functional collective with an in-place form

  // resize_ / as_strided_: how functionalization gives an input its new shape
  // before writing it back with copy_.
  bool metadata_write_back = false;
  // foo(a, b) == foo(b, a) for its two tensor operands (add without alpha, mul, ...).
  bool commutative = false;
  // A comparison or logical op (bool result) whose in-place form stores the
  // same booleans converted to self's dtype: `a.ge_(b)` is
  // `_to_copy(ge(a, b), dtype=a.dtype)`, as functionalization records it.
  bool inplace_stores_converted = false;
  // The `foo.out` overload computing this op into one written argument
  // (`out_arg_name`), the other arguments the same: when exactly one matches
  // (for any op that is neither a view nor mutating and returns one tensor).
  std::string out_overload;
  std::string out_arg_name;
  bool has_out = false;
  // For a `.Scalar` arithmetic overload (add, sub, mul, div) whose own out=
  // form is generated (it computes and copies): the out= overload of its
  // `.Tensor` sibling, which computes the same values with the scalar passed
  // as is (the dispatcher wraps it as a wrapped-number tensor, and ATen runs
  // `div.Scalar(x, s)` as exactly `div.Tensor(x, wrapped(s))`):
  //   y = div.Scalar(x, 3.0)   ->   y = div.out(x, 3.0, out=d)
  // Only where the `.Scalar` overload has no backend kernel of its own on the
  // device (the caller asks has_backend_kernel), so it is that composite.
  std::string tensor_sibling_out_overload;
  std::string tensor_sibling_out_arg_name;
  bool has_tensor_sibling_out = false;
};

// `name` is qualified ("aten::add"), `overload` may be empty for `.default`.
OpFacts op_facts(const std::string& name, const std::string& overload);

// Whether the overload has a kernel registered for the dispatch key of
// `device_type` ("cpu", "cuda", ...) itself, rather than only a composite one.
bool has_backend_kernel(const std::string& name, const std::string& overload, const std::string& device_type);

}  // namespace fxinplace::torch_bridge
