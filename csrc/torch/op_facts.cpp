#include "torch/op_facts.h"

#include <ATen/core/dispatch/Dispatcher.h>

#include <mutex>
#include <unordered_map>
#include <vector>

namespace fxinplace::torch_bridge {
namespace {

// name -> overload names, rebuilt when a name is missing (an op registered
// after the last look-up, e.g. a custom op defined at run time).
class OverloadIndex {
 public:
  std::vector<std::string> overloads(const std::string& name) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = by_name_.find(name);
    if (it == by_name_.end()) {
      rebuild();
      it = by_name_.find(name);
    }
    return it == by_name_.end() ? std::vector<std::string>{} : it->second;
  }

 private:
  void rebuild() {
    by_name_.clear();
    for (const c10::OperatorName& op : c10::Dispatcher::singleton().getAllOpNames())
      by_name_[op.name].push_back(op.overload_name);
  }
  std::mutex mu_;
  std::unordered_map<std::string, std::vector<std::string>> by_name_;
};

OverloadIndex& overload_index() {
  static OverloadIndex index;
  return index;
}

bool writes(const c10::Argument& a) { return a.alias_info() && a.alias_info()->isWrite(); }

// The in-place sibling must take the same arguments (same count, same types),
// write only `self`, and be named `<name>_`; this is what makes swapping the
// target, with args untouched, compute the same value into `self`.
bool is_inplace_sibling(const c10::FunctionSchema& functional, const c10::FunctionSchema& inplace) {
  const auto& fa = functional.arguments();
  const auto& ia = inplace.arguments();
  if (fa.size() != ia.size() || ia.empty() || !writes(ia[0])) return false;
  for (size_t k = 0; k < fa.size(); ++k) {
    if (k > 0 && ia[k].alias_info()) return false;
    if (*fa[k].type() != *ia[k].type()) return false;
  }
  return true;
}

}  // namespace

std::vector<std::string> overloads_of(const std::string& name) { return overload_index().overloads(name); }

OpFacts op_facts(const std::string& name, const std::string& overload) {
  OpFacts facts;
  auto handle = c10::Dispatcher::singleton().findSchema({name, overload});
  if (!handle) return facts;
  facts.found = true;
  const c10::FunctionSchema& schema = handle->schema();
  const auto& args = schema.arguments();
  for (const c10::Argument& a : args) facts.mutates = facts.mutates || writes(a);
  facts.pointwise = handle->hasTag(at::Tag::pointwise);
  if (args.empty()) return facts;
  facts.first_arg_name = args[0].name();
  facts.self_is_tensor = args[0].type()->kind() == c10::TypeKind::TensorType;
  const c10::AliasInfo* first = args[0].alias_info();
  if (first && !first->isWrite())
    facts.view = first->isWildcardAfter() ? ViewKind::kMulti : ViewKind::kSingle;
  if (facts.view != ViewKind::kNone || facts.mutates) return facts;
  const std::string inplace_name = name + "_";
  int matches = 0;
  for (const std::string& ov : overload_index().overloads(inplace_name)) {
    auto candidate = c10::Dispatcher::singleton().findSchema({inplace_name, ov});
    if (candidate && is_inplace_sibling(schema, candidate->schema())) {
      facts.inplace_overload = ov;
      ++matches;
    }
  }
  // Two equally good siblings would make the choice arbitrary: take neither.
  facts.has_inplace = matches == 1;
  return facts;
}

}  // namespace fxinplace::torch_bridge
