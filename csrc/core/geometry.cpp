#include "geometry.h"

#include <algorithm>
#include <unordered_set>

namespace fxinplace::core {

Int Geometry::numel() const {
  Int n = 1;
  for (Int s : sizes) n *= s;
  return n;
}

bool Geometry::same_elements(const Geometry& other) const {
  if (sizes != other.sizes) return false;
  if (numel() == 0) return true;
  if (offset != other.offset) return false;
  for (size_t d = 0; d < sizes.size(); ++d)
    if (sizes[d] > 1 && strides[d] != other.strides[d]) return false;
  return true;
}

bool Geometry::non_overlapping_and_dense() const {
  std::vector<size_t> dims;
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] == 0) return true;
    if (sizes[d] > 1) dims.push_back(d);
  }
  std::sort(dims.begin(), dims.end(), [this](size_t a, size_t b) { return strides[a] < strides[b]; });
  Int expected = 1;
  for (size_t d : dims) {
    if (strides[d] != expected) return false;
    expected *= sizes[d];
  }
  return true;
}

bool Geometry::may_overlap(const Geometry& other) const {
  if (numel() == 0 || other.numel() == 0) return false;
  auto last = [](const Geometry& g) {
    Int end = g.offset;
    for (size_t d = 0; d < g.sizes.size(); ++d) end += (g.sizes[d] - 1) * g.strides[d];
    return end;
  };
  for (const Geometry* g : {this, &other})
    for (Int s : g->strides)
      if (s < 0) return true;
  if (offset > last(other) || other.offset > last(*this)) return false;
  // Interleaved ranges (a column and a scalar of the same matrix, say): for
  // small tensors, compare the addresses themselves.
  constexpr Int kMaxEnumerated = 1 << 16;
  if (numel() + other.numel() > kMaxEnumerated) return true;
  std::unordered_set<Int> mine;
  for_each_address([&mine](Int a) { mine.insert(a); });
  bool hit = false;
  other.for_each_address([&mine, &hit](Int a) { hit = hit || mine.count(a) > 0; });
  return hit;
}

void Geometry::for_each_address(const std::function<void(Int)>& visit) const {
  std::vector<Int> index(sizes.size(), 0);
  Int n = numel();
  for (Int k = 0; k < n; ++k) {
    Int address = offset;
    for (size_t d = 0; d < sizes.size(); ++d) address += index[d] * strides[d];
    visit(address);
    for (size_t d = sizes.size(); d-- > 0;) {
      if (++index[d] < sizes[d]) break;
      index[d] = 0;
    }
  }
}

bool Geometry::has_internal_overlap() const {
  if (numel() == 0) return false;
  // Sorted by stride, each dim must step past everything the smaller dims
  // reach; otherwise two indices may share an element (expand's stride 0, or
  // as_strided((3, 3), (1, 1)), which ATen itself only calls "too hard").
  std::vector<size_t> dims;
  for (size_t d = 0; d < sizes.size(); ++d)
    if (sizes[d] > 1) dims.push_back(d);
  std::sort(dims.begin(), dims.end(), [this](size_t a, size_t b) { return strides[a] < strides[b]; });
  Int reach = 0;
  for (size_t d : dims) {
    if (strides[d] <= reach) return true;
    reach += (sizes[d] - 1) * strides[d];
  }
  return false;
}

size_t GeometryTable::Hash::operator()(const Geometry& g) const {
  size_t h = std::hash<Int>()(g.offset);
  auto mix = [&h](Int v) { h ^= std::hash<Int>()(v) + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2); };
  for (Int s : g.sizes) mix(s);
  mix(-1);
  for (Int s : g.strides) mix(s);
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

std::optional<Geometry> replay_select(const std::vector<Int>& a, const Geometry& base) {
  auto dim = wrap_dim(a[0], base.sizes.size());
  if (!dim) return std::nullopt;
  Int size = base.sizes[*dim];
  Int index = a[1] < 0 ? a[1] + size : a[1];
  if (index < 0 || index >= size) return std::nullopt;
  Geometry g;
  g.offset = base.offset + index * base.strides[*dim];
  for (size_t d = 0; d < base.sizes.size(); ++d) {
    if (static_cast<Int>(d) == *dim) continue;
    g.sizes.push_back(base.sizes[d]);
    g.strides.push_back(base.strides[d]);
  }
  return g;
}

// Mirrors ATen's slice: missing bounds mean the whole dim, negative bounds count
// from the end, and out-of-range bounds are clamped rather than rejected.
std::optional<Geometry> replay_slice(const std::vector<Int>& a, const Geometry& base) {
  auto dim = wrap_dim(a[0], base.sizes.size());
  Int step = a[3];
  if (!dim || step <= 0) return std::nullopt;
  Int size = base.sizes[*dim];
  Int start = a[1] == ScatterSpec::kUnset ? 0 : a[1];
  Int end = a[2] == ScatterSpec::kUnset ? size : a[2];
  if (start < 0) start += size;
  if (end < 0) end += size;
  start = std::clamp<Int>(start, 0, size);
  end = std::clamp<Int>(end, start, size);
  Geometry g = base;
  g.offset = base.offset + start * base.strides[*dim];
  g.sizes[*dim] = (end - start + step - 1) / step;
  g.strides[*dim] = base.strides[*dim] * step;
  return g;
}

std::optional<Geometry> replay_diagonal(const std::vector<Int>& a, const Geometry& base) {
  auto d1 = wrap_dim(a[1], base.sizes.size());
  auto d2 = wrap_dim(a[2], base.sizes.size());
  if (!d1 || !d2 || *d1 == *d2) return std::nullopt;
  Int offset = a[0];
  Int len = 0;
  Geometry g;
  g.offset = base.offset;
  if (offset >= 0) {
    len = std::max<Int>(std::min(base.sizes[*d1], base.sizes[*d2] - offset), 0);
    if (len > 0) g.offset += offset * base.strides[*d2];
  } else {
    len = std::max<Int>(std::min(base.sizes[*d1] + offset, base.sizes[*d2]), 0);
    if (len > 0) g.offset -= offset * base.strides[*d1];
  }
  for (size_t d = 0; d < base.sizes.size(); ++d) {
    auto di = static_cast<Int>(d);
    if (di == *d1 || di == *d2) continue;
    g.sizes.push_back(base.sizes[d]);
    g.strides.push_back(base.strides[d]);
  }
  g.sizes.push_back(len);
  g.strides.push_back(base.strides[*d1] + base.strides[*d2]);
  return g;
}

std::optional<Geometry> replay_as_strided(const ScatterSpec& s, const Geometry& base) {
  if (s.sizes.size() != s.strides.size()) return std::nullopt;
  Geometry g;
  g.sizes = s.sizes;
  g.strides = s.strides;
  g.offset = s.ints.empty() || s.ints[0] == ScatterSpec::kUnset ? base.offset : s.ints[0];
  for (Int v : g.sizes)
    if (v < 0) return std::nullopt;
  return g;
}

}  // namespace

namespace {

// Writes `amount` (an element distance in `base`) as index steps per dim of a
// dense `base`, largest stride first; nullopt if it is not such a combination.
std::optional<std::vector<Int>> index_steps(Int amount, const Geometry& base,
                                            const std::vector<size_t>& order, bool bounded) {
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

}  // namespace

std::optional<Geometry> relocate_view(const Geometry& view, const Geometry& old_base,
                                      const Geometry& new_base) {
  if (old_base.sizes != new_base.sizes) return std::nullopt;
  std::vector<size_t> order;
  for (size_t d = 0; d < old_base.sizes.size(); ++d)
    if (old_base.sizes[d] > 1) order.push_back(d);
  std::sort(order.begin(), order.end(),
            [&old_base](size_t a, size_t b) { return old_base.strides[a] > old_base.strides[b]; });
  // Greedy decomposition is exact when each stride exceeds the furthest
  // reach of all smaller ones (true for dense tensors and for strided,
  // gappy ones without overlap).
  Int reach_below = 0;
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    if (old_base.strides[*it] <= reach_below) return std::nullopt;
    reach_below += (old_base.sizes[*it] - 1) * old_base.strides[*it];
  }
  auto recompose = [&new_base](const std::vector<Int>& steps) {
    Int total = 0;
    for (size_t d = 0; d < steps.size(); ++d) total += steps[d] * new_base.strides[d];
    return total;
  };
  Int delta = view.offset - old_base.offset;
  if (delta < 0) return std::nullopt;
  auto start = index_steps(delta, old_base, order, /*bounded=*/true);
  if (!start) return std::nullopt;
  Geometry moved = view;
  moved.offset = new_base.offset + recompose(*start);
  // The furthest index reached along each base dim: if a view dim would run
  // past a base dim (a reshape merging dims), the map is not one stride per
  // view dim on other layouts.
  std::vector<Int> reach = *start;
  for (size_t k = 0; k < view.sizes.size(); ++k) {
    if (view.sizes[k] <= 1) continue;
    if (view.strides[k] < 0) return std::nullopt;
    auto steps = index_steps(view.strides[k], old_base, order, /*bounded=*/false);
    if (!steps) return std::nullopt;
    moved.strides[k] = recompose(*steps);
    for (size_t d = 0; d < steps->size(); ++d) reach[d] += (view.sizes[k] - 1) * (*steps)[d];
  }
  for (size_t d = 0; d < reach.size(); ++d)
    if (reach[d] >= std::max<Int>(old_base.sizes[d], 1)) return std::nullopt;
  return moved;
}

// Old dims are grouped into runs that are contiguous with each other; each
// run must be rebuilt exactly by a run of new dims, which then step through
// it with the run's innermost stride. Size-1 new dims fit anywhere.
std::optional<std::vector<Int>> reshape_strides(const std::vector<Int>& sizes,
                                                const std::vector<Int>& strides,
                                                const std::vector<Int>& new_sizes) {
  std::vector<Int> out(new_sizes.size(), 1);
  Int numel = 1;
  for (Int s : sizes) numel *= s;
  Int new_numel = 1;
  for (Int s : new_sizes) new_numel *= s;
  if (numel != new_numel) return std::nullopt;
  if (numel == 0 || sizes.empty()) {
    Int stride = 1;
    for (size_t d = new_sizes.size(); d-- > 0;) {
      out[d] = stride;
      stride *= std::max<Int>(new_sizes[d], 1);
    }
    return out;
  }
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

std::optional<Geometry> replay_view(const ScatterSpec& spec, const Geometry& base) {
  if (!spec.replayable) return std::nullopt;
  switch (spec.kind) {
    case ScatterKind::kSelect:
      if (spec.ints.size() != 2) return std::nullopt;
      return replay_select(spec.ints, base);
    case ScatterKind::kSlice:
      if (spec.ints.size() != 4) return std::nullopt;
      return replay_slice(spec.ints, base);
    case ScatterKind::kDiagonal:
      if (spec.ints.size() != 3) return std::nullopt;
      return replay_diagonal(spec.ints, base);
    case ScatterKind::kAsStrided:
      return replay_as_strided(spec, base);
    case ScatterKind::kNone:
      break;
  }
  return std::nullopt;
}

}  // namespace fxinplace::core
