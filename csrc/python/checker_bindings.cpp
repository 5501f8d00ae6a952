// Reads the checker's problem from the plain tuples python/fxinplace/_checker/
// builds (layouts below) and returns its finding as a tuple. The enums that
// cross are py::enum_s: CheckEffect, CheckWriteRule, CheckInductorCode,
// CheckOutcome and CheckReason (the checker's verdicts, check_reasons.h).
#include "python/checker_bindings.h"

#include <pybind11/stl.h>

#include "checker/rewrite_checker.h"

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
    e.kind = t[0].cast<EffectKind>();
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

// (storages, nodes); storage = (nbytes, granularity, input, dtype); node = (name, op,
// counterpart, prepare, reads, effects, write_rule, pointwise, self_operand,
// written_operands, is_output, self_operands, element_of, commutative_pair, inductor)
CheckGraph read_graph(const py::handle& h) {
  auto t = h.cast<py::tuple>();
  CheckGraph g;
  for (const py::handle& item : t[0].cast<py::list>()) {
    auto s = item.cast<py::tuple>();
    if (s.size() != 4)
      throw py::value_error("check_rewrite: a storage is (nbytes, granularity, input, dtype)");
    g.storages.push_back(
        StorageDecl{s[0].cast<int64_t>(), s[1].cast<int64_t>(), s[2].cast<int32_t>(), s[3].cast<int32_t>()});
  }
  for (const py::handle& item : t[1].cast<py::list>()) {
    auto n = item.cast<py::tuple>();
    if (n.size() != 15) throw py::value_error("check_rewrite: a node tuple has 15 fields");
    CheckNode node;
    node.name = n[0].cast<std::string>();
    node.op = n[1].cast<std::string>();
    node.counterpart = n[2].cast<int32_t>();
    node.prepare = read_effects(n[3]);
    node.reads = read_operands(n[4]);
    node.effects = read_effects(n[5]);
    node.write_rule = n[6].cast<WriteRule>();
    node.pointwise = n[7].cast<bool>();
    node.self_operand = n[8].cast<int32_t>();
    node.written_operands = n[9].cast<std::vector<int32_t>>();
    node.is_output = n[10].cast<bool>();
    node.self_operands = n[11].cast<std::vector<int32_t>>();
    node.element_of = n[12].cast<std::vector<int32_t>>();
    node.commutative_pair = n[13].cast<bool>();
    node.inductor = n[14].cast<InductorCode>();
    g.nodes.push_back(std::move(node));
  }
  return g;
}

// (inputs, slots, functional, rewritten, inputs_written_back_may_be_written, inductor); input = (name,
// nbytes, itemsize, constant); slot = (name, sizes, itemsize, dtype). Returns a CheckResult.
CheckResult check(const py::tuple& problem_tuple) {
  if (problem_tuple.size() != 6)
    throw py::value_error(
        "check_rewrite: the problem is (inputs, slots, functional, rewritten, "
        "inputs_written_back_may_be_written, inductor)");
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
  problem.inputs_written_back_may_be_written = problem_tuple[4].cast<bool>();
  problem.inductor = problem_tuple[5].cast<bool>();
  CheckResult result;
  {
    py::gil_scoped_release release;
    result = check_rewrite(problem);
  }
  return result;
}

}  // namespace

void bind_checker(py::module_& m) {
  py::enum_<EffectKind>(m, "CheckEffect", "What a checker effect does to memory (check_model.h).")
      .value("FILL", EffectKind::kFill)
      .value("COPY", EffectKind::kCopy)
      .value("GROW", EffectKind::kGrow);
  py::enum_<WriteRule>(m, "CheckWriteRule", "Which aliasing and input rules a checked node's writes follow.")
      .value("NONE", WriteRule::kNone)
      .value("INPLACE", WriteRule::kInplace)
      .value("WRITE_BACK", WriteRule::kWriteBack)
      .value("CUSTOM_OP", WriteRule::kCustomOp)
      .value("FOREACH_INPLACE", WriteRule::kForeachInplace);
  py::enum_<InductorCode>(m, "CheckInductorCode", "How Inductor runs a checked node (inductor_contract.h).")
      .value("NONE", InductorCode::kNone)
      .value("EXTERN", InductorCode::kExtern)
      .value("POINTWISE", InductorCode::kPointwise)
      .value("ANY_INDEX", InductorCode::kAnyIndex);
  py::enum_<Outcome>(m, "CheckOutcome")
      .value("OK", Outcome::kOk)
      .value("VIOLATION", Outcome::kViolation)
      .value("CANNOT_CHECK", Outcome::kCannotCheck);
  // Python names are the stable names (CheckReason.wrong_value.name == "wrong_value").
  py::enum_<CheckReason> reason(m, "CheckReason", "The checker's verdicts (csrc/checker/check_reasons.h).");
#define FXINPLACE_BIND_CHECK_REASON(id, name, text) reason.value(name, CheckReason::id);
  FXINPLACE_CHECK_REASONS(FXINPLACE_BIND_CHECK_REASON)
#undef FXINPLACE_BIND_CHECK_REASON
  reason.def_property_readonly(
      "text", [](CheckReason r) { return check_reason_text(r); }, "What it means, in words.");
  py::class_<CheckResult>(m, "CheckResult", "The checker's verdict on one rewrite.")
      .def_readonly("outcome", &CheckResult::outcome)
      .def_readonly("node", &CheckResult::node,
                    "index of the rewritten node; -1: after the last (final inputs)")
      .def_readonly("operand", &CheckResult::operand, "index into that node's reads, or -1")
      .def_readonly("reason", &CheckResult::reason)
      .def_readonly("message", &CheckResult::message, "names the node, the operand and the values involved");
  m.def("check_rewrite", &check, py::arg("problem"),
        "Simulate a functional graph and its rewrite on tagged memory (see csrc/checker/rewrite_checker.h).");
}

}  // namespace fxinplace::python
