// Facts about an operator overload read from its registered schema through the
// c10 dispatcher: is it a view, does it write its arguments, which in-place
// overload (if any) computes the same thing into `self`.
#pragma once

#include <string>
#include <vector>

namespace fxinplace::torch_bridge {

enum class ViewKind : int { kNone = 0, kSingle = 1, kMulti = 2 };

struct OpFacts {
  bool found = false;           // the dispatcher knows this overload
  bool self_is_tensor = false;  // first argument is exactly `Tensor`
  ViewKind view = ViewKind::kNone;
  bool mutates = false;  // some argument is annotated as written (`Tensor(a!)`)
  bool pointwise = false;
  std::string first_arg_name;    // so a `self` passed by keyword can be found
  std::string inplace_overload;  // overload name of `<name>_`, when one matches
  bool has_inplace = false;
};

// `name` is qualified ("aten::add"), `overload` may be empty for `.default`.
OpFacts op_facts(const std::string& name, const std::string& overload);

// Overload names registered under a qualified name ("aten::add" -> {"Tensor", "Scalar", "out", ...}).
std::vector<std::string> overloads_of(const std::string& name);

}  // namespace fxinplace::torch_bridge
