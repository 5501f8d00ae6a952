#include "functionalize/eager_write_rules.h"

#include <ATen/ATen.h>
#include <ATen/MemoryOverlap.h>
#include <c10/core/impl/LocalDispatchKeySet.h>

#include <sstream>

#include "functionalize/eager_rehearsal.h"
#include "functionalize/functional_tensor.h"
#include "functionalize/ivalue_tensors.h"
#include "functionalize/meta_geometry.h"

namespace fxinplace::functionalize {
namespace {

std::string shape_string(c10::SymIntArrayRef sizes) {
  std::ostringstream out;
  out << sizes;
  return out.str();
}

// Eager's "more than one element of the written-to tensor refers to a single
// memory location": a dimension of size > 1 with stride 0 (expand). Symbolic
// sizes count as > 1: make_fx specializes sizes 0 and 1.
bool repeats_memory(const at::Tensor& t) {
  const auto sizes = t.sym_sizes();
  const auto strides = t.sym_strides();
  for (size_t d = 0; d < sizes.size(); ++d) {
    const auto stride = strides[d].maybe_as_int();
    const auto size = sizes[d].maybe_as_int();
    if (stride && *stride == 0 && (!size || *size > 1)) return true;
  }
  return false;
}

// Ops whose eager kernels write each element of `self` at most once with a
// value that does not depend on the others, so eager allows them on a tensor
// whose elements share memory (fill_, masked_fill_, index_put_ without
// accumulate, ...): every written copy of a location gets the same kind of
// value, and the fold back through expand() takes the written copy. Eager
// raises for every other op we checked, or (accumulating index_put_,
// reductions) adds the copies up, which we do not express.
bool writes_each_element_at_most_once(const c10::OperatorHandle& op, c10::ArrayRef<c10::IValue> args) {
  const std::string& name = op.schema().name();
  const std::string& overload = op.schema().overload_name();
  if (name == "aten::fill_") return overload == "Scalar";
  if (name == "aten::zero_" || name == "aten::masked_fill_" || name == "aten::index_fill_") return true;
  if (name == "aten::index_put_" || name == "aten::_index_put_impl_") return !args[3].toBool();
  return false;
}

bool concrete_geometry(const at::Tensor& t) {
  return !functional_impl(t)->metadata().unsafeGetTensorImpl()->has_symbolic_sizes_strides();
}

bool same_geometry(const at::Tensor& a, const at::Tensor& b) {
  return a.sizes() == b.sizes() && a.strides() == b.strides() && a.storage_offset() == b.storage_offset();
}

// Eager's "some elements of the input tensor and the written-to tensor refer
// to a single memory location": an argument that is another view of a written
// tensor's storage and partially overlaps it (`x[1:].add_(x[:-1])`). Meta
// kernels skip this check, so it is done here, on meta stand-ins sharing one
// storage. Symbolic geometry is not checked.
void check_no_partial_overlap(const c10::OperatorHandle& op, c10::ArrayRef<c10::IValue> args,
                              const std::vector<Write>& writes) {
  for (const c10::IValue& a : args)
    for_each_tensor(a, [&](const at::Tensor& t) {
      if (!is_functional(t) || !concrete_geometry(t)) return;
      for (const Write& w : writes) {
        if (functional_impl(w.target)->alias() != functional_impl(t)->alias() ||
            !concrete_geometry(w.target) || same_geometry(w.target, t))
          continue;
        // Both stand-ins on one meta storage, so ATen's own test applies.
        // Python modes (make_fx) must not record them.
        c10::impl::ExcludeDispatchKeyGuard no_modes(c10::python_ks);
        at::Tensor storage =
            at::empty({std::max(storage_extent(w.target).expect_int() * w.target.element_size(),
                                storage_extent(t).expect_int() * t.element_size())},
                      at::TensorOptions().dtype(at::kByte).device(c10::kMeta));
        auto place = [&](const at::Tensor& x) {
          return storage.view(x.scalar_type()).as_strided(x.sizes(), x.strides(), x.storage_offset());
        };
        if (at::get_overlap_status(place(w.target), place(t)) == at::MemOverlapStatus::Partial)
          TORCH_CHECK(false, "fxinplace.functionalize: ", c10::toString(op.operator_name()),
                      ": unsupported operation: some elements of the input tensor and the written-to tensor "
                      "refer to a single memory location. Please clone() the tensor before performing the "
                      "operation.");
      }
    });
}

}  // namespace

void conform_writes(const c10::OperatorHandle& op, c10::ArrayRef<c10::IValue> args,
                    std::vector<Write>& writes) {
  const std::string name = c10::toString(op.operator_name());
  bool rehearse = false;
  for (const Write& w : writes) {
    const at::ScalarType from = w.value.scalar_type();
    const at::ScalarType to = w.target.scalar_type();
    // TensorIterator's rule for writing a result into an existing tensor.
    TORCH_CHECK(c10::canCast(from, to), "fxinplace.functionalize: ", name, ": result type ", from,
                " can't be cast to the desired output type ", to);
    const bool reshaped = w.value.sym_sizes() != w.target.sym_sizes();
    TORCH_CHECK(!reshaped || w.is_out, "fxinplace.functionalize: ", name, ": output with shape ",
                shape_string(w.target.sym_sizes()), " doesn't match the broadcast shape ",
                shape_string(w.value.sym_sizes()));
    TORCH_CHECK(
        !repeats_memory(w.target) || writes_each_element_at_most_once(op, args),
        "fxinplace.functionalize: ", name,
        ": unsupported operation: more than one element of the written-to tensor refers to a single "
        "memory location (e.g. a view made by expand()), and functionalization cannot express this op's "
        "writes into it. Please clone() the tensor before performing the operation.");
    // out= ops have their own dtype rules (mm.out wants exactly its result's
    // dtype): eager's own meta kernel decides.
    rehearse = rehearse || (w.is_out && from != to);
  }
  check_no_partial_overlap(op, args, writes);

  if (rehearse) rehearse_on_meta(op, args);
  for (Write& w : writes)
    if (w.value.scalar_type() != w.target.scalar_type()) w.value = w.value.to(w.target.scalar_type());
}

}  // namespace fxinplace::functionalize
