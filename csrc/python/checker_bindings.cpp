// Reads the checker's problem from the plain tuples python/fxinplace/_checker/
// builds (layouts below) and returns its finding as a tuple. The enums that
// cross are py::enum_s: CheckEffect, CheckWriteRule, CheckInductorCode,
// CheckOutcome and CheckReason (the checker's verdicts, check_reasons.h).
#include "python/checker_bindings.h"

#include <pybind11/stl.h>

#include "checker/rewrite_checker.h"
#include "python/enum_binding.h"

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

// (storages, nodes); storage = (nbytes, granularity, input, dtype); nodes are CheckNodes.
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
  for (const py::handle& item : t[1].cast<py::list>()) g.nodes.push_back(item.cast<const CheckNode&>());
  return g;
}

CheckNode make_node(std::string name, std::string op, int32_t counterpart, const py::list& prepare,
                    const py::list& reads, const py::list& effects, WriteRule write_rule, bool pointwise,
                    int32_t self_operand, std::vector<int32_t> written_operands, bool is_output,
                    std::vector<int32_t> self_operands, std::vector<int32_t> element_of,
                    bool commutative_pair, InductorCode inductor) {
  CheckNode node;
  node.name = std::move(name);
  node.op = std::move(op);
  node.counterpart = counterpart;
  node.prepare = read_effects(prepare);
  node.reads = read_operands(reads);
  node.effects = read_effects(effects);
  node.write_rule = write_rule;
  node.pointwise = pointwise;
  node.self_operand = self_operand;
  node.written_operands = std::move(written_operands);
  node.is_output = is_output;
  node.self_operands = std::move(self_operands);
  node.element_of = std::move(element_of);
  node.commutative_pair = commutative_pair;
  node.inductor = inductor;
  return node;
}

// (inputs, slots, functional, rewritten, inputs_written_back_may_be_written, inductor); input = (name,
// nbytes, itemsize, constant, donated); slot = (name, sizes, itemsize, dtype). Returns a CheckResult.
CheckResult check(const py::tuple& problem_tuple) {
  if (problem_tuple.size() != 6)
    throw py::value_error(
        "check_rewrite: the problem is (inputs, slots, functional, rewritten, "
        "inputs_written_back_may_be_written, inductor)");
  CheckProblem problem;
  for (const py::handle& item : problem_tuple[0].cast<py::list>()) {
    auto t = item.cast<py::tuple>();
    if (t.size() != 5)
      throw py::value_error("check_rewrite: an input is (name, nbytes, itemsize, constant, donated)");
    problem.inputs.push_back(InputStorage{t[0].cast<std::string>(), t[1].cast<int64_t>(),
                                          t[2].cast<int64_t>(), t[3].cast<bool>(), t[4].cast<bool>()});
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
  bind_enum<EffectKind>(
      m, "CheckEffect", "What a checker effect does to memory (check_model.h).",
      {{"FILL", EffectKind::kFill}, {"COPY", EffectKind::kCopy}, {"GROW", EffectKind::kGrow}});
  bind_enum<WriteRule>(m, "CheckWriteRule", "Which aliasing and input rules a checked node's writes follow.",
                       {{"NONE", WriteRule::kNone},
                        {"INPLACE", WriteRule::kInplace},
                        {"WRITE_BACK", WriteRule::kWriteBack},
                        {"CUSTOM_OP", WriteRule::kCustomOp},
                        {"FOREACH_INPLACE", WriteRule::kForeachInplace},
                        {"OUT", WriteRule::kOut}});
  bind_enum<InductorCode>(m, "CheckInductorCode", "How Inductor runs a checked node (inductor_contract.h).",
                          {{"NONE", InductorCode::kNone},
                           {"EXTERN", InductorCode::kExtern},
                           {"POINTWISE", InductorCode::kPointwise},
                           {"ANY_INDEX", InductorCode::kAnyIndex}});
  bind_enum<Outcome>(
      m, "CheckOutcome", "Whether a rewrite was proven, refuted, or could not be checked.",
      {{"OK", Outcome::kOk}, {"VIOLATION", Outcome::kViolation}, {"CANNOT_CHECK", Outcome::kCannotCheck}});
  // Python names are the stable names (CheckReason.wrong_value.name == "wrong_value").
  py::enum_<CheckReason> reason(m, "CheckReason", "The checker's verdicts (csrc/checker/check_reasons.h).");
#define FXINPLACE_BIND_CHECK_REASON(id, name, text) reason.value(name, CheckReason::id);
  FXINPLACE_CHECK_REASONS(FXINPLACE_BIND_CHECK_REASON)
#undef FXINPLACE_BIND_CHECK_REASON
  reason.def_property_readonly(
      "text", [](CheckReason r) { return check_reason_text(r); }, "What it means, in words.");
  py::class_<CheckNode>(
      m, "CheckNode",
      "One node of a checked graph (check_model.h): what it reads, what it does to memory, "
      "and which rules its writes follow. reads: (arg, source, ref, values_read); effects and "
      "prepare: (CheckEffect, dst ref, src ref, slot, nbytes); ref: (storage, sizes, strides, "
      "offset, itemsize, dtype).")
      .def(py::init(&make_node), py::kw_only(), py::arg("name"), py::arg("op"), py::arg("counterpart"),
           py::arg("prepare"), py::arg("reads"), py::arg("effects"), py::arg("write_rule"),
           py::arg("pointwise") = false, py::arg("self_operand") = -1,
           py::arg("written_operands") = std::vector<int32_t>{}, py::arg("is_output") = false,
           py::arg("self_operands") = std::vector<int32_t>{}, py::arg("element_of") = std::vector<int32_t>{},
           py::arg("commutative_pair") = false, py::arg("inductor"))
      .def_readonly("name", &CheckNode::name);
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
