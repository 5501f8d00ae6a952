// A replayable record of one view op applied to an alias: enough to rebuild the
// view from a (new) base value (`forward`) and to write a mutated view back
// into its base (`reverse`). A chain of records leads from the alias group's
// base to any of its views.
#pragma once

#include <ATen/core/Tensor.h>
#include <ATen/core/dispatch/Dispatcher.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "functionalize/expand_fold.h"

namespace fxinplace::functionalize {

// How a write through the view is folded back into the base.
enum class Inverse {
  kSlice,           // slice_scatter
  kSelect,          // select_scatter
  kDiagonal,        // diagonal_scatter
  kAsStrided,       // as_strided_scatter with the recorded geometry
  kReshape,         // view/squeeze/unsqueeze: the same elements in row-major order
  kTranspose,       // transpose back
  kTranspose2d,     // t() is its own inverse
  kPermute,         // the inverse permutation
  kAlias,           // alias/detach: the view is the base
  kDtype,           // view(dtype): reinterpret back to the base's dtype
  kViewAsReal,      // view_as_real: view_as_complex
  kViewAsComplex,   // view_as_complex: view_as_real
  kSplit,           // piece `out_index` of split: slice_scatter
  kSplitWithSizes,  // piece `out_index` of split_with_sizes: slice_scatter
  kUnbind,          // piece `out_index` of unbind: select_scatter
  kGeometry,        // anything else: as_strided_scatter with the view's measured geometry
  kExpand,          // expand: the written copy of each element (expand_fold.h)
  kConj,            // _conj (the conjugate bit): conjugate back
  kNeg,             // _neg_view (the negative bit): negate back
};

// What replaying and inverting one view op takes, read once per op.
struct ViewOp {
  c10::OperatorHandle op;                   // replayed with reapply_views
  std::optional<c10::OperatorHandle> copy;  // its `*_copy` variant, otherwise
  size_t num_args;                          // leading arguments `op` takes
  bool multi_output;                        // returns Tensor[] (split, unbind)
  Inverse inverse;
  std::string name;
};

const ViewOp& view_op(const c10::OperatorHandle& op);

class ViewRecord {
 public:
  // `args` is the op's full boxed argument list; slot 0 (self) is not kept.
  // `offset_origin` (as_strided of an alias group's base only): the storage
  // offset of the base's value the offset in `args` was computed against. The
  // base's later values (functional results) need not sit at that offset; the
  // view is replayed at the same distance from theirs.
  ViewRecord(const c10::OperatorHandle& op, std::vector<c10::IValue> args, int64_t out_index,
             std::optional<c10::SymInt> offset_origin = std::nullopt);

  // The view of `base`; as a real view when `reapply_views`, else via `<op>_copy`.
  at::Tensor forward(const at::Tensor& base, bool reapply_views) const;
  // Every output of a multi-output view op (split, unbind), in order.
  std::vector<at::Tensor> forward_all(const at::Tensor& base, bool reapply_views) const;
  // The new base after `mutated_view` (a value for this view of `base`) was written.
  // `fold` says how the copies of an element combine in a write through expand;
  // `written_complex`, whether the tensor the program wrote is complex (unflip).
  at::Tensor reverse(const at::Tensor& base, const at::Tensor& mutated_view, bool reapply_views,
                     CopiesFold fold, bool written_complex) const;

  bool is_as_strided() const { return op_->inverse == Inverse::kAsStrided; }
  // reverse() scatters into the base by logical index (slice_scatter and kin).
  bool scatters_by_index() const;
  // A write through the view folds back by scattering the view's elements
  // into the base at their places (as_strided_scatter).
  bool folds_by_scatter() const {
    return op_->inverse == Inverse::kAsStrided || op_->inverse == Inverse::kGeometry;
  }
  // The view shows the base's values changed (conjugated or negated), not
  // just some of its elements.
  bool flips_values() const { return op_->inverse == Inverse::kConj || op_->inverse == Inverse::kNeg; }
  bool conjugates() const { return op_->inverse == Inverse::kConj; }
  // The view shows elements of its base in the base's dtype, each at most
  // once where the base shows it once (possibly negated or conjugated): its
  // geometry, measured on the base, says where a write through it lands.
  bool keeps_elements() const;
  // `value` (written through this view) as its base shows it: negated back
  // for _neg_view, conjugated back for _conj, unchanged for other views.
  // `written_complex`: whether the tensor the program wrote (this view, or a
  // view_as_real / view_as_complex of it further down the chain) is complex,
  // the dtype eager negates in.
  at::Tensor unflip(const at::Tensor& value, bool written_complex, bool reapply_views) const;
  at::Tensor unflip(const at::Tensor& value) const { return unflip(value, value.is_complex(), true); }
  // unflip() of a written view, keeping the base's bits where the write left
  // an element alone (see view_record.cpp).
  at::Tensor unflip_written(const at::Tensor& base, const at::Tensor& mutated_view, bool written_complex,
                            bool reapply_views) const;
  const std::string& op_name() const { return op_->name; }

 private:
  at::Tensor reshape_back(const at::Tensor& base, const at::Tensor& mutated_view, bool reapply_views) const;
  at::Tensor scatter_by_geometry(const at::Tensor& base, const at::Tensor& mutated_view,
                                 CopiesFold fold) const;
  c10::IValue call(const at::Tensor& base, bool reapply_views) const;
  // as_strided's storage offset on `base`.
  std::optional<c10::SymInt> as_strided_offset(const at::Tensor& base) const;

 public:
  // as_strided only: the storage elements of `base` the view reaches up to.
  c10::SymInt as_strided_extent(const at::Tensor& base) const;
  // as_strided only: whether the view provably stays within `base`'s storage
  // (true where that cannot be decided: a symbolic storage size, unless
  // `own_elements_only`: `base` is a value that holds its elements and no more,
  // a *_copy view's result or a written input's value with *_copy views).
  bool within_storage(const at::Tensor& base, bool own_elements_only) const;

 private:
  at::Tensor slice_piece_back(const at::Tensor& base, const at::Tensor& mutated_view, c10::SymInt start,
                              c10::SymInt length) const;

  const ViewOp* op_;
  std::vector<c10::IValue> args_;
  int64_t out_index_;
  std::optional<c10::SymInt> offset_origin_;
};

using ViewChain = std::vector<std::shared_ptr<const ViewRecord>>;

// The bits a chain leaves set on its last tensor: each conjugating or
// negating view flips one (an even number of flips leaves it clear).
struct ValueFlips {
  bool negated = false;
  bool conjugated = false;
};
ValueFlips value_flips(const ViewChain& views);

// Where a write through `views` can fold back in one step: the first view
// that folds by scatter (unfold, as_strided, ...), not the last one, after
// which every view keeps_elements(). The write then scatters into that level
// at the geometry of the whole rest of the chain, instead of through each
// view in turn (which needs the scatter level to be injective: overlapping
// unfold windows would write the unchanged copies back too). views.size()
// where there is none.
size_t direct_fold_level(const ViewChain& views);

// Where `views` land inside `base`'s storage: the chain replayed (as real
// views) on a dataless meta tensor with `base`'s layout. No data is touched and
// Python keys are excluded, so no proxy/fake mode records it.
at::Tensor measure_on_meta(const at::Tensor& base, const ViewChain& views);

// `base` to scatter into by index: itself, or a compact copy where it views
// its storage (`storage_root`'s) as wider elements than the storage holds.
at::Tensor whole_elements_base(const at::Tensor& base, const at::Tensor& storage_root);

}  // namespace fxinplace::functionalize
