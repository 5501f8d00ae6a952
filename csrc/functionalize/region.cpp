#include "functionalize/region.h"

#include "functionalize/dispatch_key.h"

namespace fxinplace::functionalize {
namespace {
thread_local bool tls_active = false;
thread_local bool tls_reapply_views = true;
}  // namespace

bool region_active() { return tls_active; }
bool reapply_views() { return tls_reapply_views; }

RegionGuard::RegionGuard(bool reapply) : previous_active_(tls_active), previous_reapply_(tls_reapply_views) {
  tls_active = true;
  tls_reapply_views = reapply;
  const c10::impl::LocalDispatchKeySet current = c10::impl::tls_local_dispatch_key_set();
  keys_.emplace(current.included_.add(kFunctionalizeKey), current.excluded_.remove(kFunctionalizeKey));
}

RegionGuard::~RegionGuard() {
  keys_.reset();
  tls_active = previous_active_;
  tls_reapply_views = previous_reapply_;
}

}  // namespace fxinplace::functionalize
