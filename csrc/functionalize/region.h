// Thread-local state of a functionalized region: whether one is active (to
// reject nesting) and whether views are replayed as views (`remove="mutations"`)
// or as `*_copy` ops (`remove="mutations_and_views"`).
#pragma once

#include <c10/core/impl/LocalDispatchKeySet.h>

#include <cstdint>
#include <optional>

namespace fxinplace::functionalize {

bool region_active();
bool reapply_views();
// Identifies the innermost active region (0: none). The subgraphs of a
// higher-order op (torch.cond) run as regions of their own.
uint64_t current_region();

// RAII: marks the region active and TLS-includes kFunctionalizeKey so that
// factory functions (no tensor arguments) also reach the fallback. It also
// lifts an exclusion of the key: the branches of a higher-order op (cond)
// run as regions of their own while the op itself runs with the key
// excluded.
class RegionGuard {
 public:
  explicit RegionGuard(bool reapply_views);
  ~RegionGuard();
  RegionGuard(const RegionGuard&) = delete;
  RegionGuard& operator=(const RegionGuard&) = delete;

 private:
  bool previous_active_;
  bool previous_reapply_;
  uint64_t previous_region_;
  std::optional<c10::impl::ForceDispatchKeyGuard> keys_;
};

}  // namespace fxinplace::functionalize
