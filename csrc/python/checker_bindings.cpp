// Reads the checker's problem from the plain tuples python/fxinplace/_check.py
// builds (layouts documented there) and returns its finding as a tuple.
#include "python/checker_bindings.h"

#include <pybind11/stl.h>

#include "core/rewrite_checker.h"

namespace py = pybind11;
using namespace fxinplace::checker;

namespace fxinplace::python {
namespace {

// (storage, sizes, strides, offset, itemsize, dtype)
TensorRef read_ref(const py::handle& h) {
  TensorRef r;
  if (h.is_none()) return r;
  auto t = h.cast<py::tuple>();
  r.storage = t[0].cast<int32_t>();
  r.sizes = t[1].cast<std::vector<int64_t>>();
  r.strides = t[2].cast<std::vector<int64_t>>();
  r.offset = t[3].cast<int64_t>();
  r.itemsize = t[4].cast<int64_t>();
  r.dtype = t[5].cast<int32_t>();
  return r;
}

// (kind, dst, src, slot, nbytes)
std::vector<Effect> read_effects(const py::handle& h) {
  std::vector<Effect> out;
  for (const py::handle& item : h.cast<py::list>()) {
    auto t = item.cast<py::tuple>();
    Effect e;
    e.kind = static_cast<EffectKind>(t[0].cast<int>());
    e.dst = read_ref(t[1]);
    e.src = read_ref(t[2]);
    e.slot = t[3].cast<int32_t>();
    e.nbytes = t[4].cast<int64_t>();
    out.push_back(std::move(e));
  }
  return out;
}

// (arg, source, ref, values_read)
std::vector<Operand> read_operands(const py::handle& h) {
  std::vector<Operand> out;
  for (const py::handle& item : h.cast<py::list>()) {
    auto t = item.cast<py::tuple>();
    out.push_back(
        Operand{t[0].cast<std::string>(), t[1].cast<std::string>(), read_ref(t[2]), t[3].cast<bool>()});
  }
  return out;
}

// (storages, nodes); storage = (nbytes, granularity, input); node = (name, op,
// counterpart, prepare, reads, effects, write_rule, pointwise, self_operand,
// written_operands, is_output[, self_operands, element_of[, commutative_pair]])
CheckGraph read_graph(const py::handle& h) {
  auto t = h.cast<py::tuple>();
  CheckGraph g;
  for (const py::handle& item : t[0].cast<py::list>()) {
    auto s = item.cast<py::tuple>();
    g.storages.push_back(StorageDecl{s[0].cast<int64_t>(), s[1].cast<int64_t>(), s[2].cast<int32_t>()});
  }
  for (const py::handle& item : t[1].cast<py::list>()) {
    auto n = item.cast<py::tuple>();
    CheckNode node;
    node.name = n[0].cast<std::string>();
    node.op = n[1].cast<std::string>();
    node.counterpart = n[2].cast<int32_t>();
    node.prepare = read_effects(n[3]);
    node.reads = read_operands(n[4]);
    node.effects = read_effects(n[5]);
    node.write_rule = static_cast<WriteRule>(n[6].cast<int>());
    node.pointwise = n[7].cast<bool>();
    node.self_operand = n[8].cast<int32_t>();
    node.written_operands = n[9].cast<std::vector<int32_t>>();
    node.is_output = n[10].cast<bool>();
    if (n.size() > 12) {
      node.self_operands = n[11].cast<std::vector<int32_t>>();
      node.element_of = n[12].cast<std::vector<int32_t>>();
    }
    if (n.size() > 13) node.commutative_pair = n[13].cast<bool>();
    g.nodes.push_back(std::move(node));
  }
  return g;
}

// (inputs, slots, functional, rewritten[, inputs_written_back_may_be_written]); input = (name, nbytes,
// itemsize, constant); slot = (name, sizes, itemsize, dtype). Returns (outcome, node, operand, reason,
// message).
py::tuple check(const py::tuple& problem_tuple) {
  CheckProblem problem;
  for (const py::handle& item : problem_tuple[0].cast<py::list>()) {
    auto t = item.cast<py::tuple>();
    problem.inputs.push_back(InputStorage{t[0].cast<std::string>(), t[1].cast<int64_t>(),
                                          t[2].cast<int64_t>(), t[3].cast<bool>()});
  }
  for (const py::handle& item : problem_tuple[1].cast<py::list>()) {
    auto t = item.cast<py::tuple>();
    problem.slots.push_back(Slot{t[0].cast<std::string>(), t[1].cast<std::vector<int64_t>>(),
                                 t[2].cast<int64_t>(), t[3].cast<int32_t>()});
  }
  problem.functional = read_graph(problem_tuple[2]);
  problem.rewritten = read_graph(problem_tuple[3]);
  if (problem_tuple.size() > 4) problem.inputs_written_back_may_be_written = problem_tuple[4].cast<bool>();
  CheckResult result;
  {
    py::gil_scoped_release release;
    result = check_rewrite(problem);
  }
  return py::make_tuple(static_cast<int>(result.outcome), result.node, result.operand, result.reason,
                        result.message);
}

}  // namespace

void bind_checker(py::module_& m) {
  m.def("check_rewrite", &check, py::arg("problem"),
        "Simulate a functional graph and its rewrite on tagged memory (see csrc/core/rewrite_checker.h); "
        "returns (outcome, node, operand, reason, message), outcome 0 ok, 1 violation, 2 cannot check.");
}

}  // namespace fxinplace::python
