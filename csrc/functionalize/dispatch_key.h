// The dispatch key that routes every operator on an fxinplace functional tensor
// (and, inside a functionalized region, every factory) to our fallback.
//
// An extension cannot add a DispatchKey. We borrow `DeferredInit`: it sits
// above `Python` (so make_fx's proxy mode only ever sees the functional ops we
// re-issue) and below `PythonTLSSnapshot` (whose kernel assumes it is the
// top-most non-functorch key), and nothing in core registers on it (its only
// user, torchdistx, is archived). `register_fallback` refuses to start if
// anything else already owns it.
#pragma once

#include <c10/core/DispatchKey.h>
#include <c10/core/DispatchKeySet.h>

namespace fxinplace::functionalize {

inline constexpr c10::DispatchKey kFunctionalizeKey = c10::DispatchKey::DeferredInit;

// Registers the boxed fallback on kFunctionalizeKey once per process; throws a
// clear error when another library already registered a fallback there.
void register_fallback();

}  // namespace fxinplace::functionalize
