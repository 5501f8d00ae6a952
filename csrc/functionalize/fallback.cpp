// The boxed fallback on kFunctionalizeKey: every op that touches a functional
// tensor (or, inside a region, creates one) lands here and is re-issued as
// functional ops on the unwrapped values, with our key excluded, so a mode
// below us (make_fx's proxy mode) records only functional ops.
#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <c10/core/impl/TorchDispatchModeTLS.h>
#include <torch/library.h>

#include <algorithm>
#include <memory>
#include <mutex>

#include "functionalize/auto_functionalize.h"
#include "functionalize/dispatch_key.h"
#include "functionalize/eager_rehearsal.h"
#include "functionalize/eager_write_rules.h"
#include "functionalize/error_text.h"
#include "functionalize/foreach_in_sequence.h"
#include "functionalize/functional_tensor.h"
#include "functionalize/input_alias_set.h"
#include "functionalize/ivalue_tensors.h"
#include "functionalize/meta_geometry.h"
#include "functionalize/op_classes.h"
#include "functionalize/region.h"
#include "functionalize/resize.h"

namespace fxinplace::functionalize {
namespace {

using Args = c10::ArrayRef<c10::IValue>;

struct ArgScan {
  bool any_tensor = false;
  bool any_functional = false;
};

ArgScan scan(Args args) {
  ArgScan s;
  for (const c10::IValue& a : args)
    for_each_tensor(a, [&](const at::Tensor& t) {
      s.any_tensor = s.any_tensor || t.defined();
      s.any_functional = s.any_functional || is_functional(t);
    });
  return s;
}

std::string op_name(const c10::OperatorHandle& op) { return c10::toString(op.operator_name()); }

void unwrap_arguments(torch::jit::Stack* stack, size_t num_args, bool reapply) {
  const bool grad = at::GradMode::is_enabled();
  for (auto it = stack->end() - num_args; it != stack->end(); ++it)
    *it = map_tensors(*it, [&](const at::Tensor& t) {
      if (!is_functional(t)) return t;
      TORCH_CHECK(
          !grad || !functional_impl(t)->alias()->detached_from_autograd(),
          "fxinplace.functionalize: a tensor that requires grad, written under torch.no_grad(), is read "
          "with grad mode on; its functional value is not connected to it by autograd, so gradients "
          "would not reach it. Read it under torch.no_grad() too, or write it with grad mode on");
      return unwrap_synced(t, reapply);
    });
}

// eager_layout: the results are laid out as eager lays them out (see
// values_laid_out_as_in_eager). Otherwise `eager_geometry`, where not empty,
// has eager's geometry of each returned tensor in turn.
void wrap_returns(torch::jit::Stack* stack, size_t num_returns, bool eager_layout = false,
                  const std::vector<at::Tensor>& eager_geometry = {}) {
  size_t next = 0;
  for (auto it = stack->end() - num_returns; it != stack->end(); ++it)
    *it = map_tensors(*it, [&](const at::Tensor& t) {
      const at::Tensor* eager = next < eager_geometry.size() ? &eager_geometry[next] : nullptr;
      ++next;
      if (!t.defined()) return t;
      if (!eager_layout && eager && eager->defined() && eager->scalar_type() == t.scalar_type() &&
          eager->sym_sizes() == t.sym_sizes())
        return wrap_new_in_eager_geometry(t, *eager);
      return wrap_new(t, eager_layout);
    });
}

// With remove="mutations_and_views" a view's value is a compact copy, so an op
// computed from it lays its result out as eager need not (mul of a transposed
// input is transposed in eager, contiguous here). Only where every functional
// operand's value has its eager layout is the result's layout eager's too --
// which as_strided of it needs (run_view).
// An op lays its result out by its operands' dim order (TensorIterator): the
// order of the dims by stride, leaving out dims of size 1 and broadcast dims
// (stride 0), which the order does not follow. (Symbolic strides: equal ones.)
// `ordered`: the dims that count (not of size 1, not broadcast in eager's layout).
std::optional<std::vector<int64_t>> dim_order(const at::Tensor& t, const std::vector<int64_t>& ordered) {
  std::vector<std::pair<int64_t, int64_t>> dims;  // (stride, dim)
  for (int64_t d : ordered) {
    auto stride = t.sym_stride(d).maybe_as_int();
    if (!stride) return std::nullopt;
    dims.emplace_back(*stride, d);
  }
  std::stable_sort(dims.begin(), dims.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  std::vector<int64_t> order;
  for (const auto& [stride, d] : dims) order.push_back(d);
  return order;
}

bool same_dim_order(const at::Tensor& value, const at::Tensor& layout) {
  if (value.sym_sizes() != layout.sym_sizes()) return false;
  std::vector<int64_t> ordered;
  for (int64_t d = 0; d < layout.dim(); ++d) {
    if (layout.sym_size(d) == 1) continue;
    // A dim eager broadcasts (stride 0) does not vote on the order; a compact
    // copy's does (random pipelines seed 157184: minimum(x.expand(3, n).unfold(0,
    // 2, 3), y) follows y's transposed layout in eager, the unfold_copy's here).
    if (layout.sym_stride(d) == 0) {
      if (value.sym_stride(d) != 0) return false;
      continue;
    }
    ordered.push_back(d);
  }
  auto a = dim_order(value, ordered);
  auto b = dim_order(layout, ordered);
  if (a && b) return *a == *b;
  for (int64_t d : ordered)
    if (value.sym_stride(d) != layout.sym_stride(d)) return false;
  return true;
}

bool values_laid_out_as_in_eager(Args args) {
  bool eager = true;
  for (const c10::IValue& a : args)
    for_each_tensor(a, [&](const at::Tensor& t) {
      if (!eager || !t.defined() || !is_functional(t)) return;
      FunctionalTensorImpl* impl = functional_impl(t);
      impl->sync(/*reapply_views=*/false);
      eager = impl->has_eager_layout() && same_dim_order(impl->value(), impl->metadata());
    });
  return eager;
}

// Every written argument must be functional: a tensor created outside the
// region (captured by the function) cannot be written with functional data.
void check_written_are_functional(const c10::OperatorHandle& op, const OpClass& c, Args args) {
  for (size_t p : c.written)
    for_each_tensor(args[p], [&](const at::Tensor& t) {
      TORCH_CHECK(
          !t.defined() || is_functional(t), "fxinplace.functionalize: ", op_name(op),
          " writes its argument '", op.schema().arguments()[p].name(),
          "', a tensor created outside the functionalized function (captured), using functional tensors; "
          "pass that tensor to the function as an input instead");
    });
}

void commit_one(const c10::OperatorHandle& op, const Write& w, bool reapply) {
  if (writes_nothing(w)) return;  // x[:0].add_(1): nothing changes, nothing to write back
  const bool resized = w.value.sym_sizes() != w.target.sym_sizes();
  // An input whose storage other inputs share is resized in that storage,
  // where they see what the op writes (f(t, t[1:3]): torch.add(ones(4), 1,
  // out=x1) writes t[1:5], which x0 = t reads): joined first, it is the view
  // of the joined base that eager resizes (refused before as "resized before
  // the sharing mattered").
  if (resized) join_shared_inputs_before_relayout(w.target, reapply);
  FunctionalTensorImpl* impl = functional_impl(w.target);  // (after a join: it follows the move)
  if (resized) {
    // The strides the kernel computed in, as eager's operands are laid out;
    // but into a negated or conjugated out= argument ATen's fallback for those
    // bits computes elsewhere, then resizes the argument contiguously and
    // copies (random pipelines seed 158056: torch.mul(x1, 2, out=_neg_view(x2)[...])
    // of a transposed x1 leaves out= contiguous, not transposed).
    const bool bits_fallback = w.target.is_neg() || w.target.is_conj();
    const at::Tensor contiguous_layout = bits_fallback
                                             ? meta_strided(w.value.scalar_type(), w.value.sym_sizes(),
                                                            contiguous_strides(w.value.sym_sizes()), 0)
                                             : at::Tensor();
    const at::Tensor& computed = bits_fallback              ? contiguous_layout
                                 : w.eager_layout.defined() ? w.eager_layout
                                                            : w.value;
    if (impl->views().empty()) {
      // A base takes the result as its new value, with those strides. With
      // views copied the value is laid out so too, as views of it are
      // replayed on the value: after torch.mul(t, 2, out=out) of a transposed
      // t, out.view(-1) raises in eager and must here, which a contiguous
      // value would let through.
      const at::Tensor value = bits_fallback || w.eager_layout.defined()
                                   ? with_dense_layout_of(w.value, computed, reapply)
                                   : w.value;
      impl->replace_base(value, computed.sym_strides());
      return;
    }
    // An out= argument that is a view: eager resizes it (resize_output), then
    // writes the result into it, with those strides where they are a dense layout.
    std::optional<c10::SymIntArrayRef> strides;
    if (TORCH_GUARD_OR_FALSE(computed.unsafeGetTensorImpl()->sym_is_non_overlapping_and_dense()))
      strides = computed.sym_strides();
    resize_functional(op, w.target, w.value.sym_sizes(), std::nullopt, reapply, strides);
  }
  impl->commit(w.value, op.operator_name(), w.fold);
}

// The written argument at `arg` (a tensor or a list of them) and its new value(s).
void add_writes(const c10::OperatorHandle& op, size_t arg, const c10::IValue& target,
                const c10::IValue& value, std::vector<Write>& writes) {
  const bool is_out = op.schema().arguments()[arg].is_out();
  if (target.isTensor()) {
    if (target.toTensor().defined()) writes.push_back(Write{target.toTensor(), value.toTensor(), is_out});
    return;
  }
  if (target.isTensorList()) {
    auto targets = target.toTensorList();
    auto values = value.toTensorList();
    for (size_t k = 0; k < targets.size(); ++k) writes.push_back(Write{targets[k], values[k], is_out});
  }
}

// torch.sum(x, 0, out=o) computes in o's dtype (see OpClass::functional_dtype):
// sum(x, 0, dtype=o.dtype). Left as it is where that is the dtype the op
// computes in anyway (a floating self of out's dtype), so the graph is the
// one torch.func.functionalize records.
// Returns whether it set the dtype.
bool compute_in_out_dtype(const OpClass& c, const std::vector<c10::IValue>& originals,
                          torch::jit::Stack& functional_stack) {
  if (!c.functional_dtype || !functional_stack[*c.functional_dtype].isNone()) return false;
  const c10::IValue& out = originals[*c.out_arg];
  if (!out.isTensor() || !out.toTensor().defined()) return false;
  const at::ScalarType dtype = out.toTensor().scalar_type();
  std::optional<at::ScalarType> self;
  for (const c10::IValue& v : functional_stack)
    if (!self && v.isTensor() && v.toTensor().defined()) self = v.toTensor().scalar_type();
  if (self && *self == dtype && at::isFloatingType(dtype)) return false;
  functional_stack[*c.functional_dtype] = dtype;
  return true;
}

// Eager's autograd check of an in-place op, which never sees our tensors: a
// leaf that requires grad (an input parameter), or a view of one, is written
// only under torch.no_grad() (an optimizer's update).
void check_leaf_written(const c10::OperatorHandle& op, const OpClass& c,
                        const std::vector<c10::IValue>& args) {
  if (!at::GradMode::is_enabled()) return;
  for (size_t p : c.written)
    for_each_tensor(args[p], [&](const at::Tensor& t) {
      if (!t.defined() || !is_functional(t)) return;
      const at::Tensor& base = functional_impl(t)->alias()->base_value();
      TORCH_CHECK(!(base.requires_grad() && base.is_leaf()), "fxinplace.functionalize: ", op_name(op),
                  ": a leaf Variable that requires grad (or a view of one) is being used in an in-place "
                  "operation (write it under torch.no_grad(), as optimizers do)");
    });
}

// A value viewed as a wider dtype from a storage whose size is no multiple of
// that dtype's (an int64 element of a complex view of a (1, 5) float32
// input: 20 bytes) is fine to read, but the functional variants of copy_ and
// the scatters clone their self with its strides, which views the whole
// storage in that dtype and fails ATen's internal assert: they get a clone.
// The elements of a foreach op's lists too: `_foreach_copy` copies each
// element that way (seed 145464: `_foreach_copy_` into a complex view of 7
// floats). Under a symbolic trace the storage size is an expression no graph
// input carries, which cannot be guarded on: there a value wider than its
// base's elements gets the clone (a clone is always right, only a copy more).
bool may_split_its_storage(const at::Tensor& value, const at::Tensor& wrapper) {
  if (!value.defined() || !value.has_storage()) return false;
  const auto item = static_cast<int64_t>(value.element_size());
  if (const auto nbytes = value.unsafeGetTensorImpl()->unsafe_storage().sym_nbytes().maybe_as_int())
    return *nbytes % item != 0;
  return wrapper.defined() && is_functional(wrapper) &&
         item > static_cast<int64_t>(functional_impl(wrapper)->alias()->base_value().element_size());
}

void clone_values_splitting_their_storage(torch::jit::Stack& functional_stack, const OpClass& c,
                                          const std::vector<c10::IValue>& originals) {
  for (size_t k = 0; k < functional_stack.size(); ++k) {
    c10::IValue& value = functional_stack[k];
    const c10::IValue& original = originals[c.functional_args[k]];
    if (value.isTensor()) {
      const at::Tensor& t = value.toTensor();
      if (may_split_its_storage(t, original.isTensor() ? original.toTensor() : at::Tensor()))
        value = t.clone();
      continue;
    }
    if (!value.isTensorList() && !value.isList()) continue;
    // A list: its tensors pair with the functional tensors' in the order both are visited.
    std::vector<at::Tensor> wrappers;
    for_each_tensor(original, [&](const at::Tensor& t) { wrappers.push_back(t); });
    std::vector<bool> splits;
    for_each_tensor(value, [&](const at::Tensor& t) {
      splits.push_back(
          may_split_its_storage(t, splits.size() < wrappers.size() ? wrappers[splits.size()] : at::Tensor()));
    });
    if (std::none_of(splits.begin(), splits.end(), [](bool s) { return s; })) continue;
    size_t next = 0;
    value = map_tensors(value, [&](const at::Tensor& t) { return splits[next++] ? t.clone() : t; });
  }
}

// With remove="mutations_and_views" an operand that is a view has a compact
// copy as its value, so a functional result is laid out as the kernel lays
// out compact operands; eager resizes an out= argument to the layout it
// computes in from eager's operands (random pipelines seed 11181: mul of a
// transposed view resizes `out` to strides (1, 2, 4), (8, 4, 1) from the
// copy). The functional op rehearsed on stand-ins laid out as eager's operands
// gives that layout (the out= op itself does not: its meta kernel resizes
// contiguously). Empty where the values are laid out as in eager.
std::vector<at::Tensor> rehearse_out_layouts(const c10::OperatorHandle& op, const OpClass& c,
                                             const std::vector<c10::IValue>& originals, bool reapply) {
  // (Every mutating op passes here: the schema is read only with views copied.)
  if (reapply || !c.functional) return {};
  const auto& arguments = op.schema().arguments();
  if (std::none_of(arguments.begin(), arguments.end(), [](const c10::Argument& a) { return a.is_out(); }))
    return {};
  std::vector<c10::IValue> functional_args;
  for (size_t p : c.functional_args) functional_args.push_back(originals[p]);
  if (values_laid_out_as_in_eager(functional_args)) return {};
  return rehearse_results_on_meta(*c.functional, functional_args);
}

// x.add_(y) -> x's alias group records `add(x, y)` as x's new value.
void run_mutating(const c10::OperatorHandle& op, const OpClass& c, torch::jit::Stack* stack, bool reapply) {
  const size_t num_args = op.schema().arguments().size();
  std::vector<c10::IValue> originals(stack->end() - num_args, stack->end());
  check_leaf_written(op, c, originals);
  check_written_before_running(op, originals, c.written);
  const std::vector<at::Tensor> eager_results = rehearse_out_layouts(op, c, originals, reapply);
  torch::jit::Stack functional_stack;
  functional_stack.reserve(c.functional_args.size());
  if (c.functional_is_composite) {
    // Its decomposition (matmul: views, in-place squeeze_, mm) must come
    // through this fallback too, so it runs on the functional tensors.
    for (size_t p : c.functional_args) functional_stack.push_back(originals[p]);
    {
      const c10::impl::LocalDispatchKeySet tls = c10::impl::tls_local_dispatch_key_set();
      c10::impl::ForceDispatchKeyGuard ours_again(tls.included_, tls.excluded_.remove(kFunctionalizeKey));
      c.functional->callBoxed(functional_stack);
    }
    for (c10::IValue& v : functional_stack)
      v = map_tensors(v,
                      [&](const at::Tensor& t) { return is_functional(t) ? unwrap_synced(t, reapply) : t; });
  } else {
    unwrap_arguments(stack, num_args, reapply);
    Args unwrapped = torch::jit::last(*stack, num_args);
    for (size_t p : c.functional_args) functional_stack.push_back(unwrapped[p]);
    negate_after_converting(op, originals, functional_stack);
    clone_values_splitting_their_storage(functional_stack, c, originals);
    if (!compute_in_out_dtype(c, originals, functional_stack)) {
      c.functional->callBoxed(functional_stack);
    } else {
      // Eager raises where out's dtype is no dtype the op computes in (mean into int64).
      try {
        c.functional->callBoxed(functional_stack);
      } catch (std::exception& e) {  // c10::Error, or raised in Python (a tracing mode's meta kernel)
        TORCH_CHECK(false, "fxinplace.functionalize: ", op_name(op), ": ", error_text(e));
      }
    }
  }
  torch::jit::drop(*stack, num_args);

  const size_t num_returns = c.return_alias.size();
  std::vector<Write> writes;
  size_t next_unreturned = num_returns;
  for (size_t p : c.written) {
    bool returned = false;
    for (int alias : c.return_alias) returned = returned || alias == static_cast<int>(p);
    if (!returned) add_writes(op, p, originals[p], functional_stack[next_unreturned++], writes);
  }
  for (size_t r = 0; r < num_returns; ++r)
    if (c.return_alias[r] >= 0)
      add_writes(op, c.return_alias[r], originals[c.return_alias[r]], functional_stack[r], writes);
  // Matched to the results before conform_writes casts a value to its target's
  // dtype, a new tensor (torch.sub(t.permute(1, 0, 2), 1, out=y) of a float64 t
  // into a float32 y: seed 110897).
  for (Write& w : writes)
    for (size_t k = 0; k < eager_results.size() && k < functional_stack.size(); ++k)
      if (functional_stack[k].isTensor() && functional_stack[k].toTensor().is_same(w.value))
        w.eager_layout = eager_results[k];
  conform_writes(op, originals, writes);
  for (Write& w : writes) commit_one(op, w, reapply);

  for (size_t r = 0; r < num_returns; ++r) {
    const int alias = c.return_alias[r];
    if (alias >= 0) {
      stack->push_back(originals[alias]);
    } else {
      stack->push_back(map_tensors(functional_stack[r],
                                   [](const at::Tensor& t) { return t.defined() ? wrap_new(t) : t; }));
    }
  }
}

// as_strided addresses the storage, not the tensor it is applied to: after
// other views it is replaced by one as_strided of the base (then view(dtype)
// where the chain changed the dtype), so writes through it fold back with
// as_strided_scatter (the chain form is not compositional). Returns the view,
// or an undefined tensor where the base's elements cannot show the view's
// bytes (the chain form is kept: with real views it still addresses eager's
// storage, but a write through it is refused).
at::Tensor as_strided_of_base(const FunctionalTensorImpl& parent,
                              const std::shared_ptr<const ViewRecord>& record, bool reapply) {
  ViewChain chain = parent.views();
  chain.push_back(record);
  at::Tensor where = measure_on_meta(parent.alias()->eager_base_layout(), chain);
  const at::ScalarType base_dtype = parent.alias()->base_value().scalar_type();
  if (where.scalar_type() != base_dtype && !same_bytes_as(where, base_dtype)) {
    TORCH_CHECK(
        reapply, "fxinplace.functionalize(remove='mutations_and_views'): as_strided() of a ",
        where.scalar_type(), " view of a ", base_dtype,
        " tensor that does not cover whole elements of the latter (or is not contiguous in its last dim) "
        "cannot be expressed with *_copy ops (as_strided_copy of the view would address the copy's own "
        "memory)");
    return at::Tensor();
  }
  // The parent's value stands in until the view is placed; then it is
  // regenerated from the base (replaying as_strided on the parent's value
  // would address a *_copy's own storage with remove="mutations_and_views").
  at::Tensor view = wrap_view(parent.value(), parent, record, /*reapply_views=*/true);
  FunctionalTensorImpl* impl = functional_impl(view);
  impl->view_storage_at(where, "as_strided() reaches outside the tensor the view chain started from");
  impl->sync(reapply);
  return view;
}

// as_strided of a base may read its storage beyond its elements, as eager
// does; a functional value of the base (after a write, or a shrinking
// resize) has no such memory.
void check_within_storage(const ViewRecord& record, const FunctionalTensorImpl& parent, bool reapply) {
  const bool own_elements_only = parent.alias()->holds_own_elements_only(reapply, parent.views().empty());
  TORCH_CHECK(
      record.within_storage(parent.value(), own_elements_only),
      "fxinplace.functionalize: as_strided() reaches outside the memory of the tensor it views; eager "
      "reads its storage there (memory a resize_ or a shrinking out= argument left behind, say), which "
      "functionalization cannot express");
}

// y = x[1:] -> y joins x's alias group with x's views plus `slice(dim=0, 1)`.
void run_view(const c10::OperatorHandle& op, torch::jit::Stack* stack, bool reapply) {
  const size_t num_args = op.schema().arguments().size();
  const at::Tensor self = torch::jit::peek(*stack, 0, num_args).toTensor();
  FunctionalTensorImpl* parent = functional_impl(self);
  parent->sync(reapply);
  unwrap_arguments(stack, num_args, reapply);
  std::vector<c10::IValue> recorded(stack->end() - num_args, stack->end());
  torch::jit::drop(*stack, num_args);
  // as_strided of the base itself: the offset it is given counts from where
  // the base answers that it starts (eager's storage offset, which a written
  // input's value under a fake or symbolic trace does not keep: seed 10578),
  // and is applied from the base value's own.
  std::optional<c10::SymInt> origin;
  if (parent->views().empty()) origin = parent->metadata().sym_storage_offset();
  auto first = std::make_shared<const ViewRecord>(op, recorded, 0, std::move(origin));
  TORCH_CHECK(reapply || !first->is_as_strided() || parent->alias()->eager_layout(),
              "fxinplace.functionalize",
              "(remove='mutations_and_views'): as_strided() of a tensor computed from views, which this mode "
              "copies contiguously: its memory layout need not be eager's, so as_strided would address other "
              "elements than in eager; use remove='mutations' for this function");
  if (first->is_as_strided() && parent->views().empty()) check_within_storage(*first, *parent, reapply);
  if (first->is_as_strided() && !parent->views().empty()) {
    at::Tensor view = as_strided_of_base(*parent, first, reapply);
    if (view.defined()) {
      stack->push_back(std::move(view));
      return;
    }
    // The chain form, on the parent's value: still within its memory (seed 954:
    // an int32 view of x[1:] read past x's last element). Its offset too counts
    // from where the parent answers that it starts: an int32 view of a written
    // x = t[1:-1] answers eager's 2 under a fake or symbolic trace, where its
    // value starts at 0.
    first = std::make_shared<const ViewRecord>(op, recorded, 0, parent->metadata().sym_storage_offset());
    check_within_storage(*first, *parent, reapply);
  }
  // Under make_fx the view op is recorded before it runs: one that raises
  // (t[:1] = t[-2:] expands (2,) to (1,)), in a try/except of the program, would
  // leave a node that raises in the graph (seed 2741). Replayed on meta first,
  // it raises before anything is recorded.
  if (c10::impl::TorchDispatchModeTLS::stack_len() > 0)
    replay_on_meta(parent->value(), [&first](const at::Tensor& t) { return first->forward(t, true); });
  // view_as_complex raises on eager's layout, which the value need not have
  // (ViewRecord::call makes the value's pairs adjacent where they are not).
  if (op.schema().name() == "aten::view_as_complex")
    replay_on_meta(parent->metadata(), [](const at::Tensor& t) { return at::view_as_complex(t); });
  std::vector<at::Tensor> outputs = first->forward_all(parent->value(), reapply);
  const bool multi = op.schema().returns()[0].type()->kind() == c10::TypeKind::ListType;
  if (!multi) {
    stack->push_back(wrap_view(outputs[0], *parent, first, reapply));
    return;
  }
  c10::List<at::Tensor> pieces;
  for (size_t k = 0; k < outputs.size(); ++k) {
    auto record = k == 0 ? first : std::make_shared<const ViewRecord>(op, recorded, static_cast<int64_t>(k));
    pieces.push_back(wrap_view(outputs[k], *parent, std::move(record), reapply));
  }
  stack->push_back(std::move(pieces));
}

// Eager runs an in-place view op on a conjugated or negated tensor through
// the math-bit fallback unless the op skips it (most do): the fallback runs
// it on a resolved copy and lays the tensor out as that copy, wherever its
// memory was (random pipelines seed 113284: squeeze_(0) of a (1, 3, 2)
// diagonal with strides (12, 1, 9) of x.conj() leaves strides (2, 1), offset
// 0). No view of the base expresses that.
void check_inplace_view_skips_math_bits(const c10::OperatorHandle& op, const at::Tensor& self) {
  for (auto [bit, key] : {std::pair{self.is_conj(), c10::DispatchKey::Conjugate},
                          std::pair{self.is_neg(), c10::DispatchKey::Negative}}) {
    TORCH_CHECK(!bit || op.hasKernelForDispatchKey(key), "fxinplace.functionalize: ", op_name(op), " on a ",
                key == c10::DispatchKey::Conjugate ? "conjugated" : "negated",
                " view: eager runs it on a resolved copy and lays the tensor out as that copy, which no view "
                "of its base expresses; call the out-of-place view (",
                op.schema().name().substr(0, op.schema().name().size() - 1), ") or resolve the view first");
  }
}

// x.t_() -> x becomes the alias that x.t() would be.
void run_inplace_view(const c10::OperatorHandle& op, const OpClass& c, torch::jit::Stack* stack) {
  const size_t num_args = op.schema().arguments().size();
  const at::Tensor self = torch::jit::peek(*stack, 0, num_args).toTensor();
  check_inplace_view_skips_math_bits(op, self);
  torch::jit::Stack view_stack(stack->end() - num_args, stack->end());
  torch::jit::drop(*stack, num_args);
  c.functional->callBoxed(view_stack);  // re-enters the fallback as a view
  FunctionalTensorImpl* self_impl = functional_impl(self);
  FunctionalTensorImpl* result = functional_impl(view_stack[0].toTensor());
  TORCH_CHECK(result->alias() == self_impl->alias(), "fxinplace.functionalize: ", op_name(op),
              " is an in-place view op whose out-of-place variant does not return a view");
  self_impl->become(*result);
  stack->push_back(self);
}

// x.set_(src): eager points x at src's storage, with src's geometry; x becomes
// an alias of src (later writes through either are seen by both). An input
// so changed is written back whole (see python/fxinplace/_functionalize/).
//   p.set_(torch.cat([p, p])); y = p * 2  ->  cat = cat(p, p); y = mul(cat, 2)
void run_set_to_tensor(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  const at::Tensor source = torch::jit::pop(*stack).toTensor();
  const at::Tensor self = torch::jit::pop(*stack).toTensor();
  TORCH_CHECK(is_functional(source), "fxinplace.functionalize: ", op_name(op),
              ": the source is a tensor created outside the functionalized function (captured); pass it "
              "to the function as an input instead");
  TORCH_CHECK(self.scalar_type() == source.scalar_type(), "fxinplace.functionalize: ", op_name(op),
              ": Could not set tensor of type ", source.scalar_type(), " to a tensor of type ",
              self.scalar_type());
  functional_impl(self)->set_to(*functional_impl(source));
  stack->push_back(self);
}

// as_strided_copy(x, size, stride, offset) addresses x's storage, as the view
// as_strided does; with remove="mutations_and_views" x's value is a compact
// copy, so it runs as what it is, as_strided(x, ...).clone(): the view is
// placed in eager's storage by run_view.
//   x = arange(10)[::2]; x.add_(1); as_strided_copy(x, (3,), (2,)) -> [1, 3, 5], not [1, 5, 9]
void run_as_strided_copy(torch::jit::Stack* stack) {
  std::optional<c10::SymInt> offset = torch::jit::pop(*stack).toOptional<c10::SymInt>();
  std::vector<c10::SymInt> stride = torch::jit::pop(*stack).toSymIntVector();
  std::vector<c10::SymInt> size = torch::jit::pop(*stack).toSymIntVector();
  const at::Tensor self = torch::jit::pop(*stack).toTensor();
  at::Tensor view = at::as_strided_symint(self, size, stride, std::move(offset));
  stack->push_back(view.clone(at::MemoryFormat::Contiguous));
}

// x.resize_(sizes) / x.resize_as_(t): see resize.h.
void run_resize(const c10::OperatorHandle& op, torch::jit::Stack* stack, bool reapply) {
  const size_t num_args = op.schema().arguments().size();
  std::vector<c10::IValue> args(stack->end() - num_args, stack->end());
  torch::jit::drop(*stack, num_args);
  const at::Tensor self = args[0].toTensor();
  std::vector<c10::SymInt> sizes =
      args[1].isTensor() ? args[1].toTensor().sym_sizes().vec() : args[1].toSymIntVector();
  resize_functional(op, self, sizes, args[2].toOptional<at::MemoryFormat>(), reapply);
  stack->push_back(self);
}

// torch.tensor(...) inside the region: the constant becomes a fresh base.
void run_lift(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  const at::Tensor self = torch::jit::pop(*stack).toTensor();
  torch::jit::drop(*stack, op.schema().arguments().size() - 1);
  stack->push_back(is_functional(self) ? self : wrap_new(at::lift_fresh_copy(self)));
}

// A subgraph of a higher-order op (torch.cond) that uses a functional tensor
// from outside it: eager can read it, but a trace would bake its value into
// the subgraph as a constant, and a write would escape the op.
void check_region(const c10::OperatorHandle& op, const OpClass& c, Args args) {
  for (size_t p = 0; p < args.size(); ++p)
    for_each_tensor(args[p], [&](const at::Tensor& t) {
      if (!is_functional(t) || functional_impl(t)->alias()->region() == current_region()) return;
      const bool written = std::find(c.written.begin(), c.written.end(), p) != c.written.end();
      TORCH_CHECK(!written && c10::impl::TorchDispatchModeTLS::stack_len() == 0,
                  "fxinplace.functionalize: ", op_name(op), (written ? " writes" : " reads"),
                  " a tensor from outside the subgraph of a higher-order op (torch.cond, while_loop) it runs "
                  "in",
                  (written ? "" : " while tracing, which would bake its value into the graph"),
                  "; pass the tensor to the op as an operand instead");
    });
}

// Inputs sharing a storage are joined where the sharing shows (input_alias_set.h).
// One op writing two of them shows it too: each write must land in the one
// storage, or each input's write-back would undo the other's
// (torch._foreach_mul_([x0[:1], x1[1:]], 2) called as f(a, a)).
void join_inputs_touched(const c10::OperatorHandle& op, const OpClass& c, Args args) {
  const std::string& name = op.schema().name();
  const bool addresses_storage = name == "aten::as_strided" || name == "aten::as_strided_copy" ||
                                 name == "aten::as_strided_scatter" || name == "aten::as_strided_";
  const bool reapply = reapply_views();
  for (const c10::IValue& a : args)
    for_each_tensor(a, [&](const at::Tensor& t) {
      if (t.defined() && is_functional(t)) join_inputs_if_needed(t, addresses_storage, reapply);
    });
  std::vector<const AliasState*> written;
  for (size_t p : c.written)
    for_each_tensor(args[p], [&](const at::Tensor& t) {
      if (!t.defined() || !is_functional(t)) return;
      const std::shared_ptr<AliasState>& alias = functional_impl(t)->alias();
      const std::shared_ptr<InputAliasSet>& set = alias->input_set();
      if (!set || set->joined()) return;
      for (const AliasState* other : written)
        if (other != alias.get() && other->input_set() == set) {
          c10::impl::ExcludeDispatchKeyGuard exclude(kFunctionalizeKey);
          set->join(reapply);
          return;
        }
      written.push_back(alias.get());
    });
}

void fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  const OpClass& c = classify(op);
  const size_t num_args = op.schema().arguments().size();
  const ArgScan s = scan(torch::jit::last(*stack, num_args));
  if (s.any_functional) {
    join_inputs_touched(op, c, torch::jit::last(*stack, num_args));
    check_region(op, c, torch::jit::last(*stack, num_args));
  }
  if (c.composite_implicit && (s.any_functional || !s.any_tensor)) {
    op.callBoxedForDispatchKey(c10::DispatchKey::CompositeImplicitAutograd, *stack);
    return;
  }
  const bool self_functional = s.any_functional && num_args > 0 &&
                               torch::jit::peek(*stack, 0, num_args).isTensor() &&
                               is_functional(torch::jit::peek(*stack, 0, num_args).toTensor());
  if (c.kind == OpKind::kResize && self_functional) {
    c10::impl::ExcludeDispatchKeyGuard exclude(kFunctionalizeKey);
    run_resize(op, stack, reapply_views());
    return;
  }
  if (c.kind == OpKind::kInplaceView && self_functional) {
    run_inplace_view(op, c, stack);
    return;
  }
  if (c.kind == OpKind::kSetToTensor && self_functional) {
    run_set_to_tensor(op, stack);
    return;
  }
  if (c.kind == OpKind::kMutating && !c.custom &&
      foreach_elements_interact(c, torch::jit::last(*stack, num_args))) {
    run_foreach_in_sequence(op, stack);
    return;
  }
  if (self_functional && !reapply_views() && op.schema().name() == "aten::as_strided_copy") {
    run_as_strided_copy(stack);
    return;
  }
  c10::impl::ExcludeDispatchKeyGuard exclude(kFunctionalizeKey);
  const bool reapply = reapply_views();
  if (c.kind == OpKind::kLift) {
    run_lift(op, stack);
    return;
  }
  // Only captured tensors and wrapped numbers: nothing of ours is involved.
  if (!s.any_functional && s.any_tensor) {
    op.callBoxed(stack);
    return;
  }
  switch (c.kind) {
    case OpKind::kUnsupported:
      TORCH_CHECK(false, "fxinplace.functionalize: cannot functionalize ", op_name(op), ": ",
                  c.unsupported_reason);
    case OpKind::kMutating:
      check_written_are_functional(op, c, torch::jit::last(*stack, num_args));
      if (c.custom) {
        auto_functionalize(op, c, stack, reapply);
      } else {
        run_mutating(op, c, stack, reapply);
      }
      return;
    case OpKind::kView:
      if (is_functional(torch::jit::peek(*stack, 0, num_args).toTensor())) {
        run_view(op, stack, reapply);
        return;
      }
      break;
    case OpKind::kInplaceView:
    case OpKind::kResize:
    case OpKind::kLift:
    case OpKind::kSetToTensor:
    case OpKind::kPure:
      break;
  }
  const bool eager_layout = reapply || values_laid_out_as_in_eager(torch::jit::last(*stack, num_args));
  // t2 = t1 * 2 of a transposed view t1: transposed in eager, so t2.reshape(2, -1)
  // copies there (a later write to it leaves t2 alone); the value computed
  // from t1's compact copy is contiguous, and would make the reshape a view.
  std::vector<at::Tensor> eager_geometry;
  if (!eager_layout) eager_geometry = rehearse_results_on_meta(op, torch::jit::last(*stack, num_args));
  unwrap_arguments(stack, num_args, reapply);
  op.callBoxed(stack);
  wrap_returns(stack, op.schema().returns().size(), eager_layout, eager_geometry);
}

}  // namespace

void register_fallback() {
  static std::once_flag once;
  static std::unique_ptr<torch::Library> library;
  std::call_once(once, [] {
    TORCH_CHECK(!c10::Dispatcher::singleton().hasBackendFallbackForDispatchKey(kFunctionalizeKey),
                "fxinplace.functionalize needs the dispatch key ", c10::toString(kFunctionalizeKey),
                " for itself, but another library already registered a fallback on it");
    library =
        std::make_unique<torch::Library>(torch::Library::IMPL, "_", kFunctionalizeKey, __FILE__, __LINE__);
    library->fallback(torch::CppFunction::makeFromBoxedFunction<&fallback>());
  });
}

}  // namespace fxinplace::functionalize
