#include "geometry.h"

#include <algorithm>
#include <unordered_set>

namespace fxinplace::core {

namespace {

// A geometry whose extents are all known: the form the arithmetic below works
// on. Every sum and product is overflow-checked; an overflow makes the caller
// give its cautious answer, as a symbolic extent would.
struct Known {
  std::vector<Int> sizes;
  std::vector<Int> strides;
  Int offset = 0;
};

std::optional<Known> known(const Geometry& g) {
  Known k;
  k.sizes.reserve(g.sizes.size());
  k.strides.reserve(g.strides.size());
  for (const Extent& e : g.sizes) {
    if (!e.is_known()) return std::nullopt;
    k.sizes.push_back(e.value());
  }
  for (const Extent& e : g.strides) {
    if (!e.is_known()) return std::nullopt;
    k.strides.push_back(e.value());
  }
  if (!g.offset.is_known()) return std::nullopt;
  k.offset = g.offset.value();
  return k;
}

Geometry from_known(const Known& k) {
  Geometry g;
  g.sizes.assign(k.sizes.begin(), k.sizes.end());
  g.strides.assign(k.strides.begin(), k.strides.end());
  g.offset = k.offset;
  return g;
}

std::optional<Int> product(const std::vector<Int>& values) {
  Int n = 1;
  for (Int v : values) {
    auto next = checked_mul(n, v);
    if (!next) return std::nullopt;
    n = *next;
  }
  return n;
}

// The furthest address the tensor reaches, or nullopt on overflow.
std::optional<Int> last_address(const Known& g) {
  Int end = g.offset;
  for (size_t d = 0; d < g.sizes.size(); ++d) {
    auto step = checked_mul(g.sizes[d] - 1, g.strides[d]);
    auto next = step ? checked_add(end, *step) : std::nullopt;
    if (!next) return std::nullopt;
    end = *next;
  }
  return end;
}

// Calls `visit` with every element's address. Only for small tensors whose
// addresses are known to fit (checked by last_address before).
template <typename Visit>
void for_each_address(const Known& g, Int numel, Visit visit) {
  std::vector<Int> index(g.sizes.size(), 0);
  for (Int k = 0; k < numel; ++k) {
    Int address = g.offset;
    for (size_t d = 0; d < g.sizes.size(); ++d) address += index[d] * g.strides[d];
    visit(address);
    for (size_t d = g.sizes.size(); d-- > 0;) {
      if (++index[d] < g.sizes[d]) break;
      index[d] = 0;
    }
  }
}

bool known_non_overlapping_and_dense(const Known& g) {
  std::vector<size_t> dims;
  for (size_t d = 0; d < g.sizes.size(); ++d) {
    if (g.sizes[d] == 0) return true;
    if (g.sizes[d] > 1) dims.push_back(d);
  }
  std::sort(dims.begin(), dims.end(), [&g](size_t a, size_t b) { return g.strides[a] < g.strides[b]; });
  Int expected = 1;
  for (size_t d : dims) {
    if (g.strides[d] != expected) return false;
    auto next = checked_mul(expected, g.sizes[d]);
    if (!next) return false;
    expected = *next;
  }
  return true;
}

bool known_has_internal_overlap(const Known& g) {
  auto n = product(g.sizes);
  if (!n) return true;
  if (*n == 0) return false;
  // Sorted by stride, each dim must step past everything the smaller dims
  // reach; otherwise two indices may share an element (expand's stride 0, or
  // as_strided((3, 3), (1, 1)), which ATen itself only calls "too hard").
  std::vector<size_t> dims;
  for (size_t d = 0; d < g.sizes.size(); ++d)
    if (g.sizes[d] > 1) dims.push_back(d);
  std::sort(dims.begin(), dims.end(), [&g](size_t a, size_t b) { return g.strides[a] < g.strides[b]; });
  Int reach = 0;
  for (size_t d : dims) {
    if (g.strides[d] <= reach) return true;
    auto step = checked_mul(g.sizes[d] - 1, g.strides[d]);
    auto next = step ? checked_add(reach, *step) : std::nullopt;
    if (!next) return true;
    reach = *next;
  }
  return false;
}

bool known_may_overlap(const Known& a, const Known& b) {
  auto na = product(a.sizes);
  auto nb = product(b.sizes);
  if (!na || !nb) return true;
  if (*na == 0 || *nb == 0) return false;
  for (const Known* g : {&a, &b})
    for (Int s : g->strides)
      if (s < 0) return true;
  auto last_a = last_address(a);
  auto last_b = last_address(b);
  if (!last_a || !last_b) return true;
  if (a.offset > *last_b || b.offset > *last_a) return false;
  // Interleaved ranges (a column and a scalar of the same matrix, say): for
  // small tensors, compare the addresses themselves.
  constexpr Int kMaxEnumerated = 1 << 16;
  if (*na > kMaxEnumerated || *nb > kMaxEnumerated - *na) return true;
  std::unordered_set<Int> mine;
  for_each_address(a, *na, [&mine](Int address) { mine.insert(address); });
  bool hit = false;
  for_each_address(b, *nb, [&mine, &hit](Int address) { hit = hit || mine.count(address) > 0; });
  return hit;
}

}  // namespace

bool Geometry::is_known() const {
  auto known_extent = [](const Extent& e) { return e.is_known(); };
  return offset.is_known() && std::all_of(sizes.begin(), sizes.end(), known_extent) &&
         std::all_of(strides.begin(), strides.end(), known_extent);
}

std::optional<Int> Geometry::numel() const {
  if (std::any_of(sizes.begin(), sizes.end(), [](const Extent& s) { return s.is(0); })) return 0;
  Int n = 1;
  for (const Extent& s : sizes) {
    if (!s.is_known()) return std::nullopt;
    auto next = checked_mul(n, s.value());
    if (!next) return std::nullopt;
    n = *next;
  }
  return n;
}

bool Geometry::same_elements(const Geometry& other) const {
  if (sizes != other.sizes) return false;
  if (numel() == Int{0}) return true;
  if (offset != other.offset) return false;
  for (size_t d = 0; d < sizes.size(); ++d)
    if (!sizes[d].is(1) && strides[d] != other.strides[d]) return false;
  return true;
}

bool Geometry::elements_within(const Geometry& other) const {
  if (same_elements(other)) return true;
  auto a = known(*this);
  auto b = known(other);
  if (!a || !b) return false;
  auto na = product(a->sizes);
  auto nb = product(b->sizes);
  if (!na || !nb) return false;
  if (*na == 0) return true;
  // An empty tensor has no elements to hold another's, whatever its
  // geometry's range says ((1, 8, 0) with strides (8, 1, 1) "spans" 0..6;
  // random pipelines seed 132776: as_strided of such a view reads 2 elements).
  if (*nb == 0) return false;
  auto negative = [](const Known& k) {
    return std::any_of(k.strides.begin(), k.strides.end(), [](Int s) { return s < 0; });
  };
  auto last_a = last_address(*a);
  auto last_b = last_address(*b);
  if (negative(*a) || negative(*b) || !last_a || !last_b) return false;
  // A dense tensor is one block of addresses: a range test.
  if (known_non_overlapping_and_dense(*b)) return a->offset >= b->offset && *last_a <= *last_b;
  constexpr Int kMaxEnumerated = Int{1} << 16;
  if (*na > kMaxEnumerated || *nb > kMaxEnumerated) return false;
  std::unordered_set<Int> theirs;
  for_each_address(*b, *nb, [&](Int address) { theirs.insert(address); });
  bool within = true;
  for_each_address(*a, *na, [&](Int address) { within = within && theirs.count(address) > 0; });
  return within;
}

bool Geometry::non_overlapping_and_dense() const {
  auto k = known(*this);
  return k ? known_non_overlapping_and_dense(*k) : proven_dense_order.has_value();
}

std::optional<std::vector<int32_t>> Geometry::dense_dim_order() const {
  auto k = known(*this);
  if (!k) return proven_dense_order;
  if (!known_non_overlapping_and_dense(*k)) return std::nullopt;
  std::vector<int32_t> dims;
  for (size_t d = 0; d < k->sizes.size(); ++d)
    if (k->sizes[d] != 1) dims.push_back(static_cast<int32_t>(d));
  std::stable_sort(dims.begin(), dims.end(), [&k](int32_t a, int32_t b) {
    return k->strides[static_cast<size_t>(a)] < k->strides[static_cast<size_t>(b)];
  });
  return dims;
}

bool Geometry::same_layout(const Geometry& other) const {
  if (sizes != other.sizes) return false;
  Geometry here = *this;
  here.offset = other.offset;
  if (here.same_elements(other)) return true;
  if (numel() == Int{0}) return true;
  auto mine = dense_dim_order();
  auto theirs = other.dense_dim_order();
  return mine && theirs && *mine == *theirs;
}

bool Geometry::may_overlap(const Geometry& other) const {
  if (numel() == Int{0} || other.numel() == Int{0}) return false;
  auto a = known(*this);
  auto b = known(other);
  return !a || !b || known_may_overlap(*a, *b);
}

bool Geometry::has_internal_overlap() const {
  auto k = known(*this);
  if (!k) return numel() != Int{0} && !proven_dense_order.has_value();
  return known_has_internal_overlap(*k);
}

size_t GeometryTable::Hash::operator()(const Geometry& g) const {
  size_t h = g.offset.hash();
  auto mix = [&h](size_t v) { h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2); };
  for (const Extent& s : g.sizes) mix(s.hash());
  mix(0x51ed);
  for (const Extent& s : g.strides) mix(s.hash());
  return h;
}

GeomId GeometryTable::intern(const Geometry& g) {
  auto it = ids_.find(g);
  if (it != ids_.end()) return it->second;
  auto id = static_cast<GeomId>(geoms_.size());
  geoms_.push_back(g);
  ids_.emplace(g, id);
  return id;
}

namespace {

std::optional<Int> wrap_dim(Int dim, size_t rank) {
  auto r = static_cast<Int>(rank);
  if (dim < -r || dim >= r) return std::nullopt;
  return dim < 0 ? dim + r : dim;
}

// base.offset + index * base.strides[dim], or nullopt on overflow.
std::optional<Int> offset_at(const Known& base, size_t dim, Int index) {
  auto step = checked_mul(index, base.strides[dim]);
  return step ? checked_add(base.offset, *step) : std::nullopt;
}

std::optional<Known> replay_select(const std::vector<Int>& a, const Known& base) {
  auto dim = wrap_dim(a[0], base.sizes.size());
  if (!dim) return std::nullopt;
  auto d = static_cast<size_t>(*dim);
  Int size = base.sizes[d];
  Int index = a[1] < 0 ? a[1] + size : a[1];
  if (index < 0 || index >= size) return std::nullopt;
  auto offset = offset_at(base, d, index);
  if (!offset) return std::nullopt;
  Known g;
  g.offset = *offset;
  for (size_t k = 0; k < base.sizes.size(); ++k) {
    if (k == d) continue;
    g.sizes.push_back(base.sizes[k]);
    g.strides.push_back(base.strides[k]);
  }
  return g;
}

// Mirrors ATen's slice: missing bounds mean the whole dim, negative bounds count
// from the end, and out-of-range bounds are clamped rather than rejected.
std::optional<Known> replay_slice(const std::vector<Int>& a, const Known& base) {
  auto dim = wrap_dim(a[0], base.sizes.size());
  Int step = a[3];
  if (!dim || step <= 0) return std::nullopt;
  auto d = static_cast<size_t>(*dim);
  Int size = base.sizes[d];
  Int start = a[1] == ScatterSpec::kUnset ? 0 : a[1];
  Int end = a[2] == ScatterSpec::kUnset ? size : a[2];
  if (start < 0) start = start < -size ? 0 : start + size;
  if (end < 0) end = end < -size ? 0 : end + size;
  start = std::clamp<Int>(start, 0, size);
  end = std::clamp<Int>(end, start, size);
  auto offset = offset_at(base, d, start);
  auto stride = checked_mul(base.strides[d], step);
  if (!offset || !stride) return std::nullopt;
  Known g = base;
  g.offset = *offset;
  g.sizes[d] = (end - start) / step + ((end - start) % step != 0);
  g.strides[d] = *stride;
  return g;
}

std::optional<Known> replay_diagonal(const std::vector<Int>& a, const Known& base) {
  auto d1 = wrap_dim(a[1], base.sizes.size());
  auto d2 = wrap_dim(a[2], base.sizes.size());
  if (!d1 || !d2 || *d1 == *d2) return std::nullopt;
  auto i1 = static_cast<size_t>(*d1);
  auto i2 = static_cast<size_t>(*d2);
  Int offset = a[0];
  if (offset == INT64_MIN) return std::nullopt;
  Int len = 0;
  Known g;
  g.offset = base.offset;
  std::optional<Int> moved = base.offset;
  if (offset >= 0) {
    len = std::max<Int>(std::min(base.sizes[i1], base.sizes[i2] - std::min(offset, base.sizes[i2])), 0);
    if (len > 0) moved = offset_at(base, i2, offset);
  } else {
    len = std::max<Int>(std::min(base.sizes[i1] - std::min(-offset, base.sizes[i1]), base.sizes[i2]), 0);
    if (len > 0) moved = offset_at(base, i1, -offset);
  }
  auto diagonal_stride = checked_add(base.strides[i1], base.strides[i2]);
  if (!moved || !diagonal_stride) return std::nullopt;
  g.offset = *moved;
  for (size_t d = 0; d < base.sizes.size(); ++d) {
    if (d == i1 || d == i2) continue;
    g.sizes.push_back(base.sizes[d]);
    g.strides.push_back(base.strides[d]);
  }
  g.sizes.push_back(len);
  g.strides.push_back(*diagonal_stride);
  return g;
}

std::optional<Known> replay_as_strided(const ScatterSpec& s, const Known& base) {
  if (s.sizes.size() != s.strides.size()) return std::nullopt;
  Known g;
  g.sizes = s.sizes;
  g.strides = s.strides;
  g.offset = s.ints.empty() || s.ints[0] == ScatterSpec::kUnset ? base.offset : s.ints[0];
  for (Int v : g.sizes)
    if (v < 0) return std::nullopt;
  return g;
}

// Writes `amount` (an element distance in `base`) as index steps per dim of a
// dense `base`, largest stride first; nullopt if it is not such a combination.
std::optional<std::vector<Int>> index_steps(Int amount, const Known& base, const std::vector<size_t>& order,
                                            bool bounded) {
  std::vector<Int> steps(base.sizes.size(), 0);
  for (size_t d : order) {
    Int step = amount / base.strides[d];
    if (bounded && step >= base.sizes[d]) return std::nullopt;
    steps[d] = step;
    amount -= step * base.strides[d];
  }
  if (amount != 0) return std::nullopt;
  return steps;
}

// sum(steps[d] * strides[d]), or nullopt on overflow.
std::optional<Int> recompose(const std::vector<Int>& steps, const std::vector<Int>& strides) {
  Int total = 0;
  for (size_t d = 0; d < steps.size(); ++d) {
    auto term = checked_mul(steps[d], strides[d]);
    auto next = term ? checked_add(total, *term) : std::nullopt;
    if (!next) return std::nullopt;
    total = *next;
  }
  return total;
}

std::optional<Known> relocate_known(const Known& view, const Known& old_base, const Known& new_base) {
  if (old_base.sizes != new_base.sizes) return std::nullopt;
  if (!last_address(old_base) || !last_address(new_base) || !last_address(view)) return std::nullopt;
  std::vector<size_t> order;
  for (size_t d = 0; d < old_base.sizes.size(); ++d)
    if (old_base.sizes[d] > 1) order.push_back(d);
  std::sort(order.begin(), order.end(),
            [&old_base](size_t a, size_t b) { return old_base.strides[a] > old_base.strides[b]; });
  // Greedy decomposition is exact when each stride exceeds the furthest
  // reach of all smaller ones (true for dense tensors and for strided,
  // gappy ones without overlap). last_address above bounds every sum here.
  Int reach_below = 0;
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    if (old_base.strides[*it] <= reach_below) return std::nullopt;
    reach_below += (old_base.sizes[*it] - 1) * old_base.strides[*it];
  }
  Int delta = view.offset - old_base.offset;
  if (delta < 0) return std::nullopt;
  auto start = index_steps(delta, old_base, order, /*bounded=*/true);
  if (!start) return std::nullopt;
  Known moved = view;
  auto start_offset = recompose(*start, new_base.strides);
  auto offset = start_offset ? checked_add(new_base.offset, *start_offset) : std::nullopt;
  if (!offset) return std::nullopt;
  moved.offset = *offset;
  // The furthest index reached along each base dim: if a view dim would run
  // past a base dim (a reshape merging dims), the map is not one stride per
  // view dim on other layouts.
  std::vector<Int> reach = *start;
  for (size_t k = 0; k < view.sizes.size(); ++k) {
    if (view.sizes[k] <= 1) continue;
    if (view.strides[k] < 0) return std::nullopt;
    auto steps = index_steps(view.strides[k], old_base, order, /*bounded=*/false);
    if (!steps) return std::nullopt;
    auto stride = recompose(*steps, new_base.strides);
    if (!stride) return std::nullopt;
    moved.strides[k] = *stride;
    for (size_t d = 0; d < steps->size(); ++d) {
      auto walked = checked_mul(view.sizes[k] - 1, (*steps)[d]);
      auto next = walked ? checked_add(reach[d], *walked) : std::nullopt;
      if (!next) return std::nullopt;
      reach[d] = *next;
    }
  }
  for (size_t d = 0; d < reach.size(); ++d)
    if (reach[d] >= std::max<Int>(old_base.sizes[d], 1)) return std::nullopt;
  return moved;
}

// Old dims are grouped into runs that are contiguous with each other; each
// run must be rebuilt exactly by a run of new dims, which then step through
// it with the run's innermost stride. Size-1 new dims fit anywhere.
std::optional<std::vector<Int>> reshape_known(const std::vector<Int>& sizes, const std::vector<Int>& strides,
                                              const std::vector<Int>& new_sizes) {
  std::vector<Int> out(new_sizes.size(), 1);
  auto numel = product(sizes);
  auto new_numel = product(new_sizes);
  if (!numel || !new_numel || *numel != *new_numel) return std::nullopt;
  if (!last_address(Known{sizes, strides, 0})) return std::nullopt;
  if (*numel == 0 || sizes.empty()) {
    Int stride = 1;
    for (size_t d = new_sizes.size(); d-- > 0;) {
      out[d] = stride;
      auto next = checked_mul(stride, std::max<Int>(new_sizes[d], 1));
      if (!next) return std::nullopt;
      stride = *next;
    }
    return out;
  }
  // Every product below divides numel times a stride bounded by last_address,
  // so none overflows.
  auto view_d = static_cast<std::ptrdiff_t>(new_sizes.size()) - 1;
  Int run_stride = strides.back();
  Int run_numel = 1;
  Int built = 1;
  for (auto d = static_cast<std::ptrdiff_t>(sizes.size()) - 1; d >= 0; --d) {
    run_numel *= sizes[static_cast<size_t>(d)];
    bool run_ends = d == 0 || (sizes[static_cast<size_t>(d - 1)] != 1 &&
                               strides[static_cast<size_t>(d - 1)] != run_numel * run_stride);
    if (!run_ends) continue;
    while (view_d >= 0 && (built < run_numel || new_sizes[static_cast<size_t>(view_d)] == 1)) {
      out[static_cast<size_t>(view_d)] = built * run_stride;
      built *= new_sizes[static_cast<size_t>(view_d)];
      --view_d;
    }
    if (built != run_numel) return std::nullopt;
    if (d > 0) {
      run_stride = strides[static_cast<size_t>(d - 1)];
      run_numel = 1;
      built = 1;
    }
  }
  if (view_d != -1) return std::nullopt;
  return out;
}

}  // namespace

std::optional<Geometry> relocate_view(const Geometry& view, const Geometry& old_base,
                                      const Geometry& new_base) {
  auto v = known(view);
  auto o = known(old_base);
  auto n = known(new_base);
  if (!v || !o || !n) return std::nullopt;
  auto moved = relocate_known(*v, *o, *n);
  if (!moved) return std::nullopt;
  return from_known(*moved);
}

std::optional<std::vector<Extent>> reshape_strides(const Geometry& tensor,
                                                   const std::vector<Extent>& new_sizes) {
  auto t = known(tensor);
  std::vector<Int> sizes;
  for (const Extent& e : new_sizes) {
    if (!e.is_known()) return std::nullopt;
    sizes.push_back(e.value());
  }
  if (!t) return std::nullopt;
  auto strides = reshape_known(t->sizes, t->strides, sizes);
  if (!strides) return std::nullopt;
  return std::vector<Extent>(strides->begin(), strides->end());
}

std::optional<Geometry> replay_view(const ScatterSpec& spec, const Geometry& base) {
  if (!spec.replayable) return std::nullopt;
  auto b = known(base);
  if (!b) return std::nullopt;
  std::optional<Known> g;
  switch (spec.kind) {
    case ScatterKind::kSelect:
      if (spec.ints.size() == 2) g = replay_select(spec.ints, *b);
      break;
    case ScatterKind::kSlice:
      if (spec.ints.size() == 4) g = replay_slice(spec.ints, *b);
      break;
    case ScatterKind::kDiagonal:
      if (spec.ints.size() == 3) g = replay_diagonal(spec.ints, *b);
      break;
    case ScatterKind::kAsStrided:
      g = replay_as_strided(spec, *b);
      break;
    case ScatterKind::kNone:
      break;
  }
  if (!g) return std::nullopt;
  return from_known(*g);
}

}  // namespace fxinplace::core
