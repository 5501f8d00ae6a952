// Visiting the tensors inside a boxed argument: Tensor, Tensor[], Tensor?[].
#pragma once

#include <ATen/core/ivalue.h>

namespace fxinplace::functionalize {

template <typename Fn>
void for_each_tensor(const c10::IValue& v, Fn&& fn) {
  if (v.isTensor()) {
    fn(v.toTensor());
  } else if (v.isTensorList()) {
    for (const at::Tensor& t : v.toTensorList()) fn(t);
  } else if (v.isList()) {
    for (const c10::IValue& e : v.toListRef())
      if (e.isTensor()) fn(e.toTensor());
  }
}

// `v` with every tensor replaced by fn(tensor); other values unchanged.
template <typename Fn>
c10::IValue map_tensors(const c10::IValue& v, Fn&& fn) {
  if (v.isTensor()) return fn(v.toTensor());
  if (v.isTensorList()) {
    c10::List<at::Tensor> out;
    out.reserve(v.toTensorList().size());
    for (const at::Tensor& t : v.toTensorList()) out.push_back(fn(t));
    return out;
  }
  if (v.isList()) {
    c10::impl::GenericList in = v.toList();
    c10::impl::GenericList out(in.elementType());
    out.reserve(in.size());
    for (const c10::IValue& e : in) out.push_back(e.isTensor() ? c10::IValue(fn(e.toTensor())) : e);
    return out;
  }
  return v;
}

}  // namespace fxinplace::functionalize
