#include "functionalize/op_classes.h"

#include <ATen/core/enum_tag.h>

#include <mutex>
#include <unordered_map>

#include "torch/op_schema.h"

namespace fxinplace::functionalize {
namespace {

using torch_bridge::has_alias;
using torch_bridge::is_functional_variant;
using torch_bridge::same_alias_set;
using torch_bridge::writes;

bool writes_out_argument(const c10::FunctionSchema& s) {
  for (const auto& a : s.arguments())
    if (writes(a) && a.is_out()) return true;
  return false;
}

std::string strip_trailing_underscore(const std::string& name) {
  return !name.empty() && name.back() == '_' ? name.substr(0, name.size() - 1) : name;
}

std::optional<c10::OperatorHandle> find_functional(const c10::OperatorHandle& op,
                                                   const std::vector<size_t>& args, size_t expected_returns,
                                                   bool allow_view) {
  const c10::FunctionSchema& schema = op.schema();
  const std::string base = strip_trailing_underscore(schema.name());
  std::optional<c10::OperatorHandle> by_type;
  for (const std::string& name : {base, base + "_functional"}) {
    for (const std::string& overload : torch_bridge::overloads_of(name)) {
      auto candidate = c10::Dispatcher::singleton().findSchema({name, overload});
      if (!candidate ||
          !is_functional_variant(candidate->schema(), schema, args, expected_returns, allow_view))
        continue;
      bool same_names = true;
      for (size_t k = 0; k < args.size(); ++k)
        same_names =
            same_names && candidate->schema().arguments()[k].name() == schema.arguments()[args[k]].name();
      if (same_names) return candidate;
      if (!by_type) by_type = candidate;
    }
  }
  return by_type;
}

// sum.IntList_out(self, dim, keepdim, *, dtype=None, out): with no dtype,
// eager computes in out's dtype; the functional variant, called with it, does too.
void find_dtype_from_out(const c10::FunctionSchema& s, OpClass& c) {
  std::optional<size_t> out;
  for (size_t p = 0; p < s.arguments().size(); ++p) {
    if (!s.arguments()[p].is_out()) continue;
    if (out || s.arguments()[p].type()->kind() != c10::TypeKind::TensorType)
      return;  // not exactly one tensor
    out = p;
  }
  if (!out) return;
  for (size_t k = 0; k < c.functional_args.size(); ++k) {
    const c10::Argument& a = s.arguments()[c.functional_args[k]];
    const c10::TypePtr& t = a.type();
    // (A `ScalarType?` may be parsed as an optional int.)
    const c10::TypeKind element = t->kind() == c10::TypeKind::OptionalType
                                      ? t->castRaw<c10::OptionalType>()->getElementType()->kind()
                                      : c10::TypeKind::AnyType;
    if (a.name() == "dtype" &&
        (element == c10::TypeKind::ScalarTypeType || element == c10::TypeKind::IntType)) {
      c.functional_dtype = k;
      c.out_arg = out;
      return;
    }
  }
}

void classify_mutating(const c10::OperatorHandle& op, OpClass& c) {
  const c10::FunctionSchema& s = op.schema();
  size_t unreturned_writes = 0;
  for (size_t p : c.written) {
    bool returned = false;
    for (const auto& r : s.returns())
      returned = returned || same_alias_set(r.alias_info(), s.arguments()[p].alias_info());
    unreturned_writes += returned ? 0 : 1;
  }
  for (const auto& r : s.returns()) {
    int alias = -1;
    for (size_t p : c.written)
      if (same_alias_set(r.alias_info(), s.arguments()[p].alias_info())) alias = static_cast<int>(p);
    if (r.alias_info() && alias < 0) {
      c.kind = OpKind::kUnsupported;
      c.unsupported_reason = "it returns an alias of an argument it does not write";
      return;
    }
    c.return_alias.push_back(alias);
  }
  for (size_t p = 0; p < s.arguments().size(); ++p)
    if (!s.arguments()[p].is_out()) c.functional_args.push_back(p);
  c.kind = OpKind::kMutating;
  if (c.custom) {
    // auto_functionalized_v2 only takes ops whose results are fresh tensors.
    for (int alias : c.return_alias)
      if (alias >= 0) {
        c.kind = OpKind::kUnsupported;
        c.unsupported_reason = "it is a custom op that returns an alias of an argument it mutates";
      }
    return;
  }
  c.functional = find_functional(op, c.functional_args, s.returns().size() + unreturned_writes, false);
  if (c.functional)
    c.functional_is_composite =
        c.functional->hasKernelForDispatchKey(c10::DispatchKey::CompositeImplicitAutograd);
  if (c.functional) find_dtype_from_out(s, c);
  if (!c.functional) {
    c.kind = OpKind::kUnsupported;
    c.unsupported_reason = "no functional variant of this mutating op was found";
  }
}

OpClass compute_class(const c10::OperatorHandle& op) {
  OpClass c;
  const c10::FunctionSchema& s = op.schema();
  const std::string& ns_name = s.name();
  c.custom = ns_name.rfind("aten::", 0) != 0 && ns_name.rfind("prims::", 0) != 0;
  c.foreach = ns_name.rfind("aten::_foreach_", 0) == 0;
  c.composite_implicit = op.hasKernelForDispatchKey(c10::DispatchKey::CompositeImplicitAutograd);
  for (size_t p = 0; p < s.arguments().size(); ++p)
    if (writes(s.arguments()[p])) c.written.push_back(p);

  if (ns_name == "aten::lift_fresh" || ns_name == "aten::lift") {
    c.kind = OpKind::kLift;
  } else if (ns_name == "aten::set_" && op.schema().overload_name() == "source_Tensor") {
    c.kind = OpKind::kSetToTensor;
  } else if (ns_name == "aten::set_") {
    c.kind = OpKind::kUnsupported;
    c.unsupported_reason =
        "set_() to a storage or to a geometry of another tensor swaps the storage of a tensor, which "
        "functionalization cannot express (set_(tensor) is supported)";
  } else if (ns_name == "aten::resize_" || ns_name == "aten::resize_as_") {
    c.kind = OpKind::kResize;
  } else if (op.hasTag(at::Tag::inplace_view)) {
    c.kind = OpKind::kInplaceView;
    std::vector<size_t> all(s.arguments().size());
    for (size_t k = 0; k < all.size(); ++k) all[k] = k;
    c.functional = find_functional(op, all, 1, true);
    c.functional_args = all;
    if (!c.functional) {
      c.kind = OpKind::kUnsupported;
      c.unsupported_reason = "no out-of-place view op matches this in-place view op";
    }
  } else if (!c.written.empty()) {
    classify_mutating(op, c);
    // A composite out= op (matmul.out, ...) is run as its functional variant
    // rather than decomposed: its decomposition resizes `out` through
    // at::native calls that bypass the dispatcher, and may read `out` as an
    // input before that (addmv_out(out, out, ...)).
    if (c.composite_implicit && c.kind == OpKind::kMutating && !c.custom && writes_out_argument(s))
      c.composite_implicit = false;
  } else if (!s.arguments().empty() && s.arguments()[0].alias_info() && !s.returns().empty() &&
             s.returns()[0].alias_info()) {
    c.kind = OpKind::kView;
    if (c.custom) {
      c.kind = OpKind::kUnsupported;
      c.unsupported_reason =
          "it is a custom op whose output aliases its input (a view we cannot replay or invert)";
    }
  } else if (has_alias(s)) {
    c.kind = OpKind::kUnsupported;
    c.unsupported_reason = "its alias annotations are neither a view of `self` nor writes";
  }
  return c;
}

}  // namespace

const OpClass& classify(const c10::OperatorHandle& op) {
  static std::mutex mu;
  static std::unordered_map<const c10::FunctionSchema*, OpClass> cache;
  const c10::FunctionSchema* key = &op.schema();
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(key);
  if (it == cache.end()) it = cache.emplace(key, compute_class(op)).first;
  return it->second;
}

}  // namespace fxinplace::functionalize
