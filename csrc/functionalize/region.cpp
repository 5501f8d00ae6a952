#include "functionalize/region.h"

#include "functionalize/dispatch_key.h"

namespace fxinplace::functionalize {
namespace {
thread_local bool tls_active = false;
thread_local bool tls_reapply_views = true;
thread_local uint64_t tls_region = 0;
thread_local uint64_t tls_regions_opened = 0;
}  // namespace

bool region_active() { return tls_active; }
bool reapply_views() { return tls_reapply_views; }
uint64_t current_region() { return tls_region; }

RegionGuard::RegionGuard(bool reapply)
    : previous_active_(tls_active), previous_reapply_(tls_reapply_views), previous_region_(tls_region) {
  tls_active = true;
  tls_region = ++tls_regions_opened;
  tls_reapply_views = reapply;
  const c10::impl::LocalDispatchKeySet current = c10::impl::tls_local_dispatch_key_set();
  keys_.emplace(current.included_.add(kFunctionalizeKey), current.excluded_.remove(kFunctionalizeKey));
}

RegionGuard::~RegionGuard() {
  keys_.reset();
  tls_active = previous_active_;
  tls_reapply_views = previous_reapply_;
  tls_region = previous_region_;
}

}  // namespace fxinplace::functionalize
