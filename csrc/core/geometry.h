// Tensor geometry (sizes, strides, storage offset) and the few view replays the
// re-inplacing planner needs to recognise a `*_scatter` as the inverse of a view.
#pragma once

#include <cstdint>
#include <optional>
#include <unordered_map>
#include <vector>

#include "extent.h"

namespace fxinplace::core {

// Where a tensor's elements live in its storage. Any extent may be symbolic;
// every query then answers cautiously (may overlap, has internal overlap, not
// the same elements) unless the answer follows from the symbols' identity.
struct Geometry {
  std::vector<Extent> sizes;
  std::vector<Extent> strides;
  Extent offset = 0;
  // Only read when some extent is symbolic: when the frontend proved the
  // tensor non-overlapping and dense for every value of its symbols (a
  // contiguous allocation of dynamic size, say), its dims from the innermost
  // out, leaving out dims of size 1. Known geometries are judged here.
  std::optional<std::vector<int32_t>> proven_dense_order;

  bool operator==(const Geometry& other) const {
    return offset == other.offset && sizes == other.sizes && strides == other.strides;
  }
  bool operator!=(const Geometry& other) const { return !(*this == other); }
  bool is_known() const;
  // nullopt when a size is symbolic or the product overflows.
  std::optional<Int> numel() const;
  // Same elements at the same positions: equal sizes and offset, and equal
  // strides wherever a dim may have more than one element (a size-1 dim's
  // stride never moves the address).
  bool same_elements(const Geometry& other) const;
  // False only when the two certainly touch no common element (disjoint
  // address ranges, as ATen's own overlap check decides it).
  bool may_overlap(const Geometry& other) const;
  // True unless every index provably addresses its own element. Writing an
  // overlapping tensor in place is unsound.
  bool has_internal_overlap() const;
  // Every element of this tensor is one of `other`'s (by address). False
  // unless proven: with symbolic extents, only for the same elements.
  bool elements_within(const Geometry& other) const;
  // ATen's notion: the elements tile one block of memory with no gaps or
  // repeats (size-1 dims and their strides do not matter).
  bool non_overlapping_and_dense() const;
  // For a dense tensor, its dims from the innermost out (size-1 dims left
  // out); nullopt when it is not (or not provably) dense.
  std::optional<std::vector<int32_t>> dense_dim_order() const;
  // Same sizes and the same strides wherever a dim may hold more than one
  // element; the offset does not matter. Two dense tensors of equal sizes and
  // dim order qualify even when their symbolic strides are written differently.
  bool same_layout(const Geometry& other) const;
};

using GeomId = int32_t;
constexpr GeomId kNoGeom = -1;

// Interns geometries so equality is an integer compare in the planner's hot loop.
class GeometryTable {
 public:
  GeomId intern(const Geometry& g);
  GeomId lookup(const Geometry& g) const {
    auto it = ids_.find(g);
    return it == ids_.end() ? kNoGeom : it->second;
  }
  const Geometry& at(GeomId id) const { return geoms_[static_cast<size_t>(id)]; }
  size_t size() const { return geoms_.size(); }

 private:
  struct Hash {
    size_t operator()(const Geometry& g) const;
  };
  std::vector<Geometry> geoms_;
  std::unordered_map<Geometry, GeomId, Hash> ids_;
};

// Which view a `*_scatter` op inverts, with the view's integer arguments
// normalised to the order of the view op's schema.
enum class ScatterKind : uint8_t { kNone, kSelect, kSlice, kDiagonal, kAsStrided };

struct ScatterSpec {
  ScatterKind kind = ScatterKind::kNone;
  // select: {dim, index}; slice: {dim, start, end, step} (start/end may be
  // kUnset); diagonal: {offset, dim1, dim2}; as_strided: {offset or kUnset}
  // plus `sizes`/`strides` below.
  std::vector<Int> ints;
  std::vector<Int> sizes;
  std::vector<Int> strides;
  // The geometry the view has on the scatter's own `self` as recorded, when
  // the frontend worked it out (it does for symbolic bases, where the replays
  // below cannot): exact for that base geometry only.
  std::optional<Geometry> view_on_recorded_base;
  // False when an argument is only known at run time (a SymInt): the view
  // cannot be replayed, so the scatter never counts as its inverse.
  bool replayable = false;
  static constexpr Int kUnset = INT64_MIN;
};

// All three below work on known geometries only and answer nullopt otherwise.
//
// `view` was taken of a tensor laid out as `old_base`; the same logical view
// of the same logical tensor laid out as `new_base`. Works for views that are
// strided index maps (select, slice, permute, diagonal, expand, ...) of a
// dense `old_base`: each of the view's strides and its offset are decomposed
// into index steps of `old_base`, then re-composed with `new_base`'s strides.
std::optional<Geometry> relocate_view(const Geometry& view, const Geometry& old_base,
                                      const Geometry& new_base);

// Strides `aten::view` gives `tensor` reshaped to `new_sizes` without copying,
// or nullopt where such a view is impossible or cannot be proven possible.
std::optional<std::vector<Extent>> reshape_strides(const Geometry& tensor,
                                                   const std::vector<Extent>& new_sizes);

// The geometry the view op named by `spec` produces on `base`, or nothing if the
// arguments are out of range for it (the view op would raise).
std::optional<Geometry> replay_view(const ScatterSpec& spec, const Geometry& base);

}  // namespace fxinplace::core
