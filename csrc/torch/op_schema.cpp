#include "torch/op_schema.h"

#include <mutex>
#include <unordered_map>

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

}  // namespace

std::vector<std::string> overloads_of(const std::string& name) {
  static OverloadIndex index;
  return index.overloads(name);
}

bool writes(const c10::Argument& a) { return a.alias_info() && a.alias_info()->isWrite(); }

bool same_alias_set(const c10::AliasInfo* a, const c10::AliasInfo* b) {
  return a && b && !a->beforeSets().empty() && a->beforeSets() == b->beforeSets();
}

bool has_alias(const c10::FunctionSchema& s) {
  for (const auto& a : s.arguments())
    if (a.alias_info()) return true;
  for (const auto& r : s.returns())
    if (r.alias_info()) return true;
  return false;
}

bool is_functional_variant(const c10::FunctionSchema& f, const c10::FunctionSchema& op,
                           const std::vector<size_t>& args, size_t expected_returns, bool allow_view) {
  if (f.arguments().size() != args.size() || f.returns().size() != expected_returns) return false;
  if (!allow_view && has_alias(f)) return false;
  for (size_t k = 0; k < args.size(); ++k) {
    const c10::Argument& fa = f.arguments()[k];
    if (writes(fa) || *fa.type() != *op.arguments()[args[k]].type()) return false;
  }
  return true;
}

}  // namespace fxinplace::torch_bridge
