#include "torch/op_facts.h"

#include <ATen/core/dispatch/Dispatcher.h>

#include <unordered_map>
#include <unordered_set>

#include "torch/op_schema.h"

namespace fxinplace::torch_bridge {
namespace {

using core::LayoutUse;
using core::ScatterKind;
using core::ViewKind;

// Views whose result is the same logical elements for any input strides and
// offset, so moving their input into another buffer (re-inplacing) is
// invisible to them. Every other view is assumed to depend on the layout.
const std::unordered_set<std::string>& logical_views() {
  static const std::unordered_set<std::string> names = {"aten::select",     "aten::slice",
                                                        "aten::narrow",     "aten::t",
                                                        "aten::transpose",  "aten::permute",
                                                        "aten::unsqueeze",  "aten::squeeze",
                                                        "aten::expand",     "aten::expand_as",
                                                        "aten::diagonal",   "aten::unbind",
                                                        "aten::split",      "aten::split_with_sizes",
                                                        "aten::chunk",      "aten::tensor_split",
                                                        "aten::alias",      "aten::detach",
                                                        "aten::unfold",     "aten::movedim",
                                                        "aten::swapaxes",   "aten::swapdims",
                                                        "aten::lift_fresh", "aten::real",
                                                        "aten::imag"};
  return names;
}

// `view` succeeds on other strides only when the new layout allows the reshape.
const std::unordered_set<std::string>& reshape_views() {
  static const std::unordered_set<std::string> names = {"aten::view", "aten::_reshape_alias", "aten::reshape",
                                                        "aten::_unsafe_view"};
  return names;
}

// Address storage offsets directly, whatever the input's layout.
bool addresses_absolutely(const std::string& name, const std::string& overload) {
  return (name == "aten::as_strided" || name == "aten::as_strided_scatter") && overload.empty();
}

// How a view's result depends on its input's layout (see core::LayoutUse).
LayoutUse view_layout_use(const std::string& name, const std::string& overload) {
  if (addresses_absolutely(name, overload)) return LayoutUse::kAbsolute;
  if (reshape_views().count(name) && overload.empty()) return LayoutUse::kReshape;
  if (logical_views().count(name)) return LayoutUse::kLogical;
  return LayoutUse::kStrides;
}

// The `*_copy` form of a view (functionalize(remove="mutations_and_views")
// records `x.view(torch.float32)` as `view_copy.dtype`) returns a fresh tensor
// but takes the view first, with the view's checks of its input's layout; a
// rewrite that moves that input to other strides makes it raise (random
// pipelines seed 120539):
//   f = floor(mul(s, 2))                 # fresh: strides (2, 1, 1)
//   v = view_copy.dtype(f, float32)      # in place (f in s's memory): strides
//                                        # (2, 1, 2), "stride(-1) must be 1"
// So it uses its input's layout as the view would, except that a copy of a
// reshape reshapes any layout (view_copy(t, [12]) copies a transposed t) and
// _reshape_alias_copy takes explicit strides. Nothing aliases the result.
LayoutUse copied_view_layout_use(const std::string& name, const std::string& overload) {
  static const std::string suffix = "_copy";
  if (name.size() <= suffix.size() || name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0)
    return LayoutUse::kLogical;
  std::string view = name.substr(0, name.size() - suffix.size());
  auto handle = c10::Dispatcher::singleton().findSchema({view, overload});
  if (!handle || handle->schema().arguments().empty()) return LayoutUse::kLogical;
  const c10::AliasInfo* first = handle->schema().arguments()[0].alias_info();
  if (!first || first->isWrite()) return LayoutUse::kLogical;
  if (view == "aten::_reshape_alias") return LayoutUse::kStrides;
  LayoutUse use = view_layout_use(view, overload);
  return use == LayoutUse::kReshape ? LayoutUse::kLogical : use;
}

struct ScatterInverse {
  ScatterKind kind;
  OpName view;
};

// The view ops whose `*_scatter` inverse functionalization emits.
const std::unordered_map<std::string, ScatterInverse>& scatter_inverses() {
  static const std::unordered_map<std::string, ScatterInverse> table = {
      {"aten::select_scatter", {ScatterKind::kSelect, {"aten::select", "int"}}},
      {"aten::slice_scatter", {ScatterKind::kSlice, {"aten::slice", "Tensor"}}},
      {"aten::diagonal_scatter", {ScatterKind::kDiagonal, {"aten::diagonal", ""}}},
      {"aten::as_strided_scatter", {ScatterKind::kAsStrided, {"aten::as_strided", ""}}},
  };
  return table;
}

bool reads_only_metadata(const std::string& name) {
  return name == "aten::sym_size" || name == "aten::sym_stride" || name == "aten::sym_numel" ||
         name == "aten::sym_storage_offset";
}

// The in-place sibling must be named `<name>_`, write only `self` and take the
// same arguments with the same types (then swapping the target, args
// untouched, computes the same value into `self`). Two equally good siblings
// would make the choice arbitrary: take neither.
void find_inplace_sibling(const std::string& name, const c10::FunctionSchema& schema, OpFacts& facts) {
  const std::string inplace_name = name + "_";
  std::vector<size_t> all_args(schema.arguments().size());
  for (size_t k = 0; k < all_args.size(); ++k) all_args[k] = k;
  int matches = 0;
  for (const std::string& ov : overloads_of(inplace_name)) {
    auto candidate = c10::Dispatcher::singleton().findSchema({inplace_name, ov});
    if (!candidate) continue;
    const auto& args = candidate->schema().arguments();
    // Same arguments: the same count, and each of the functional op's types.
    bool writes_only_self = args.size() == schema.arguments().size() && !args.empty() && writes(args[0]);
    for (size_t k = 1; k < args.size() && writes_only_self; ++k) writes_only_self = !args[k].alias_info();
    if (writes_only_self &&
        is_functional_variant(schema, candidate->schema(), all_args, schema.returns().size(), false)) {
      facts.inplace_overload = ov;
      ++matches;
    }
  }
  facts.has_inplace = matches == 1;
}

// Tensor-tensor overloads whose two tensor operands commute. add.Tensor only
// without alpha (the frontend checks that); sub, div, pow do not commute.
bool is_commutative(const std::string& name, const std::string& overload) {
  static const std::unordered_set<std::string> names = {
      "aten::add",         "aten::mul",         "aten::maximum",     "aten::minimum",
      "aten::bitwise_and", "aten::bitwise_or",  "aten::bitwise_xor", "aten::logical_and",
      "aten::logical_or",  "aten::logical_xor", "aten::hypot"};
  return names.count(name) && (overload == "Tensor" || overload.empty());
}

// Ops returning booleans whose `foo_` computes the same booleans and stores
// them in self's dtype (ATen's in-place comparison and logical kernels).
bool stores_converted(const std::string& name) {
  static const std::unordered_set<std::string> names = {
      "aten::eq", "aten::ne",          "aten::lt",         "aten::le",         "aten::gt",
      "aten::ge", "aten::logical_and", "aten::logical_or", "aten::logical_xor"};
  return names.count(name) > 0;
}

// `foo.out(args..., *, Tensor(a!) out) -> Tensor(a!)` for `foo(args...) -> Tensor`:
// one written argument, returned, and the functional op's arguments otherwise.
void find_out_overload(const std::string& name, const c10::FunctionSchema& schema, OpFacts& facts) {
  if (schema.returns().size() != 1) return;
  int matches = 0;
  for (const std::string& ov : overloads_of(name)) {
    auto candidate = c10::Dispatcher::singleton().findSchema({name, ov});
    if (!candidate) continue;
    const auto& args = candidate->schema().arguments();
    std::vector<size_t> read_args;
    int written = -1;
    for (size_t k = 0; k < args.size(); ++k) {
      if (writes(args[k])) {
        written = written == -1 ? static_cast<int>(k) : -2;
      } else {
        read_args.push_back(k);
      }
    }
    if (written < 0 || !args[static_cast<size_t>(written)].kwarg_only()) continue;
    if (is_functional_variant(schema, candidate->schema(), read_args, 1, false)) {
      facts.out_overload = ov;
      facts.out_arg_name = args[static_cast<size_t>(written)].name();
      ++matches;
    }
  }
  facts.has_out = matches == 1;
}

// `.Scalar` overloads that ATen defines as their `.Tensor` sibling applied to
// wrapped_scalar_tensor(other) (BinaryOps.cpp), with the same other arguments.
void find_tensor_sibling_out(const std::string& name, const std::string& overload, OpFacts& facts) {
  static const std::unordered_set<std::string> names = {"aten::add", "aten::sub", "aten::mul", "aten::div"};
  if (!names.count(name)) return;
  std::string sibling;
  if (overload == "Scalar")
    sibling = "Tensor";
  else if (overload == "Scalar_mode")
    sibling = "Tensor_mode";
  else
    return;
  auto handle = c10::Dispatcher::singleton().findSchema({name, sibling});
  if (!handle) return;
  OpFacts tensor_facts;
  find_out_overload(name, handle->schema(), tensor_facts);
  if (!tensor_facts.has_out) return;
  facts.tensor_sibling_out_overload = tensor_facts.out_overload;
  facts.tensor_sibling_out_arg_name = tensor_facts.out_arg_name;
  facts.has_tensor_sibling_out = true;
}

}  // namespace

OpFacts op_facts(const std::string& name, const std::string& overload) {
  OpFacts facts;
  auto handle = c10::Dispatcher::singleton().findSchema({name, overload});
  if (!handle) return facts;
  facts.found = true;
  const c10::FunctionSchema& schema = handle->schema();
  const auto& args = schema.arguments();
  for (const c10::Argument& a : args) facts.mutates = facts.mutates || writes(a);
  facts.pointwise = handle->hasTag(at::Tag::pointwise) || (name == "aten::copy" && overload.empty());
  facts.reads_memory = !reads_only_metadata(name);
  facts.is_resize = name == "aten::resize" && overload.empty();
  facts.indexed_write = (name == "aten::index_put" || name == "aten::_unsafe_index_put") && overload.empty();
  facts.collective = name.rfind("_c10d_functional::", 0) == 0;
  facts.metadata_write_back = (name == "aten::resize_" || name == "aten::as_strided_") && overload.empty();
  facts.returns_its_input = name == "_c10d_functional::wait_tensor" && overload.empty();
  facts.aliases_without_annotation =
      facts.returns_its_input || (name == "aten::_unsafe_view" && overload.empty());
  if (auto it = scatter_inverses().find(name); it != scatter_inverses().end() && !facts.mutates) {
    facts.scatter = it->second.kind;
    facts.inverted_view = it->second.view;
  }
  facts.keeps_self_geometry = facts.scatter != core::ScatterKind::kNone ||
                              ((name == "aten::copy" || name == "aten::_foreach_copy") && overload.empty());
  if (args.empty()) return facts;
  facts.first_arg_name = args[0].name();
  facts.self_is_tensor = args[0].type()->kind() == c10::TypeKind::TensorType;
  facts.self_is_tensor_list = *args[0].type() == *c10::ListType::ofTensors();
  const c10::AliasInfo* first = args[0].alias_info();
  if (first && !first->isWrite())
    facts.view = first->isWildcardAfter() ? ViewKind::kMulti : ViewKind::kSingle;
  if (facts.returns_its_input) facts.view = ViewKind::kSingle;
  // sym_stride and sym_storage_offset read layout as numbers: a rewrite that
  // moves their operand's memory changes what they return (random pipelines
  // seed 112164: index_copy's fresh result has strides (7, 1); in place, its
  // transposed self's (1, 7), and a write-back's as_strided_ read them).
  // _unsafe_view aliases without an annotation (no ViewKind) but is a reshape.
  if (addresses_absolutely(name, overload) || name == "aten::sym_storage_offset")
    facts.layout_use = LayoutUse::kAbsolute;
  else if (name == "aten::sym_stride")
    facts.layout_use = LayoutUse::kStrides;
  else if (facts.view != ViewKind::kNone || facts.aliases_without_annotation)
    facts.layout_use = facts.returns_its_input ? LayoutUse::kLogical : view_layout_use(name, overload);
  else if (!facts.mutates)
    facts.layout_use = copied_view_layout_use(name, overload);
  if (facts.view != ViewKind::kNone || facts.mutates) return facts;
  find_inplace_sibling(name, schema, facts);
  facts.commutative = facts.has_inplace && is_commutative(name, overload);
  facts.inplace_stores_converted = facts.has_inplace && stores_converted(name);
  find_out_overload(name, schema, facts);
  find_tensor_sibling_out(name, overload, facts);
  return facts;
}

bool has_backend_kernel(const std::string& name, const std::string& overload,
                        const std::string& device_type) {
  auto handle = c10::Dispatcher::singleton().findSchema({name, overload});
  if (!handle) return false;
  c10::DispatchKey key;
  try {
    key = c10::computeDispatchKey(std::nullopt, c10::kStrided, c10::Device(device_type));
  } catch (const c10::Error&) {
    return false;  // not a device type this build knows
  }
  // Only a kernel registered for the backend itself: one registered for an
  // alias key (CompositeExplicitAutograd: a generated out= form that runs the
  // functional kernel and copies) is not.
  return handle->hasKernelForDispatchKey(key);
}

}  // namespace fxinplace::torch_bridge
