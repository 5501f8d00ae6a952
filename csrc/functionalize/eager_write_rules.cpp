#include "functionalize/eager_write_rules.h"

#include <ATen/ATen.h>
#include <ATen/MemoryOverlap.h>

#include <algorithm>
#include <numeric>
#include <optional>
#include <sstream>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "functionalize/eager_rehearsal.h"
#include "functionalize/functional_tensor.h"
#include "functionalize/ivalue_tensors.h"
#include "functionalize/meta_geometry.h"
#include "functionalize/op_classes.h"

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
  for (const c10::SymInt& size : sizes)
    if (size.maybe_as_int() == std::optional<int64_t>(0)) return false;  // no elements at all
  for (size_t d = 0; d < sizes.size(); ++d) {
    const auto stride = strides[d].maybe_as_int();
    const auto size = sizes[d].maybe_as_int();
    if (stride && *stride == 0 && (!size || *size > 1)) return true;
  }
  return false;
}

// How eager's writes land in a tensor whose elements share memory, for the
// ops eager allows on one: fill_, zero_, masked_fill_, index_fill_ and
// index_put_ write each copy of a location with the same kind of value (the
// fold takes the written copy); an accumulating index_put_ adds to the
// location once per written copy. Eager raises for every other op we checked
// (TensorIterator's overlap check), or, for reductions into such an out=
// argument, accumulates in a kernel-specific way: nullopt.
std::optional<CopiesFold> fold_for_shared_memory(const c10::OperatorHandle& op,
                                                 c10::ArrayRef<c10::IValue> args) {
  const std::string& name = op.schema().name();
  const std::string& overload = op.schema().overload_name();
  if ((name == "aten::fill_" && overload == "Scalar") || name == "aten::zero_") return CopiesFold::kUniform;
  if (name == "aten::masked_fill_" || name == "aten::index_fill_") return CopiesFold::kWrittenCopy;
  if (name == "aten::index_put_" || name == "aten::_index_put_impl_")
    return args[3].toBool() ? CopiesFold::kSumOfChanges : CopiesFold::kWrittenCopy;
  return std::nullopt;
}

// The ops eager lets write a tensor whose elements share memory do so only
// where the tensor shows its memory as it is: through a negative or conjugate
// view, eager's fallback materializes it and copies back, and that copy_ raises.
std::optional<CopiesFold> fold_for(const c10::OperatorHandle& op, c10::ArrayRef<c10::IValue> args,
                                   const at::Tensor& target) {
  const ValueFlips flips = value_flips(functional_impl(target)->views());
  if (flips.negated || flips.conjugated) return std::nullopt;
  return fold_for_shared_memory(op, args);
}

[[noreturn]] void raise_repeated_memory_written(const c10::OperatorHandle& op) {
  TORCH_CHECK(false, "fxinplace.functionalize: ", op.operator_name(),
              ": unsupported operation: more than one element of the written-to tensor refers to a single "
              "memory location (e.g. a view made by expand()), and functionalization cannot express this "
              "op's writes into it. Please clone() the tensor before performing the operation.");
}

}  // namespace

bool writes_nothing(const Write& w) {
  return w.value.sym_sizes() == w.target.sym_sizes() &&
         TORCH_STATICALLY_KNOWN_TRUE(w.target.sym_numel().sym_eq(0));
}

namespace {

bool symbolic_true(const c10::SymBool& b) { return b.guard_bool(__FILE__, __LINE__); }

// Whether two functional tensors are of one storage: one alias group, or
// inputs that share a storage (each starts as a group of its own that takes
// the storage's identity; random pipelines seed 160311: sum(x1.permute(1, 0),
// 0, out=x2) with x2 = x1.transpose(0, -1) reduces into its own input).
bool one_storage(const at::Tensor& a, const at::Tensor& b) {
  const auto& x = functional_impl(a)->alias();
  const auto& y = functional_impl(b)->alias();
  return x == y || x->storage().unsafeGetStorageImpl() == y->storage().unsafeGetStorageImpl();
}

// ATen's get_overlap_status for two tensors of one storage, on their eager
// geometry, symbolic sizes included: Full when they are the same elements,
// Partial when they share some memory otherwise, TooHard when either is not
// dense (eager then does not check).
at::MemOverlapStatus overlap_status(const at::Tensor& a, const at::Tensor& b) {
  if (symbolic_true(a.sym_numel().sym_eq(0)) || symbolic_true(b.sym_numel().sym_eq(0)))
    return at::MemOverlapStatus::No;
  if (!symbolic_true(a.unsafeGetTensorImpl()->sym_is_non_overlapping_and_dense()) ||
      !symbolic_true(b.unsafeGetTensorImpl()->sym_is_non_overlapping_and_dense()))
    return at::MemOverlapStatus::TooHard;
  const int64_t a_item = static_cast<int64_t>(a.element_size());
  const int64_t b_item = static_cast<int64_t>(b.element_size());
  const c10::SymInt a_begin = a.sym_storage_offset() * a_item;
  const c10::SymInt a_end = a_begin + a.sym_numel() * a_item;
  const c10::SymInt b_begin = b.sym_storage_offset() * b_item;
  const c10::SymInt b_end = b_begin + b.sym_numel() * b_item;
  if (a_begin == b_begin && a_end == b_end)
    return a.sym_strides() == b.sym_strides() ? at::MemOverlapStatus::Full : at::MemOverlapStatus::Partial;
  if (a_begin < b_end && b_begin < a_end) return at::MemOverlapStatus::Partial;
  return at::MemOverlapStatus::No;
}

// Whether the storage bytes `a` and `b` span (first to last element) meet.
bool memory_ranges_meet(const at::Tensor& a, const at::Tensor& b) {
  if (symbolic_true(a.sym_numel().sym_eq(0)) || symbolic_true(b.sym_numel().sym_eq(0))) return false;
  const int64_t a_item = static_cast<int64_t>(a.element_size());
  const int64_t b_item = static_cast<int64_t>(b.element_size());
  const c10::SymInt a_begin = a.sym_storage_offset() * a_item;
  const c10::SymInt b_begin = b.sym_storage_offset() * b_item;
  return symbolic_true(a_begin.sym_lt(storage_extent(b) * b_item)) &&
         symbolic_true(b_begin.sym_lt(storage_extent(a) * a_item));
}

// Whether no element of `a` is an element of `b`, by a lattice argument (both
// of one element size): every element's position is its storage offset plus
// multiples of the strides, so where some c divides every stride but not the
// distance between the offsets, no positions meet (x[::2] and x[1::2]: c = 2,
// distance 1). Under a symbolic trace only what holds for every size counts
// (strides 2*s and distance s: c = 2*s). False where that does not settle it.
bool provably_disjoint_elements(const at::Tensor& a, const at::Tensor& b) {
  if (a.element_size() != b.element_size()) return false;
  std::vector<c10::SymInt> strides;
  int64_t known_gcd = 0;
  for (const at::Tensor* t : {&a, &b})
    for (int64_t d = 0; d < t->dim(); ++d) {
      if (TORCH_STATICALLY_KNOWN_TRUE(t->sym_size(d).sym_le(1))) continue;
      const c10::SymInt& stride = t->sym_stride(d);
      if (auto known = stride.maybe_as_int()) known_gcd = std::gcd(known_gcd, *known);
      strides.push_back(stride);
    }
  const c10::SymInt distance = a.sym_storage_offset() - b.sym_storage_offset();
  if (strides.empty()) return TORCH_STATICALLY_KNOWN_TRUE(distance.sym_ne(0));
  std::vector<c10::SymInt> divisors = strides;
  if (known_gcd > 1) divisors.emplace_back(known_gcd);
  for (const c10::SymInt& c : divisors) {
    if (!TORCH_STATICALLY_KNOWN_TRUE(c.sym_gt(1))) continue;
    bool divides_all = true;
    for (const c10::SymInt& stride : strides)
      divides_all = divides_all && TORCH_STATICALLY_KNOWN_TRUE((stride % c).sym_eq(0));
    // (Either sign: sympy simplifies the modulo of the positive one.)
    if (divides_all && (TORCH_STATICALLY_KNOWN_TRUE((distance % c).sym_ne(0)) ||
                        TORCH_STATICALLY_KNOWN_TRUE(((-distance) % c).sym_ne(0))))
      return true;
  }
  return false;
}

// The arguments an op's kernel checks with at::assert_no_overlap against the
// tensor it writes: the same elements raise there too, not only a partial
// overlap (random pipelines seed 158026: `t[i] = t` raises in eager). Elementwise
// kernels (TensorIterator) let an operand be exactly the output (x.add_(x)), as
// do copy_ and index_fill_'s 0-d value. masked_scatter_ checks nothing, and
// consumes its source in order while it writes: a source in the written memory
// gives the kernel's order (x.masked_scatter_(x > 2, x) reads elements it has
// already overwritten), which functionalization cannot express; refused too.
bool rejects_any_overlap(const c10::OperatorHandle& op, const std::string& arg) {
  static const std::unordered_map<std::string, std::vector<std::string>> kChecked = {
      {"index_put", {"indices", "values"}},
      {"_index_put_impl", {"indices", "values"}},
      {"index_copy", {"index", "source"}},
      {"index_add", {"index", "source"}},
      {"index_reduce", {"index", "source"}},
      {"index_fill", {"index"}},
      {"scatter", {"index", "src"}},
      {"scatter_add", {"index", "src"}},
      {"scatter_reduce", {"index", "src"}},
      {"put", {"index", "source"}},
      {"gather", {"self"}},
      {"index_select", {"self", "index"}},
      {"take", {"self", "index"}},
      {"masked_select", {"self", "mask"}},
      {"masked_scatter", {"source"}},
  };
  std::string name = op.schema().name();
  if (name.rfind("aten::", 0) != 0) return false;
  name = name.substr(6);
  if (!name.empty() && name.back() == '_') name.pop_back();
  auto it = kChecked.find(name);
  return it != kChecked.end() && std::find(it->second.begin(), it->second.end(), arg) != it->second.end();
}

// fill_, masked_fill_ and index_fill_ read a 0-d `value` tensor as a number
// (value.item()) before they write anything, so it may be an element of the
// tensor they write (x.index_fill_(0, i, x[0, 0]) runs in eager). The names
// without the underscore are their out= overloads (aten::fill.Tensor_out, ...),
// which write `out` and read `value` the same way.
bool read_as_a_number_first(const c10::OperatorHandle& op, const std::string& arg, const at::Tensor& t) {
  if (arg != "value" || t.dim() != 0) return false;
  const std::string& name = op.schema().name();
  return name == "aten::fill_" || name == "aten::masked_fill_" || name == "aten::index_fill_" ||
         name == "aten::fill" || name == "aten::masked_fill" || name == "aten::index_fill";
}

// Eager's "some elements of the input tensor and the written-to tensor refer
// to a single memory location": an argument that is another view of a written
// tensor's storage and partially overlaps it (`x[1:].add_(x[:-1])`). Meta
// kernels skip this check, so it is done here.
void check_no_partial_overlap(const c10::OperatorHandle& op, c10::ArrayRef<c10::IValue> args,
                              const std::vector<Write>& writes) {
  const auto& schema_args = op.schema().arguments();
  // A foreach op is eager's loop over its lists, which foreach_in_sequence
  // replays where elements share memory: only element k's own operands are
  // read while element k is written.
  // Each write's list position is found once (-1: in no list).
  const bool foreach = classify(op).foreach;
  std::vector<int64_t> write_position(writes.size(), -1);
  if (foreach)
    for (size_t w = 0; w < writes.size(); ++w)
      for (const c10::IValue& a : args) {
        if (!a.isTensorList() || write_position[w] >= 0) continue;
        const c10::List<at::Tensor> list = a.toTensorList();
        for (size_t k = 0; k < list.size() && write_position[w] < 0; ++k)
          if (list.get(k).is_same(writes[w].target)) write_position[w] = static_cast<int64_t>(k);
      }
  for (size_t i = 0; i < args.size(); ++i) {
    int64_t position = -1;
    for_each_tensor(args[i], [&](const at::Tensor& t) {
      if (args[i].isTensorList()) ++position;
      if (!is_functional(t)) return;
      if (i < schema_args.size() && read_as_a_number_first(op, schema_args[i].name(), t)) return;
      const bool out_arg = i < schema_args.size() && schema_args[i].is_out();
      const bool strict = i < schema_args.size() && rejects_any_overlap(op, schema_args[i].name());
      for (size_t k = 0; k < writes.size(); ++k) {
        const Write& w = writes[k];
        // An out= argument eager resizes is checked where the resize puts it
        // (contiguous from its storage offset; any dense layout covers the same memory),
        // also against itself passed as an input (torch.sum(x, 0, out=x)).
        const bool resized = w.is_out && w.value.sym_sizes() != w.target.sym_sizes();
        if ((w.target.is_same(t) && (out_arg || !resized) && !strict) || !one_storage(w.target, t)) continue;
        const at::Tensor written =
            resized ? meta_strided(w.target.scalar_type(), w.value.sym_sizes(),
                                   contiguous_strides(w.value.sym_sizes()), w.target.sym_storage_offset())
                    : w.target;
        const at::MemOverlapStatus status = overlap_status(written, t);
        // Eager does not check layouts it cannot compare (TooHard): it then reads
        // elements its kernel may already have written, and its result is the
        // kernel's order (random pipelines seed 6039, with x gapped:
        //   x[:, pos] = x.narrow(1, 0, 2)   # pos = [1, 2]: eager's column 2 is the old column 0
        // where a functional index_put reads every value first). Refused then
        // too, unless the two are the same elements at the same places or
        // provably share none (x[::2].copy_(x[1::2])).
        const bool same_element = !foreach || position < 0 || position == write_position[k];
        const bool too_hard_but_overlapping = same_element && status == at::MemOverlapStatus::TooHard &&
                                              memory_ranges_meet(written, t) && !same_geometry(written, t) &&
                                              !provably_disjoint_elements(written, t);
        const bool same_elements = strict && (w.target.is_same(t) || status == at::MemOverlapStatus::Full);
        TORCH_CHECK(status != at::MemOverlapStatus::Partial && !too_hard_but_overlapping && !same_elements,
                    "fxinplace.functionalize: ", c10::toString(op.operator_name()),
                    ": unsupported operation: some elements of the input tensor and the written-to tensor "
                    "refer to a single memory location (eager rejects this for most ops; for the others its "
                    "result depends on the kernel's order). Please clone() the tensor before performing the "
                    "operation.");
      }
    });
  }
}

// Reductions and matrix products write an out= argument before (or while)
// they read their inputs: eager's kernel fills the output with the
// reduction's identity, or BLAS writes C while reading A. With the out=
// argument also an input, of the same shape (a resized one is checked above):
//   x = torch.tensor(3.0); torch.sum(x, 0, out=x)   # eager: 0., functional: 3.
//   torch.mm(a, a, out=a)                            # eager: neither a @ a nor a
// so eager's result is the kernel's order, which functionalization cannot
// express. Scans (cumsum), softmax, sort and every elementwise op (tagged
// pointwise or not: where, floor_divide) read each input element before they
// write its output element, and are left alone.
bool reads_after_writing_out(const c10::OperatorHandle& op) {
  const std::string& name = op.schema().name();
  static const char* const kProducts[] = {"aten::mm",      "aten::bmm",    "aten::addmm", "aten::addbmm",
                                          "aten::baddbmm", "aten::matmul", "aten::mv",    "aten::addmv",
                                          "aten::dot",     "aten::vdot"};
  for (const char* product : kProducts)
    if (name == product) return true;
  for (const c10::Argument& a : op.schema().arguments())
    if (a.name() == "keepdim") return true;
  return false;
}

void check_out_is_not_a_reduced_input(const c10::OperatorHandle& op, c10::ArrayRef<c10::IValue> args,
                                      const std::vector<Write>& writes) {
  if (!reads_after_writing_out(op)) return;
  const auto& schema_args = op.schema().arguments();
  for (const Write& w : writes) {
    if (!w.is_out || w.value.sym_sizes() != w.target.sym_sizes()) continue;
    for (size_t i = 0; i < args.size() && i < schema_args.size(); ++i) {
      if (schema_args[i].is_out()) continue;
      for_each_tensor(args[i], [&](const at::Tensor& t) {
        if (!is_functional(t) || !one_storage(w.target, t)) return;
        TORCH_CHECK(!w.target.is_same(t) && overlap_status(w.target, t) != at::MemOverlapStatus::Full,
                    "fxinplace.functionalize: ", c10::toString(op.operator_name()),
                    ": the out= argument is also an input; eager's kernel writes the output before it has "
                    "read all of that input, so its result depends on the kernel, which functionalization "
                    "cannot express. Please pass a clone() of the input.");
      });
    }
  }
}

// abs and angle of a complex tensor do not run as their functional variant
// does (a real result, from its own kernel). Into a real out= argument, ATen
// computes the complex result, then resizes the argument (contiguously) and
// copies the real part in, casting it; into a complex one, it runs the
// complex kernel, whose iterator lays the result out like the input:
//   x = complex (3, 4).t(); o = torch.zeros(1); torch.abs(x, out=o)
//   o.stride() == (3, 1); torch.abs(x).stride() == (1, 4)
// Its only dtype rule is the cast (checked above): meta kernels, which want
// the real result's dtype exactly, are not asked.
bool runs_complex_kernel(const c10::OperatorHandle& op, c10::ArrayRef<c10::IValue> args) {
  const std::string& name = op.schema().name();
  return (name == "aten::abs" || name == "aten::angle") && !args.empty() && args[0].isTensor() &&
         args[0].toTensor().is_complex();
}

// `w.value` laid out as eager lays out a resized out= argument of such an op.
at::Tensor complex_kernel_out_layout(const c10::IValue& self, const Write& w) {
  if (!w.target.is_complex()) return w.value.contiguous();
  return with_dense_layout_of(w.value, self.toTensor(), /*views=*/false);
}

}  // namespace

void conform_writes(const c10::OperatorHandle& op, c10::ArrayRef<c10::IValue> args,
                    std::vector<Write>& writes) {
  // Formatted only when a check fails.
  const c10::OperatorName& name = op.operator_name();
  bool rehearse = false;
  for (Write& w : writes) {
    const at::ScalarType from = w.value.scalar_type();
    const at::ScalarType to = w.target.scalar_type();
    // TensorIterator's rule for writing a result into an existing tensor.
    TORCH_CHECK(c10::canCast(from, to), "fxinplace.functionalize: ", name, ": result type ", from,
                " can't be cast to the desired output type ", to);
    const bool reshaped = w.value.sym_sizes() != w.target.sym_sizes();
    TORCH_CHECK(!reshaped || w.is_out, "fxinplace.functionalize: ", name, ": output with shape ",
                shape_string(w.target.sym_sizes()), " doesn't match the broadcast shape ",
                shape_string(w.value.sym_sizes()));
    // The alias group's base itself repeats memory (an expanded input, a
    // stride-0 empty_strided): folding writes into it, and writing it back to
    // an input, would write several elements to one location.
    // (A write of no elements writes nothing: see commit_one.)
    TORCH_CHECK(writes_nothing(w) || !repeats_memory(functional_impl(w.target)->alias()->base_value()),
                "fxinplace.functionalize: ", name,
                " writes a tensor whose underlying tensor has elements sharing one memory location (an "
                "expanded input, say); functionalization cannot express that. Please clone() it first.");
    if (repeats_memory(w.target)) {
      const std::optional<CopiesFold> fold = fold_for(op, args, w.target);
      if (!fold) raise_repeated_memory_written(op);
      w.fold = *fold;
    } else if (!provably_injective(functional_impl(w.target)->metadata())) {
      // Overlapping windows: every copy of a location written with one value
      // leaves that value whatever the kernel's order.
      const std::string& op_name = op.schema().name();
      TORCH_CHECK(op_name == "aten::fill_" || op_name == "aten::zero_", "fxinplace.functionalize: ", name,
                  " writes a tensor whose elements may share memory (overlapping windows of unfold() or "
                  "as_strided()); eager's result then depends on the kernel's order, which functionalization "
                  "cannot express. Please clone() the tensor before performing the operation.");
      w.fold = CopiesFold::kUniform;
    }
    // Beyond TensorIterator's cast rule, ops check dtypes of their own (mm.out
    // wants exactly its result's dtype, abs_ refuses complex self): where the
    // result's dtype is not the written tensor's, eager's own meta kernel decides.
    rehearse = rehearse || (from != to && !runs_complex_kernel(op, args));
  }
  // In-place writes were checked before the op ran (check_written_before_running).
  std::vector<Write> out_writes;
  for (const Write& w : writes)
    if (w.is_out) out_writes.push_back(w);
  check_no_partial_overlap(op, args, out_writes);
  check_out_is_not_a_reduced_input(op, args, writes);

  if (rehearse) {
    std::vector<std::pair<const c10::TensorImpl*, std::vector<c10::SymInt>>> resized;
    for (const Write& w : writes)
      if (w.is_out && w.value.sym_sizes() != w.target.sym_sizes())
        resized.emplace_back(w.target.unsafeGetTensorImpl(), w.value.sym_sizes().vec());
    rehearse_on_meta(op, args, resized);
  }
  for (Write& w : writes) {
    if (w.value.scalar_type() != w.target.scalar_type()) w.value = w.value.to(w.target.scalar_type());
    if (w.is_out && w.value.sym_sizes() != w.target.sym_sizes() && runs_complex_kernel(op, args))
      w.value = complex_kernel_out_layout(args[0], w);
  }
}

void check_written_before_running(const c10::OperatorHandle& op, c10::ArrayRef<c10::IValue> args,
                                  c10::ArrayRef<size_t> written) {
  std::vector<Write> in_place;
  for (size_t p : written) {
    if (op.schema().arguments()[p].is_out()) continue;  // resized first where the shape differs
    for_each_tensor(args[p], [&](const at::Tensor& t) {
      if (!t.defined() || !is_functional(t)) return;
      if (repeats_memory(t) && !fold_for(op, args, t)) raise_repeated_memory_written(op);
      in_place.push_back(Write{t, t, /*is_out=*/false});
    });
  }
  check_no_partial_overlap(op, args, in_place);
}

void negate_after_converting(const c10::OperatorHandle& op, c10::ArrayRef<c10::IValue> args,
                             torch::jit::Stack& functional_stack) {
  if (op.schema().name() != "aten::copy_" || args.size() < 2 || !is_functional(args[1].toTensor())) return;
  const at::Tensor& self = functional_stack[0].toTensor();
  const at::Tensor& src = functional_stack[1].toTensor();
  if (src.scalar_type() == self.scalar_type()) return;
  if (!value_flips(functional_impl(args[1].toTensor())->views()).negated) return;
  // The source as it is before negation: a view without the negative bit
  // (_neg_view flips it back), or, where views are *_copy ops and the negation
  // was computed, negated again (exact: negation is its own inverse, even
  // where it wraps). Then converted, and negated in self's dtype.
  const at::Tensor plain = src.is_neg() ? at::_neg_view(src) : at::neg(src);
  functional_stack[1] = at::neg(plain.to(self.scalar_type()));
}

namespace {

// The byte ranges [begin, end) of `t`'s elements, where its geometry is
// concrete and it has at most `limit` elements; nullopt otherwise.
std::optional<std::vector<std::pair<int64_t, int64_t>>> element_bytes(const at::Tensor& t, int64_t limit) {
  const auto numel = t.sym_numel().maybe_as_int();
  const auto offset = t.sym_storage_offset().maybe_as_int();
  if (!numel || !offset || *numel > limit) return std::nullopt;
  std::vector<int64_t> sizes;
  std::vector<int64_t> strides;
  for (int64_t d = 0; d < t.dim(); ++d) {
    const auto size = t.sym_size(d).maybe_as_int();
    const auto stride = t.sym_stride(d).maybe_as_int();
    if (!size || !stride) return std::nullopt;
    sizes.push_back(*size);
    strides.push_back(*stride);
  }
  const int64_t item = static_cast<int64_t>(t.element_size());
  std::vector<std::pair<int64_t, int64_t>> bytes;
  bytes.reserve(static_cast<size_t>(*numel));
  std::vector<int64_t> index(sizes.size(), 0);
  for (int64_t k = 0; k < *numel; ++k) {
    int64_t at = *offset;
    for (size_t d = 0; d < sizes.size(); ++d) at += index[d] * strides[d];
    bytes.emplace_back(at * item, (at + 1) * item);
    for (size_t d = sizes.size(); d-- > 0;) {
      if (++index[d] < sizes[d]) break;
      index[d] = 0;
    }
  }
  std::sort(bytes.begin(), bytes.end());
  return bytes;
}

// Whether some element of `a` shares a byte with some element of `b`;
// true where that cannot be told cheaply (symbolic or large geometries).
bool elements_may_meet(const at::Tensor& a, const at::Tensor& b) {
  constexpr int64_t kLimit = 1 << 16;
  const auto in_a = element_bytes(a, kLimit);
  const auto in_b = element_bytes(b, kLimit);
  if (!in_a || !in_b) return true;
  size_t j = 0;
  for (const auto& [begin, end] : *in_a) {  // both sorted: one merge pass
    while (j < in_b->size() && (*in_b)[j].second <= begin) ++j;
    if (j < in_b->size() && (*in_b)[j].first < end) return true;
  }
  return false;
}

}  // namespace

bool may_share_memory(const at::Tensor& a, const at::Tensor& b) {
  if (!is_functional(a) || !is_functional(b) || !one_storage(a, b)) return false;
  const at::MemOverlapStatus status = overlap_status(a, b);
  return status == at::MemOverlapStatus::Full || status == at::MemOverlapStatus::Partial ||
         (status == at::MemOverlapStatus::TooHard && memory_ranges_meet(a, b) && elements_may_meet(a, b));
}

}  // namespace fxinplace::functionalize
