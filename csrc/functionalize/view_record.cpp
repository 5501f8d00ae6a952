#include "functionalize/view_record.h"

#include <ATen/ATen.h>
#include <ATen/ExpandUtils.h>
#include <c10/core/impl/LocalDispatchKeySet.h>

#include <mutex>
#include <unordered_map>

#include "functionalize/dtype_views.h"
#include "functionalize/meta_geometry.h"

namespace fxinplace::functionalize {
namespace {

Inverse inverse_for(const std::string& name) {
  static const std::unordered_map<std::string, Inverse> table = {
      {"aten::slice", Inverse::kSlice},
      {"aten::select", Inverse::kSelect},
      {"aten::diagonal", Inverse::kDiagonal},
      {"aten::as_strided", Inverse::kAsStrided},
      {"aten::view", Inverse::kReshape},
      {"aten::_reshape_alias", Inverse::kReshape},
      {"aten::squeeze", Inverse::kReshape},
      {"aten::unsqueeze", Inverse::kReshape},
      {"aten::transpose", Inverse::kTranspose},
      {"aten::t", Inverse::kTranspose2d},
      {"aten::permute", Inverse::kPermute},
      {"aten::alias", Inverse::kAlias},
      {"aten::detach", Inverse::kAlias},
      {"aten::split", Inverse::kSplit},
      {"aten::split_with_sizes", Inverse::kSplitWithSizes},
      {"aten::unbind", Inverse::kUnbind},
      {"aten::expand", Inverse::kExpand},
      {"aten::view_as_real", Inverse::kViewAsReal},
      {"aten::view_as_complex", Inverse::kViewAsComplex},
      {"aten::_conj", Inverse::kConj},
      {"aten::_neg_view", Inverse::kNeg},
  };
  auto it = table.find(name);
  return it == table.end() ? Inverse::kGeometry : it->second;
}

std::optional<c10::OperatorHandle> copy_variant(const c10::OperatorName& name) {
  return c10::Dispatcher::singleton().findSchema({name.name + "_copy", name.overload_name});
}

int64_t wrap_dim(int64_t dim, int64_t rank) { return dim < 0 ? dim + rank : dim; }

std::optional<c10::SymInt> optional_symint(const c10::IValue& v) {
  if (v.isNone()) return std::nullopt;
  return v.toSymInt();
}

}  // namespace

const ViewOp& view_op(const c10::OperatorHandle& op) {
  static std::mutex mu;
  static std::unordered_map<const c10::FunctionSchema*, ViewOp> cache;
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(&op.schema());
  if (it != cache.end()) return it->second;
  const c10::OperatorName& name = op.operator_name();
  const auto& returns = op.schema().returns();
  ViewOp facts{op,
               copy_variant(name),
               op.schema().arguments().size(),
               returns.size() == 1 && returns[0].type()->kind() == c10::TypeKind::ListType,
               name.overload_name == "dtype" ? Inverse::kDtype : inverse_for(name.name),
               c10::toString(name)};
  if (name.name == "aten::_reshape_alias") {
    // _reshape_alias(self, size, stride) bakes in strides computed from the
    // eager layout; the value it is replayed on (a *_copy result, or a base
    // rebuilt by a scatter) may be laid out differently. view(self, size) has
    // the same elements in the same order and takes its strides from the value.
    facts.op = c10::Dispatcher::singleton().findSchemaOrThrow("aten::view", "");
    facts.copy = c10::Dispatcher::singleton().findSchemaOrThrow("aten::view_copy", "");
    facts.num_args = 2;
  }
  return cache.emplace(&op.schema(), std::move(facts)).first->second;
}

ViewRecord::ViewRecord(const c10::OperatorHandle& op, std::vector<c10::IValue> args, int64_t out_index,
                       std::optional<c10::SymInt> offset_origin)
    : op_(&view_op(op)), args_(std::move(args)), out_index_(out_index) {
  args_.resize(op_->num_args);
  args_[0] = c10::IValue();
  if (op_->inverse == Inverse::kAsStrided && !args_[3].isNone()) offset_origin_ = std::move(offset_origin);
}

c10::SymInt ViewRecord::as_strided_extent(const at::Tensor& base) const {
  const std::vector<c10::SymInt> sizes = args_[1].toSymIntVector();
  const std::vector<c10::SymInt> strides = args_[2].toSymIntVector();
  c10::SymInt extent = *as_strided_offset(base) + 1;
  for (size_t d = 0; d < sizes.size(); ++d) extent = extent + (sizes[d] - 1) * strides[d];
  return extent;
}

bool ViewRecord::within_storage(const at::Tensor& base, bool own_elements_only) const {
  // An empty result reads nothing (ATen asks no storage of it); an empty base
  // may still be viewed into its storage's elements (seed 122828: as_strided
  // of t[:, 1:], a (1, 0) view, at its storage offset).
  for (const c10::SymInt& size : args_[1].toSymIntVector())
    if (TORCH_GUARD_OR_FALSE(size.sym_eq(0))) return true;
  const c10::Storage& storage = base.unsafeGetTensorImpl()->unsafe_storage();
  const auto nbytes = storage ? storage.sym_nbytes().maybe_as_int() : std::nullopt;
  if (nbytes) {
    const int64_t available = *nbytes / static_cast<int64_t>(base.element_size());
    return TORCH_GUARD_OR_TRUE(as_strided_extent(base).sym_le(available));
  }
  // A symbolic storage size is no graph input: arithmetic on it cannot be
  // traced, so a storage is checked where concrete only (an input's, or a
  // scatter's result, which copies its input's whole storage). A value that
  // holds its own elements and no more is checked against them: past them the
  // graph's as_strided_copy would raise (random pipelines seed 125532:
  // as_strided_ of a written x = t[1:-1] over t's last element), as a fake
  // trace refuses it.
  if (!own_elements_only) return true;
  return TORCH_GUARD_OR_TRUE(as_strided_extent(base).sym_le(storage_extent(base)));
}

std::optional<c10::SymInt> ViewRecord::as_strided_offset(const at::Tensor& base) const {
  if (args_[3].isNone()) return base.sym_storage_offset();
  if (!offset_origin_) return args_[3].toSymInt();
  return base.sym_storage_offset() + (args_[3].toSymInt() - *offset_origin_);
}

namespace {

// Whether view_as_complex accepts `t`'s layout: the last dim holds each
// (real, imag) pair side by side, and every other stride and the storage
// offset count whole pairs.
bool pairs_adjacent(const at::Tensor& t) {
  if (t.dim() == 0 || !TORCH_GUARD_OR_FALSE(t.sym_stride(-1).sym_eq(1))) return false;
  // As ATen's view_as_complex: a size-1 dim's stride may be odd (it steps
  // over nothing; x[:, :2].unfold(0, 2, 3) of a transposed x has stride 3 there).
  for (int64_t d = 0; d + 1 < t.dim(); ++d)
    if (!TORCH_GUARD_OR_FALSE(t.sym_size(d).sym_eq(1)) &&
        !TORCH_GUARD_OR_FALSE((t.sym_stride(d) % 2).sym_eq(0)))
      return false;
  return TORCH_GUARD_OR_FALSE((t.sym_storage_offset() % 2).sym_eq(0));
}

// Per element of two complex tensors of one dtype and shape: whether their
// bits are the same (both parts; -0.0 is not 0.0 here).
at::Tensor same_bits(const at::Tensor& a, const at::Tensor& b, bool reapply_views) {
  const size_t part = a.element_size() / 2;
  const at::ScalarType bits_type = part == 8 ? at::kLong : part == 4 ? at::kInt : at::kShort;
  auto bits = [&](const at::Tensor& t) {
    const at::Tensor parts = reapply_views ? at::view_as_real(t) : at::view_as_real_copy(t);
    return reapply_views ? parts.view(bits_type) : at::view_copy(parts, bits_type);
  };
  return at::all(at::eq(bits(a), bits(b)), -1);
}

}  // namespace

// Complex neg computes 0 - x (vectorized), which is no involution on zeros:
// a -0.0 read through _neg_view comes back +0.0 when negated back, so every
// element a write through the view left alone would change its sign bit
// (random pipelines seed 152445: the untouched copies of an expanded element
// then looked written, and their bytes mixed with the written copy's):
//   x = [-0.0j] * 16;  _neg_view(x)[0].fill_(1)    # eager: x[1:] untouched
// An element whose bits in the written view are still the view's old bits,
// neg(base) as reading the view computed them, keeps the base's own bits.
at::Tensor ViewRecord::unflip_written(const at::Tensor& base, const at::Tensor& mutated_view,
                                      bool written_complex, bool reapply_views) const {
  at::Tensor back = unflip(mutated_view, written_complex, reapply_views);
  if (op_->inverse != Inverse::kNeg || !base.is_complex() || base.is_conj() || base.is_neg() ||
      mutated_view.is_conj() || mutated_view.is_neg() || mutated_view.scalar_type() != base.scalar_type() ||
      back.scalar_type() != base.scalar_type() || mutated_view.sym_sizes() != base.sym_sizes() ||
      back.sym_sizes() != base.sym_sizes())
    return back;
  return at::where(same_bits(at::neg(base), mutated_view, reapply_views), base, back);
}

c10::IValue ViewRecord::call(const at::Tensor& base, bool reapply_views) const {
  TORCH_CHECK(reapply_views || op_->copy, "fxinplace.functionalize(remove='mutations_and_views'): view op ",
              op_->name, " has no *_copy variant to replace it with");
  std::vector<c10::IValue> stack = args_;
  stack[0] = op_->inverse == Inverse::kDtype ? viewable_as_dtype(base, args_[1].toScalarType(), reapply_views)
                                             : base;
  // A value need not lie as eager's tensor does (a written input's value under
  // a fake or symbolic trace starts at offset 0 where eager's is odd: random
  // pipelines seed 131839); its pairs are adjacent in a contiguous copy. (The
  // caller checked eager's layout, which decides whether eager raises.)
  if (op_->inverse == Inverse::kViewAsComplex && !pairs_adjacent(base))
    stack[0] = base.clone(at::MemoryFormat::Contiguous);
  if (offset_origin_) stack[3] = c10::IValue(*as_strided_offset(base));
  (reapply_views ? op_->op : *op_->copy).callBoxed(stack);
  return stack[0];
}

at::Tensor ViewRecord::forward(const at::Tensor& base, bool reapply_views) const {
  c10::IValue out = call(base, reapply_views);
  return op_->multi_output ? out.toTensorList().get(out_index_) : out.toTensor();
}

std::vector<at::Tensor> ViewRecord::forward_all(const at::Tensor& base, bool reapply_views) const {
  c10::IValue out = call(base, reapply_views);
  return op_->multi_output ? out.toTensorList().vec() : std::vector<at::Tensor>{out.toTensor()};
}

at::Tensor ViewRecord::reshape_back(const at::Tensor& base, const at::Tensor& mutated_view,
                                    bool reapply_views) const {
  // squeeze/unsqueeze/view keep the row-major order of elements, so reshaping
  // the written view to the base's sizes is its inverse.
  if (!reapply_views) return at::view_copy_symint(mutated_view, base.sym_sizes());
  return mutated_view.reshape_symint(base.sym_sizes());
}

at::Tensor ViewRecord::slice_piece_back(const at::Tensor& base, const at::Tensor& mutated_view,
                                        c10::SymInt start, c10::SymInt length) const {
  const int64_t dim = wrap_dim(args_.back().toInt(), base.dim());
  c10::SymInt end = start + length;
  return at::slice_scatter_symint(base, mutated_view, dim, start, end, 1);
}

// Any other view of a strided tensor is a set of elements of the base's
// storage: measure it, then scatter with as_strided_scatter, which addresses
// the same storage layout (it clones the base preserving strides and offset).
at::Tensor ViewRecord::scatter_by_geometry(const at::Tensor& base, const at::Tensor& mutated_view,
                                           CopiesFold fold) const {
  at::Tensor shadow = replay_on_meta(base, [this](const at::Tensor& t) { return forward(t, true); });
  TORCH_CHECK(shadow.scalar_type() == base.scalar_type(), "fxinplace.functionalize: cannot write through ",
              op_->name, ": the view has another dtype than its base");
  return scatter_into_storage(base, mutated_view, shadow.sym_sizes(), shadow.sym_strides(),
                              shadow.sym_storage_offset(), fold);
}

bool ViewRecord::scatters_by_index() const {
  switch (op_->inverse) {
    case Inverse::kSlice:
    case Inverse::kSelect:
    case Inverse::kDiagonal:
    case Inverse::kSplit:
    case Inverse::kSplitWithSizes:
    case Inverse::kUnbind:
      return true;
    default:
      return false;
  }
}

bool ViewRecord::keeps_elements() const {
  switch (op_->inverse) {
    case Inverse::kDtype:
    case Inverse::kViewAsReal:
    case Inverse::kViewAsComplex:
    case Inverse::kExpand:
      return false;
    default:
      return true;
  }
}

// Eager writes through a negative view by computing the new value, copying it
// into the tensor with the negative bit and negating it there, in that
// tensor's dtype. The negative bit passes through view_as_real and
// view_as_complex, and the two negations differ on zeros: a float's flips the
// sign bit, a complex one computes 0 - x (vectorized), which keeps +0.0 (random
// pipelines seed 112172):
//   view_as_real(_neg_view(x)).zero_()   # x: -0.0 + -0.0j
//   _neg_view(x).zero_()                 # x: +0.0 + 0.0j
// So the value is negated as the written tensor's dtype sees it.
at::Tensor ViewRecord::unflip(const at::Tensor& value, bool written_complex, bool reapply_views) const {
  if (op_->inverse == Inverse::kConj) return at::conj_physical(value);
  if (op_->inverse != Inverse::kNeg) return value;
  if (value.is_complex() == written_complex || value.is_conj()) return at::neg(value);
  if (value.is_complex()) {  // written through view_as_real: negate the parts
    const at::Tensor parts = reapply_views ? at::view_as_real(value) : at::view_as_real_copy(value);
    at::Tensor negated = at::neg(parts);
    if (!pairs_adjacent(negated)) negated = negated.clone(at::MemoryFormat::Contiguous);
    return reapply_views ? at::view_as_complex(negated) : at::view_as_complex_copy(negated);
  }
  // written through view_as_complex: negate the complex numbers the pairs make.
  // A scatter of a view before view_as_complex may have laid them out in
  // another shape (view_as_complex(_neg_view(t)[0:2]) written: the value is
  // t's (4,) floats, two pairs in a row; random pipelines seed 141279).
  if (value.dim() == 0 || !TORCH_GUARD_OR_FALSE(value.sym_size(-1).sym_eq(2))) {
    // (An odd count of floats makes no pairs: negated as floats, which
    // differs from the complex negation only in the sign of a zero.)
    if (!TORCH_GUARD_OR_FALSE((value.sym_numel() % 2).sym_eq(0))) return at::neg(value);
    const at::Tensor contiguous = value.contiguous();
    const std::vector<c10::SymInt> in_pairs{value.sym_numel() / 2, 2};
    const at::Tensor pairs =
        reapply_views ? contiguous.view_symint(in_pairs) : at::view_copy_symint(contiguous, in_pairs);
    const at::Tensor negated = unflip(pairs, written_complex, reapply_views);
    return reapply_views ? negated.view_symint(value.sym_sizes())
                         : at::view_copy_symint(negated, value.sym_sizes());
  }
  const at::Tensor pairs = pairs_adjacent(value) ? value : value.clone(at::MemoryFormat::Contiguous);
  const at::Tensor numbers = reapply_views ? at::view_as_complex(pairs) : at::view_as_complex_copy(pairs);
  const at::Tensor negated = at::neg(numbers);
  return reapply_views ? at::view_as_real(negated) : at::view_as_real_copy(negated);
}

ValueFlips value_flips(const ViewChain& views) {
  ValueFlips flips;
  for (const auto& record : views) {
    if (!record->flips_values()) continue;
    bool& bit = record->conjugates() ? flips.conjugated : flips.negated;
    bit = !bit;
  }
  return flips;
}

size_t direct_fold_level(const ViewChain& views) {
  for (size_t k = 0; k + 1 < views.size(); ++k) {
    if (!views[k]->folds_by_scatter()) continue;
    for (size_t j = k + 1; j < views.size(); ++j)
      if (!views[j]->keeps_elements()) return views.size();
    return k;
  }
  return views.size();
}

// ATen's slice/select/diagonal_scatter copy their base's whole storage as
// the base's dtype (clone_preserve_strides) and assert that it holds a whole
// number of elements. A dtype view's storage need not (random pipelines seed
// 11130): view_as_complex(t[:4].view(-1, 2)) of a (7, 7) float t views 196
// bytes as complex64; torch.func.functionalize fails there. These scatters
// address logical elements only, so a compact copy of such a base scatters
// the same values. Under a symbolic trace the storage's size is a symbol the
// trace cannot do arithmetic on: a view wider than its storage's elements
// is copied whatever its size.
at::Tensor whole_elements_base(const at::Tensor& base, const at::Tensor& storage_root) {
  if (!base.has_storage() || base.itemsize() <= storage_root.itemsize()) return base;
  const c10::SymInt nbytes = base.storage().sym_nbytes();
  const auto itemsize = static_cast<int64_t>(base.itemsize());
  const bool whole = nbytes.maybe_as_int() && *nbytes.maybe_as_int() % itemsize == 0;
  return whole ? base : base.clone(at::MemoryFormat::Contiguous);
}

// A replay that had to copy on the way (view_as_complex of pairs that are
// not adjacent in `base`'s layout, a dtype view at an offset that is not a
// whole element) computes the view's values but not where it lies in
// `base`: the copy's geometry located in `base` is other memory (random
// pipelines seed 205307: a custom op on view_as_complex of an unfolded
// transposed input, located in a compact copy of it, wrote another element).
at::Tensor measure_on_meta(const at::Tensor& base, const ViewChain& views) {
  at::Tensor origin;
  const ViewRecord* copied_at = nullptr;
  at::Tensor where = replay_on_meta(base, [&](at::Tensor current) {
    origin = current;
    for (const auto& record : views) {
      current = record->forward(current, /*reapply_views=*/true);
      if (copied_at == nullptr && !current.is_alias_of(origin)) copied_at = record.get();
    }
    return current;
  });
  TORCH_CHECK(copied_at == nullptr, "fxinplace.functionalize: the view made by ", copied_at->op_name(),
              " cannot be located in the memory of the tensor it views, laid out as it is here (",
              base.sym_sizes(), ", strides ", base.sym_strides(),
              "): its elements are not where the view needs them, so a write through it cannot be expressed");
  return where;
}

at::Tensor ViewRecord::reverse(const at::Tensor& base, const at::Tensor& mutated_view, bool reapply_views,
                               CopiesFold fold, bool written_complex) const {
  switch (op_->inverse) {
    case Inverse::kSlice:
      return at::slice_scatter_symint(base, mutated_view, args_[1].toInt(), optional_symint(args_[2]),
                                      optional_symint(args_[3]), args_[4].toSymInt());
    case Inverse::kSelect:
      return at::select_scatter_symint(base, mutated_view, args_[1].toInt(), args_[2].toSymInt());
    case Inverse::kDiagonal:
      return at::diagonal_scatter(base, mutated_view, args_[1].toInt(), args_[2].toInt(), args_[3].toInt());
    case Inverse::kAsStrided:
      return scatter_into_storage(base, mutated_view, args_[1].toSymIntVector(), args_[2].toSymIntVector(),
                                  *as_strided_offset(base), fold);
    case Inverse::kReshape:
      return reshape_back(base, mutated_view, reapply_views);
    case Inverse::kTranspose: {
      const int64_t d0 = args_[1].toInt();
      const int64_t d1 = args_[2].toInt();
      return reapply_views ? mutated_view.transpose(d0, d1) : at::transpose_copy(mutated_view, d0, d1);
    }
    case Inverse::kTranspose2d:
      return reapply_views ? mutated_view.t() : at::t_copy(mutated_view);
    case Inverse::kPermute: {
      const std::vector<int64_t> dims = args_[1].toIntVector();
      std::vector<int64_t> inverse(dims.size());
      for (size_t k = 0; k < dims.size(); ++k)
        inverse[wrap_dim(dims[k], static_cast<int64_t>(dims.size()))] = static_cast<int64_t>(k);
      return reapply_views ? mutated_view.permute(inverse) : at::permute_copy(mutated_view, inverse);
    }
    case Inverse::kAlias:
      return mutated_view;
    case Inverse::kSplit: {
      const c10::SymInt piece = args_[1].toSymInt();
      const int64_t dim = wrap_dim(args_[2].toInt(), base.dim());
      return slice_piece_back(base, mutated_view, piece * out_index_, mutated_view.sym_size(dim));
    }
    case Inverse::kSplitWithSizes: {
      const std::vector<c10::SymInt> sizes = args_[1].toSymIntVector();
      c10::SymInt start = 0;
      for (int64_t k = 0; k < out_index_; ++k) start = start + sizes[k];
      return slice_piece_back(base, mutated_view, start, sizes[out_index_]);
    }
    case Inverse::kUnbind:
      return at::select_scatter(base, mutated_view, args_[1].toInt(), out_index_);
    case Inverse::kDtype: {
      // view(dtype) reinterprets the same bytes; reinterpreting back is its
      // inverse.
      // (The written value is a functional result, laid out as its kernel
      // chose: where its layout cannot be viewed, a contiguous copy can.)
      at::Tensor bytes = viewable_as_dtype(mutated_view, base.scalar_type(), reapply_views);
      if (!viewable_as(bytes, base.scalar_type())) bytes = bytes.clone(at::MemoryFormat::Contiguous);
      return reapply_views ? bytes.view(base.scalar_type()) : at::view_copy(bytes, base.scalar_type());
    }
    case Inverse::kViewAsReal: {
      // As for kDtype: the written value is laid out as its kernel chose
      // (masked_fill_ of view_as_real(x).t() with a 0-d mask computes
      // contiguously, so transposing back puts the pairs at stride 2: seed
      // 110186); view_as_complex needs each pair adjacent, a contiguous copy has.
      const at::Tensor pairs =
          pairs_adjacent(mutated_view) ? mutated_view : mutated_view.clone(at::MemoryFormat::Contiguous);
      return reapply_views ? at::view_as_complex(pairs) : at::view_as_complex_copy(pairs);
    }
    case Inverse::kViewAsComplex:
      return reapply_views ? at::view_as_real(mutated_view) : at::view_as_real_copy(mutated_view);
    case Inverse::kGeometry:
      return scatter_by_geometry(base, mutated_view, fold);
    case Inverse::kExpand:
      return fold_expand_back(base, mutated_view, reapply_views, fold);
    case Inverse::kConj:  // _conj shows the base conjugated: the base is the written value conjugated
    case Inverse::kNeg:   // _neg_view shows the base negated
      return unflip_written(base, mutated_view, written_complex, reapply_views);
  }
  TORCH_CHECK(false, "fxinplace.functionalize: unknown inverse for ", op_->name);
}

}  // namespace fxinplace::functionalize
