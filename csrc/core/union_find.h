// Disjoint sets of storages: two storages end up in one class when the planner
// makes them share memory (an op re-inplaced onto its `self`).
#pragma once

#include <cstdint>
#include <numeric>
#include <vector>

namespace fxinplace::core {

class UnionFind {
 public:
  explicit UnionFind(size_t n = 0) : parent_(n), rank_(n, 0) { std::iota(parent_.begin(), parent_.end(), 0); }
  int32_t find(int32_t x) {
    while (parent_[x] != x) {
      parent_[x] = parent_[parent_[x]];
      x = parent_[x];
    }
    return x;
  }
  // Returns {winner, loser}: the surviving root and the root merged into it.
  std::pair<int32_t, int32_t> unite(int32_t a, int32_t b) {
    a = find(a);
    b = find(b);
    if (a == b) return {a, a};
    if (rank_[a] < rank_[b]) std::swap(a, b);
    parent_[b] = a;
    if (rank_[a] == rank_[b]) ++rank_[a];
    return {a, b};
  }

 private:
  std::vector<int32_t> parent_;
  std::vector<uint8_t> rank_;
};

}  // namespace fxinplace::core
