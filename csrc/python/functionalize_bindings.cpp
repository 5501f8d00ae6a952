#include "python/functionalize_bindings.h"

#include <torch/csrc/jit/python/pybind_utils.h>
#include <torch/csrc/utils/pybind.h>

#include <cstdint>
#include <optional>

#include "functionalize/auto_functionalize.h"
#include "functionalize/dispatch_key.h"
#include "functionalize/functional_tensor.h"
#include "functionalize/input_alias_set.h"
#include "functionalize/meta_geometry.h"
#include "functionalize/region.h"

namespace py = pybind11;
namespace fz = fxinplace::functionalize;

namespace fxinplace::python {
namespace {

// `with region:` — Python decides when the region starts and ends.
class Region {
 public:
  explicit Region(bool reapply_views) : reapply_views_(reapply_views) {}
  void enter() { guard_.emplace(reapply_views_); }
  void exit() { guard_.reset(); }

 private:
  bool reapply_views_;
  std::optional<fz::RegionGuard> guard_;
};

c10::IValue to_ivalue(const py::handle& item) {
  if (item.is_none()) return c10::IValue();
  if (THPVariable_Check(item.ptr())) return py::cast<at::Tensor>(item);
  c10::List<at::Tensor> list;
  for (const py::handle& t : item) list.push_back(py::cast<at::Tensor>(t));
  return list;
}

void install_hook(const py::object& callable) {
  // Leaked on purpose: the hook lives as long as the process, and a py::object
  // must not be destroyed after the interpreter has shut down.
  auto* fn = new py::object(callable);
  fz::set_auto_functionalize_hook([fn](const c10::OperatorHandle& op, const std::vector<c10::IValue>& args,
                                       const std::vector<std::vector<fz::MutatedView>>& mutated,
                                       const std::vector<at::Tensor>& bases) {
    py::gil_scoped_acquire gil;
    py::list py_args;
    for (const c10::IValue& a : args) py_args.append(torch::jit::toPyObject(a));
    py::list py_mutated;
    for (const auto& views : mutated) {
      py::list per_arg;
      for (const fz::MutatedView& v : views)
        per_arg.append(
            py::make_tuple(v.base_index, py::cast(v.size), py::cast(v.stride), py::cast(v.storage_offset)));
      py_mutated.append(per_arg);
    }
    py::list py_bases;
    for (const at::Tensor& b : bases) py_bases.append(py::cast(b));
    const c10::OperatorName& name = op.operator_name();
    py::object out = (*fn)(name.name, name.overload_name, py_args, py_mutated, py_bases);
    std::vector<c10::IValue> results;
    for (const py::handle& item : out) results.push_back(to_ivalue(item));
    return results;
  });
}

}  // namespace

void bind_functionalize(py::module_& m) {
  m.def("register", &fz::register_fallback,
        "Registers the functionalization fallback on its dispatch key (once; errors if the key is taken).");
  m.def("dispatch_key", [] { return c10::toString(fz::kFunctionalizeKey); });
  m.def("region_active", &fz::region_active);
  m.def("reapply_views", &fz::reapply_views);
  m.def("from_current_region", [](const at::Tensor& t) {
    return fz::functional_impl(t)->alias()->region() == fz::current_region();
  });
  m.def(
      "alias_group",
      [](const at::Tensor& t) {
        return reinterpret_cast<std::uintptr_t>(fz::functional_impl(t)->alias().get());
      },
      "An id of the functional tensor's alias group (the tensors over one storage).");
  m.def("is_functional", [](const at::Tensor& t) { return fz::is_functional(t); });
  m.def(
      "wrap",
      [](const at::Tensor& t, bool eager_layout) {
        TORCH_CHECK(!fz::is_functional(t), "fxinplace.functionalize: the tensor is already functional");
        return fz::wrap_new(t, eager_layout);
      },
      py::arg("t"), py::arg("eager_layout") = false,
      "Wraps t in a new functional tensor; eager_layout: t is laid out as eager lays it out (an input).");
  m.def("unwrap", [](const at::Tensor& t, bool reapply_views) {
    TORCH_CHECK(fz::is_functional(t), "fxinplace.functionalize: not a functional tensor");
    fz::join_inputs_if_needed(t, /*addresses_storage=*/false, reapply_views);
    c10::impl::ExcludeDispatchKeyGuard exclude(fz::kFunctionalizeKey);
    return fz::unwrap_synced(t, reapply_views);
  });
  m.def("share_inputs", &fz::InputAliasSet::share, py::arg("wrapped"), py::arg("originals"),
        "Inputs that share one storage (or one input with gaps), each already wrapped: joined into one alias "
        "group where the sharing shows (see csrc/functionalize/input_alias_set.h).");
  m.def(
      "joined_base",
      [](const at::Tensor& t) -> std::optional<at::Tensor> {
        const auto& set = fz::functional_impl(t)->alias()->input_set();
        if (!set || !set->joined()) return std::nullopt;
        return set->flat_base();
      },
      py::arg("t"),
      "The flat base an input's set was joined over (the unwrapped value it started as), or None while "
      "its inputs are separate.");
  m.def(
      "eager_geometry",
      [](const at::Tensor& t, const at::Tensor& original) -> std::optional<py::tuple> {
        fz::FunctionalTensorImpl* impl = fz::functional_impl(t);
        c10::impl::ExcludeDispatchKeyGuard exclude(fz::kFunctionalizeKey);
        impl->rebase_if_needed();
        const bool resized = impl->alias()->base_version() > 0;
        // An input of a joined set with no views is the set's flat base itself
        // (x2 = x0.t() of a 0-dim x0, then x2.unsqueeze_(0): random pipelines
        // seed 100051): its geometry is the base's, not the input's own.
        const auto& set = impl->alias()->input_set();
        const bool joined = set && set->joined();
        if (impl->views().empty() && !resized && !joined) return std::nullopt;
        at::Tensor where =
            fz::measure_on_meta(resized ? impl->alias()->eager_base_layout() : original, impl->views());
        return py::make_tuple(where.sym_sizes().vec(), where.sym_strides().vec(), where.sym_storage_offset());
      },
      "Where eager leaves an input in its storage (size, stride, storage_offset) when in-place view ops "
      "(t_, unsqueeze_) or resizing (resize_, out=) changed its metadata; None otherwise. `original` is the "
      "input's base as it entered (the input, or the flat base of inputs sharing a storage).");
  m.def(
      "resized_base_sizes",
      [](const at::Tensor& t) -> std::optional<std::vector<c10::SymInt>> {
        const auto& alias = fz::functional_impl(t)->alias();
        if (alias->base_version() == 0) return std::nullopt;
        return alias->eager_base_layout().sym_sizes().vec();
      },
      "The sizes of the input's base after resize_/out= resized it (None if it was not resized): the input "
      "is resized to them first, so its storage grows as in eager.");
  m.def(
      "left_behind",
      [](const at::Tensor& t, bool reapply_views) -> py::list {
        const std::shared_ptr<fz::AliasState>& alias = fz::functional_impl(t)->alias();
        py::list out;
        if (alias->base_version() > 0) {
          for (const fz::AliasState::LeftBehind& left : alias->left_behind())
            out.append(
                py::make_tuple(py::make_tuple(left.layout.sym_sizes().vec(), left.layout.sym_strides().vec(),
                                              left.layout.sym_storage_offset()),
                               left.value));
          return out;
        }
        if (!alias->mutated()) return out;
        c10::impl::ExcludeDispatchKeyGuard exclude(fz::kFunctionalizeKey);
        out.append(py::make_tuple(py::none(), alias->base(reapply_views)));
        return out;
      },
      py::arg("t"), py::arg("reapply_views"),
      "What the memory of the input's alias group holds at each layout its base left, oldest first, as "
      "(geometry, value): each time a resize replaced the base after a write, eager's geometry of the base "
      "before (sizes, strides, storage offset) and its value then; without a resize, (None, the written "
      "base at the input's own geometry) where it was written. Written back before the input's final value, "
      "they restore the memory an in-place view op or a shrinking resize left the input off.");
  m.def(
      "storage_span",
      [](const at::Tensor& t) -> std::optional<py::tuple> {
        fz::FunctionalTensorImpl* impl = fz::functional_impl(t);
        c10::impl::ExcludeDispatchKeyGuard exclude(fz::kFunctionalizeKey);
        impl->rebase_if_needed();
        const std::shared_ptr<fz::AliasState>& alias = impl->alias();
        if (alias->base_version() > 0) {
          // (A resize to explicit strides lays the base out otherwise; not spanned.)
          const at::Tensor layout = alias->eager_base_layout();
          if (!layout.is_contiguous()) return std::nullopt;
          return py::make_tuple(layout.sym_numel(), layout.sym_storage_offset(), /*grown=*/true);
        }
        const auto& set = alias->input_set();
        if (set && set->joined() && set->addressed() && alias->mutated())
          return py::make_tuple(alias->base_value().sym_numel(), c10::SymInt(0), /*grown=*/false);
        return std::nullopt;
      },
      py::arg("t"),
      "The memory an input's writes may have reached beyond its own elements, as (numel, storage offset, "
      "grown), or None: a joined input set that as_strided addressed (its flat base, from offset 0), or "
      "an input's group whose storage an out=/resize_ of a view grew (grown: from the base's offset, maybe "
      "past the storage the input came with).");
  m.def(
      "storage_span_value",
      [](const at::Tensor& t, bool reapply_views) {
        fz::FunctionalTensorImpl* impl = fz::functional_impl(t);
        c10::impl::ExcludeDispatchKeyGuard exclude(fz::kFunctionalizeKey);
        impl->rebase_if_needed();
        const at::Tensor& value = impl->alias()->base(reapply_views);
        if (value.dim() == 1) return value;
        const c10::SymInt numel = value.sym_numel();
        return reapply_views ? value.reshape_symint({numel})
                             : at::view_copy_symint(value.contiguous(), {numel});
      },
      py::arg("t"), py::arg("reapply_views"), "The value of the memory storage_span describes, flat.");
  m.def("mutated", [](const at::Tensor& t) { return fz::functional_impl(t)->alias()->mutated(); });
  m.def(
      "storage_changed", [](const at::Tensor& t) { return fz::functional_impl(t)->storage_changed(); },
      "Whether set_() pointed the tensor at another tensor's storage.");
  m.def(
      "written_with_grad",
      [](const at::Tensor& t) { return fz::functional_impl(t)->alias()->written_with_grad(); },
      "Whether some write into the tensor's alias group happened with grad mode on.");
  m.def("set_auto_functionalize_hook", &install_hook);
  py::class_<Region>(m, "Region")
      .def(py::init<bool>())
      .def("__enter__", &Region::enter)
      .def("__exit__", [](Region& r, const py::args&) { r.exit(); });
}

}  // namespace fxinplace::python
