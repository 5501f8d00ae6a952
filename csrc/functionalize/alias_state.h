// State shared by every functional tensor that aliases one storage: the
// current (unwrapped) base value and the writes to it that have not been
// folded in yet. Writes are queued and applied lazily, on the next read
// (`base()`), so a run of writes through views costs one replay.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Storage.h>

#include <cstdint>
#include <vector>

#include "functionalize/view_record.h"

namespace fxinplace::functionalize {

class InputAliasSet;

class AliasState {
 public:
  explicit AliasState(at::Tensor base);

  // The region the alias group was made in (see region.h).
  uint64_t region() const { return region_; }

  // Bumped by every write; an alias whose value was computed at an older
  // generation must be regenerated from `base()` before it is read.
  uint64_t generation() const { return generation_; }
  // True once any alias of the storage was written (inputs need a copy back).
  bool mutated() const { return mutated_; }
  // Some write happened with autograd recording (grad mode on): the input's
  // write-back records it too. Writes under torch.no_grad() (an optimizer's
  // update of its parameters) are written back without it, as eager made them.
  bool written_with_grad() const { return written_with_grad_; }
  // A tensor that requires grad was written under torch.no_grad(): eager keeps
  // it the same autograd leaf, but its functional value is a new tensor that
  // autograd does not connect to it, so reading it with grad mode on would
  // lose its gradients (see fallback.cpp, unwrap_arguments).
  bool detached_from_autograd() const { return detached_from_autograd_; }

  // `new_value` is the value the alias reached through `views` now holds.
  void add_update(at::Tensor new_value, const ViewChain& views, const c10::OperatorName& writer,
                  CopiesFold fold = CopiesFold::kWrittenCopy);
  // The base takes a new value of the same geometry (a custom op's result).
  void set_base(at::Tensor new_base);
  // The base takes a new value of another shape or layout (resize_, out=
  // resizing). The layouts are meta tensors with eager's geometry of the base
  // before and after; aliases made before keep their place in the storage.
  void replace_base(at::Tensor new_base, at::Tensor old_layout, at::Tensor new_layout);

  // How often replace_base ran: aliases made at an older version address the
  // storage through a base layout that is gone.
  uint64_t base_version() const { return retired_layouts_.size(); }
  // Eager's layout of the base during `version` (< base_version()).
  const at::Tensor& retired_layout(uint64_t version) const { return retired_layouts_.at(version); }
  // Eager's geometry of the base where it is known (an input, a result of a
  // pure op; a meta tensor, undefined otherwise), whatever layout its current
  // value has.
  const at::Tensor& eager_geometry() const { return eager_geometry_; }
  // Each time replace_base ran after something was written: eager's layout
  // the base left (a meta tensor) and its value then, every write applied,
  // oldest first. What eager's memory at those layouts holds after a resize
  // shrank the base off some of it (random pipelines seed 178149: x written
  // whole by an out= resize to (1, n*n), then resized by another to 4 of
  // those elements).
  struct LeftBehind {
    at::Tensor layout;
    at::Tensor value;
  };
  const std::vector<LeftBehind>& left_behind() const { return left_behind_; }
  // Eager's layout of the current base, as a meta tensor: the one
  // replace_base gave it, else its eager geometry where known, else the base
  // value's own geometry.
  at::Tensor eager_base_layout() const;

  // The base's value as last stored (queued writes not applied): for its
  // geometry.
  const at::Tensor& base_value() const { return base_; }
  // The base with every queued write applied.
  const at::Tensor& base(bool reapply_views);
  // The base is laid out as in eager (an input of the function), not as a
  // functional op happened to lay its result out.
  // (As long as the base's value keeps the geometry it had then: a write may
  // give it another, a scatter's clone of a base with gaps is contiguous.)
  bool eager_layout() const;
  void mark_eager_layout();
  // Whether a value of this group holds only its own elements, not the
  // storage around them (which as_strided may address): with *_copy views
  // every value but an unwritten input's, read at the base itself; with views
  // kept, the base's value once written (a functional op's result, whose
  // storage ends with its last element: random pipelines seed 186315, an
  // input with a gap after its elements, written, then as_strided into the
  // gap under a symbolic trace).
  bool holds_own_elements_only(bool reapply_views, bool at_base) const {
    if (reapply_views) return at_base && mutated_;
    return !(at_base && eager_layout());
  }
  // Eager lays the base out as `geometry` (a meta tensor of its sizes), which
  // its value may not be (see rehearse_results_on_meta).
  void set_eager_geometry(at::Tensor geometry) { eager_geometry_ = std::move(geometry); }
  // Shared, dataless: makes untyped_storage() identical across aliases.
  const c10::Storage& storage() const { return storage_; }
  // Inputs sharing one storage start as groups of their own that take one
  // storage identity (see input_alias_set.h).
  void share_storage(c10::Storage storage) { storage_ = std::move(storage); }
  void set_region(uint64_t region) { region_ = region; }
  const std::shared_ptr<InputAliasSet>& input_set() const { return input_set_; }
  void set_input_set(std::shared_ptr<InputAliasSet> set) { input_set_ = std::move(set); }
  // This group was joined into `to`, its base the view of `to`'s base at
  // `layout` (eager's geometry, a meta tensor): its tensors follow it there
  // (FunctionalTensorImpl::follow_move) when next used.
  void move_to(std::shared_ptr<AliasState> to, at::Tensor layout) {
    moved_to_ = std::move(to);
    moved_layout_ = std::move(layout);
  }
  const std::shared_ptr<AliasState>& moved_to() const { return moved_to_; }
  const at::Tensor& moved_layout() const { return moved_layout_; }

 private:
  struct Update {
    at::Tensor value;
    ViewChain views;
    CopiesFold fold;
    // The view whose input the write scatters into directly (direct_fold_level);
    // views.size() to fold back through every view.
    size_t direct_level;
  };

  // Where the write folds back directly (see Update), checking that folding
  // through the other views keeps every write.
  size_t plan_fold(const ViewChain& views, const c10::OperatorName& writer, CopiesFold fold) const;

  at::Tensor base_;
  std::vector<Update> pending_;
  uint64_t generation_ = 0;
  bool mutated_ = false;
  uint64_t region_;
  std::vector<at::Tensor> retired_layouts_;
  std::vector<LeftBehind> left_behind_;
  at::Tensor current_layout_;
  c10::Storage storage_;
  at::Tensor eager_geometry_;  // meta: the base's eager geometry, where known
  bool written_with_grad_ = false;
  bool detached_from_autograd_ = false;
  std::shared_ptr<InputAliasSet> input_set_;
  std::shared_ptr<AliasState> moved_to_;
  at::Tensor moved_layout_;
};

}  // namespace fxinplace::functionalize
