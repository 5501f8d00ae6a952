// Schema questions both halves ask (re-inplacing's op facts and the
// functionalization kernels' op classes), answered in one place.
#pragma once

#include <ATen/core/dispatch/Dispatcher.h>

#include <string>
#include <vector>

namespace fxinplace::torch_bridge {

// Overload names registered under a qualified name ("aten::add" -> {"Tensor", "Scalar", "out", ...}).
std::vector<std::string> overloads_of(const std::string& name);

bool writes(const c10::Argument& a);
bool same_alias_set(const c10::AliasInfo* a, const c10::AliasInfo* b);
bool has_alias(const c10::FunctionSchema& s);

// `f` computes functionally what `op` writes: it takes `op`'s arguments at
// positions `args` (out= arguments dropped) with the same types, writes none,
// and returns `expected_returns` values (op's returns, then the written
// arguments op does not return). With allow_view, `f` may return views.
// The relation between `foo` and `foo_` both halves use: functionalization
// looks for `foo` given `foo_`, re-inplacing for `foo_` given `foo`.
bool is_functional_variant(const c10::FunctionSchema& f, const c10::FunctionSchema& op,
                           const std::vector<size_t>& args, size_t expected_returns, bool allow_view);

}  // namespace fxinplace::torch_bridge
