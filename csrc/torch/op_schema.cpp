#include "torch/op_schema.h"

#include <algorithm>
#include <memory>
#include <mutex>
#include <optional>
#include <unordered_map>

namespace fxinplace::torch_bridge {
namespace {

// name -> overload names, kept current by the dispatcher: a registration
// listener is told of every operator already registered when it is added and
// of each one registered or removed later (a custom op defined at run time).
// Looking up a name that has no overloads (`aten::mm_`) is then a map miss,
// not a scan of every registered operator.
class OverloadIndex {
 public:
  OverloadIndex() {
    // Outside mu_: adding the listener calls it back for every existing operator.
    handle_ = c10::Dispatcher::singleton().addRegistrationListener(std::make_unique<Listener>(*this));
  }

  std::vector<std::string> overloads(const std::string& name) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = by_name_.find(name);
    return it == by_name_.end() ? std::vector<std::string>{} : it->second;
  }

 private:
  class Listener : public c10::OpRegistrationListener {
   public:
    explicit Listener(OverloadIndex& index) : index_(index) {}
    void onOperatorRegistered(const c10::OperatorHandle& op) override {
      std::lock_guard<std::mutex> lock(index_.mu_);
      index_.by_name_[op.operator_name().name].push_back(op.operator_name().overload_name);
    }
    void onOperatorDeregistered(const c10::OperatorHandle& op) override {
      std::lock_guard<std::mutex> lock(index_.mu_);
      auto& names = index_.by_name_[op.operator_name().name];
      names.erase(std::remove(names.begin(), names.end(), op.operator_name().overload_name), names.end());
    }

   private:
    OverloadIndex& index_;
  };

  std::mutex mu_;
  std::unordered_map<std::string, std::vector<std::string>> by_name_;
  std::optional<c10::RegistrationHandleRAII> handle_;
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
