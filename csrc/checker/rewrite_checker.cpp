#include "rewrite_checker.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "inductor_contract.h"
#include "tag_memory.h"

namespace fxinplace::checker {
namespace {

// A violation of the rewritten graph, found while simulating one of its nodes.
struct Found {
  int32_t operand;
  CheckReason reason;
  std::string message;
};

std::string operand_text(const Operand& o) { return o.arg + " (" + o.source + ")"; }

// The cell size two memories can both be read at for `itemsize`-byte elements.
int64_t common_unit(int64_t a, int64_t b, int64_t itemsize) {
  const int64_t unit = std::min(a, b);
  if (std::max(a, b) % unit != 0 || itemsize % unit != 0)
    throw CannotCheck("incompatible cell sizes for " + std::to_string(itemsize) + "-byte elements");
  return unit;
}

// The cells (storage, cell index) each element of `ref` covers, in order.
std::vector<int64_t> cells_of(const TagMemory& memory, const TensorRef& ref) {
  const int64_t g = memory.granularity(ref.storage);
  std::vector<int64_t> cells;
  for (int64_t a : element_addresses(ref))
    for (int64_t c = 0; c < ref.itemsize / g; ++c) cells.push_back(a / g + c);
  return cells;
}

bool overlap(const TagMemory& memory, const TensorRef& a, const TensorRef& b) {
  if (a.storage != b.storage) return false;
  const std::vector<int64_t> cells = cells_of(memory, a);
  const std::unordered_set<int64_t> seen(cells.begin(), cells.end());
  for (int64_t c : cells_of(memory, b))
    if (seen.count(c)) return true;
  return false;
}

// One graph's simulation: its memory and how to run its nodes' effects.
class Run {
 public:
  Run(const CheckProblem& problem, const CheckGraph& graph, const TagSpace& space)
      : problem_(problem), graph_(graph), memory_(graph, space), space_(space) {}

  const CheckGraph& graph() const { return graph_; }
  const TagMemory& memory() const { return memory_; }

  // Whether `dst` is the shape of the value it receives; the caller decides
  // whether a mismatch is a violation (rewritten) or a broken problem (functional).
  std::string fill_mismatch(const Effect& e) const {
    const Slot& slot = problem_.slots.at(e.slot);
    if (slot.sizes == e.dst.sizes && slot.itemsize == e.dst.itemsize && slot.dtype == e.dst.dtype) return "";
    if (slot.sizes == e.dst.sizes) return "stores " + slot.name + "'s value in a tensor of another dtype";
    return "computes a value of shape " + sizes_text(e.dst.sizes) + " where the functional graph's " +
           slot.name + " has shape " + sizes_text(slot.sizes);
  }

  void apply(const Effect& e, int32_t writer) {
    switch (e.kind) {
      case EffectKind::kGrow:
        memory_.grow(e.dst.storage, e.nbytes);
        return;
      case EffectKind::kFill: {
        if (e.slot < 0 || static_cast<size_t>(e.slot) >= problem_.slots.size())
          throw CannotCheck("a fill names an unknown value");
        memory_.check_in_bounds(e.dst, "a written tensor");
        // One tag per element: its first byte; the others follow consecutively.
        const int64_t n = numel(e.dst.sizes);
        std::vector<Tag> tags(static_cast<size_t>(n));
        for (int64_t i = 0; i < n; ++i) tags[i] = space_.slot_tag(e.slot, i * e.dst.itemsize);
        memory_.write(e.dst, tags, e.dst.itemsize, writer);
        return;
      }
      case EffectKind::kCopy: {
        if (e.src.sizes != e.dst.sizes || e.src.itemsize != e.dst.itemsize || e.src.dtype != e.dst.dtype)
          throw CannotCheck("a copy's source and destination differ in shape or dtype");
        memory_.check_in_bounds(e.src, "a copied tensor");
        memory_.check_in_bounds(e.dst, "a written tensor");
        const int64_t unit = memory_.granularity(e.src.storage);
        // Read everything first: source and destination may overlap.
        memory_.write(e.dst, memory_.read(e.src, unit), unit, writer);
        return;
      }
    }
  }

  // Runs a functional node whole; its reads need no check.
  void run_all(int32_t index) {
    const CheckNode& node = graph_.nodes[index];
    for (const Effect& e : node.prepare) apply_functional(e, index);
    for (const Effect& e : node.effects) apply_functional(e, index);
  }

  void apply_functional(const Effect& e, int32_t index) {
    if (e.kind == EffectKind::kFill) {
      const std::string why = fill_mismatch(e);
      if (!why.empty()) throw CannotCheck("functional node " + graph_.nodes[index].name + " " + why);
    }
    apply(e, index);
  }

 private:
  const CheckProblem& problem_;
  const CheckGraph& graph_;
  TagMemory memory_;
  const TagSpace& space_;
};

class Checker {
 public:
  explicit Checker(const CheckProblem& problem)
      : problem_(problem),
        space_(problem),
        functional_(problem, problem.functional, space_),
        rewritten_(problem, problem.rewritten, space_),
        contract_(problem, rewritten_.memory()) {
    collect_write_backs();
  }

  CheckResult run() {
    CheckResult result;
    int32_t at = -1;
    try {
      const auto& nodes = problem_.rewritten.nodes;
      for (at = 0; at < static_cast<int32_t>(nodes.size()); ++at) step(at);
      at = -1;
      while (next_functional_ < static_cast<int32_t>(problem_.functional.nodes.size()))
        functional_.run_all(next_functional_++);
      check_final_inputs();
    } catch (const Found& f) {
      result.outcome = Outcome::kViolation;
      result.node = at;
      result.operand = f.operand;
      result.reason = f.reason;
      result.message = at >= 0 ? node_text(problem_.rewritten.nodes[at]) + ": " + f.message : f.message;
    } catch (const CannotCheck& e) {
      result.outcome = Outcome::kCannotCheck;
      result.node = at;
      result.reason = CheckReason::kCannotCheck;
      result.message = at >= 0 ? node_text(problem_.rewritten.nodes[at]) + ": " + e.what() : e.what();
    }
    return result;
  }

 private:
  static std::string node_text(const CheckNode& node) {
    return "node " + node.name + (node.op.empty() ? "" : " (" + node.op + ")");
  }

  // The bytes of each graph input the functional graph writes back: the only
  // ones a custom op may write in place early (README: Inductor's rule).
  void collect_write_backs() {
    written_back_.resize(problem_.inputs.size());
    const CheckGraph& g = problem_.functional;
    for (const CheckNode& node : g.nodes) {
      if (node.write_rule != WriteRule::kWriteBack) continue;
      for (const Effect& e : node.effects) {
        if (e.kind == EffectKind::kGrow) continue;
        const int32_t input = g.storages.at(e.dst.storage).input;
        if (input < 0) continue;
        std::vector<bool>& mask = written_back_[input];
        for (int64_t a : element_addresses(e.dst)) {
          if (static_cast<size_t>(a + e.dst.itemsize) > mask.size())
            mask.resize(static_cast<size_t>(a + e.dst.itemsize), false);
          std::fill(mask.begin() + a, mask.begin() + a + e.dst.itemsize, true);
        }
      }
    }
  }

  void step(int32_t index) {
    const CheckNode& node = problem_.rewritten.nodes[index];
    const CheckNode* twin = nullptr;
    if (node.counterpart >= 0) {
      if (node.counterpart >= static_cast<int32_t>(problem_.functional.nodes.size()))
        throw CannotCheck("its counterpart is not a node of the functional graph");
      if (node.counterpart < next_functional_)
        throw CannotCheck("it comes after a node that the functional graph runs after it");
      while (next_functional_ < node.counterpart) functional_.run_all(next_functional_++);
      twin = &problem_.functional.nodes[node.counterpart];
      for (const Effect& e : twin->prepare) functional_.apply_functional(e, node.counterpart);
    } else if (node.write_rule == WriteRule::kWriteBack || node.write_rule == WriteRule::kCustomOp ||
               node.is_output) {
      throw CannotCheck("it has no counterpart in the functional graph");
    }
    for (const Effect& e : node.prepare) apply_rewritten(e, node, index);
    for (size_t k = 0; k < node.reads.size(); ++k)
      rewritten_.memory().check_in_bounds(node.reads[k].ref, "operand " + operand_text(node.reads[k]));
    if (twin) compare_reads(node, *twin);
    if (node.write_rule == WriteRule::kInplace) check_inplace_aliasing(node);
    if (node.write_rule == WriteRule::kOut) check_out_aliasing(node);
    if (node.write_rule == WriteRule::kForeachInplace) check_foreach_aliasing(node);
    if (node.write_rule == WriteRule::kCustomOp) check_custom_op_aliasing(node, *twin);
    if (node.is_output) check_output_aliasing(node, *twin);
    if (node.is_output) check_output_layouts(node, *twin);
    if (const auto found = contract_.check(index)) throw Found{found->operand, found->reason, found->message};
    if (twin) {
      for (const Effect& e : twin->effects) functional_.apply_functional(e, node.counterpart);
      next_functional_ = node.counterpart + 1;
    }
    for (const Effect& e : node.effects) apply_rewritten(e, node, index);
  }

  void apply_rewritten(const Effect& e, const CheckNode& node, int32_t index) {
    if (e.kind == EffectKind::kFill) {
      const std::string why = rewritten_.fill_mismatch(e);
      const bool same_shape = problem_.slots.at(e.slot).sizes == e.dst.sizes;
      if (!why.empty())
        throw Found{-1, same_shape ? CheckReason::kWrongDtype : CheckReason::kWrongShape, why};
    }
    check_input_writes(e, node);
    rewritten_.apply(e, index);
    contract_.wrote(e.dst.storage, index);
  }

  // Rule 3: which graph input bytes a rewritten node may write.
  void check_input_writes(const Effect& e, const CheckNode& node) {
    const int32_t input = problem_.rewritten.storages.at(e.dst.storage).input;
    if (input < 0) return;
    const InputStorage& in = problem_.inputs.at(input);
    auto where = [&](int64_t byte) { return " at storage element " + std::to_string(byte / in.itemsize); };
    if (in.constant) {
      const int64_t first = e.kind == EffectKind::kGrow ? 0 : first_address(e.dst);
      throw Found{-1, CheckReason::kConstantWritten, "writes module constant " + in.name + where(first)};
    }
    // A donated buffer may be written (grown, never: that is a write-back's);
    // a write before its last read shows there as a wrong value.
    if (in.donated && e.kind != EffectKind::kGrow) return;
    const bool may = node.write_rule == WriteRule::kWriteBack || node.write_rule == WriteRule::kCustomOp ||
                     problem_.inputs_written_back_may_be_written;
    if (e.kind == EffectKind::kGrow) {
      if (node.write_rule != WriteRule::kWriteBack)
        throw Found{-1, CheckReason::kInputWritten,
                    "resizes graph input " + in.name + ", which is not a write-back"};
      return;
    }
    const std::vector<bool>& mask = written_back_[input];
    for (int64_t a : element_addresses(e.dst)) {
      if (!may)
        throw Found{-1, CheckReason::kInputWritten,
                    "writes graph input " + in.name + where(a) +
                        "; only functionalization's write-backs may write graph inputs"};
      for (int64_t b = a; b < a + e.dst.itemsize; ++b)
        if (static_cast<size_t>(b) >= mask.size() || !mask[b])
          throw Found{
              -1, CheckReason::kInputWritten,
              "writes graph input " + in.name + where(b) + ", which the functional graph never writes back"};
    }
  }

  static int64_t first_address(const TensorRef& ref) {
    const std::vector<int64_t> all = element_addresses(ref);
    return all.empty() ? 0 : all.front();
  }

  std::string holder_text(const Run& run, const TensorRef& ref, int64_t byte, Tag tag) const {
    std::string text = space_.describe(tag);
    const int32_t writer = run.memory().byte_writer(ref.storage, byte);
    if (&run == &rewritten_ && writer >= 0)
      text += " (written by " + problem_.rewritten.nodes[writer].name + ")";
    return text;
  }

  // Rule 1: every operand holds what the functional node's operand holds. For
  // a commutative op (node.commutative_pair) the first two operands may come
  // in either order (`b.add_(a)` for the functional `add(a, b)`): the value is
  // the same either way.
  //
  // A functional operand read only for its shape and dtype (zeros_like's self)
  // may have no counterpart at all: `fill_(d, 0)` standing for `zeros_like(x)`
  // (a memory plan's write into a dead buffer d) reads nothing of x, and what
  // x contributed, the result's shape and dtype, is checked where the result
  // is read.
  void compare_reads(const CheckNode& node, const CheckNode& twin) {
    // kOut: the out= buffer comes last, beyond the functional op's operands.
    const size_t extra = node.write_rule == WriteRule::kOut ? 1 : 0;
    std::vector<size_t> order;
    for (size_t k = 0; k < twin.reads.size(); ++k) order.push_back(k);
    if (node.reads.size() != twin.reads.size() + extra) {
      std::vector<size_t> valued;
      for (size_t k = 0; k < twin.reads.size(); ++k)
        if (twin.reads[k].values_read) valued.push_back(k);
      if (node.reads.size() != valued.size() + extra)
        throw Found{-1, CheckReason::kOperandCount,
                    "has " + std::to_string(node.reads.size() - extra) +
                        " tensor operands; functional node " + twin.name + " has " +
                        std::to_string(twin.reads.size())};
      order = valued;
    }
    try {
      compare_in_order(node, twin, order);
    } catch (const Found& first) {
      if (!node.commutative_pair || order.size() < 2) throw;
      std::swap(order[0], order[1]);
      try {
        compare_in_order(node, twin, order);
      } catch (const Found&) {
        throw first;
      }
    }
  }

  // node.reads[k] against twin.reads[order[k]], for every k.
  void compare_in_order(const CheckNode& node, const CheckNode& twin, const std::vector<size_t>& order) {
    for (size_t k = 0; k < order.size(); ++k) {
      const Operand& mine = node.reads[k];
      const Operand& theirs = twin.reads[order[k]];
      const int32_t operand = static_cast<int32_t>(k);
      functional_.memory().check_in_bounds(theirs.ref, "functional operand " + operand_text(theirs));
      if (mine.ref.sizes != theirs.ref.sizes)
        throw Found{operand, CheckReason::kWrongShape,
                    "operand " + operand_text(mine) + " has shape " + sizes_text(mine.ref.sizes) +
                        "; the functional graph's " + operand_text(theirs) + " has shape " +
                        sizes_text(theirs.ref.sizes)};
      if (mine.ref.itemsize != theirs.ref.itemsize || mine.ref.dtype != theirs.ref.dtype)
        throw Found{operand, CheckReason::kWrongDtype,
                    "operand " + operand_text(mine) + " has another dtype than the functional graph's " +
                        operand_text(theirs)};
      if (!mine.values_read || !theirs.values_read) continue;
      const int64_t unit =
          common_unit(rewritten_.memory().granularity(mine.ref.storage),
                      functional_.memory().granularity(theirs.ref.storage), mine.ref.itemsize);
      const std::vector<Tag> got = rewritten_.memory().read(mine.ref, unit);
      const std::vector<Tag> want = functional_.memory().read(theirs.ref, unit);
      // Where the functional graph reads uninitialised memory (the gaps of a
      // buffer laid out like a strided input), any value the rewrite reads
      // there is one it could have read (random pipelines seed 5140).
      const auto bad = std::mismatch(got.begin(), got.end(), want.begin(), [](Tag mine_tag, Tag their_tag) {
        return their_tag == 0 || mine_tag == their_tag;
      });
      if (bad.first == got.end()) continue;
      const int64_t per_element = mine.ref.itemsize / unit;
      const int64_t at = static_cast<int64_t>(bad.first - got.begin());
      const int64_t element = at / per_element;
      const int64_t byte = element_addresses(mine.ref)[element] + (at % per_element) * unit;
      throw Found{operand, CheckReason::kWrongValue,
                  "reads " + operand_text(mine) + " at element " + index_text(mine.ref.sizes, element) +
                      ", which holds " + holder_text(rewritten_, mine.ref, byte, *bad.first) +
                      "; the functional graph has " + space_.describe(*bad.second) + " there"};
    }
  }

  // Rule 4 for ATen in-place ops, ATen's own rule: the written `self` must not
  // overlap itself, and another operand may touch self's memory only by being
  // exactly self (same elements, same order) for a pointwise op.
  void check_inplace_aliasing(const CheckNode& node) {
    if (node.self_operand < 0 || static_cast<size_t>(node.self_operand) >= node.reads.size())
      throw CannotCheck("an in-place node without its self operand");
    const Operand& self = node.reads[node.self_operand];
    const TagMemory& memory = rewritten_.memory();
    const std::vector<int64_t> self_cells = cells_of(memory, self.ref);
    std::unordered_set<int64_t> seen;
    const int64_t per_element = self.ref.itemsize / memory.granularity(self.ref.storage);
    for (size_t i = 0; i < self_cells.size(); ++i) {
      if (!seen.insert(self_cells[i]).second)
        throw Found{node.self_operand, CheckReason::kSelfOverlap,
                    "writes " + operand_text(self) + " in place, but its element " +
                        index_text(self.ref.sizes, static_cast<int64_t>(i) / per_element) +
                        " shares memory with another of its elements"};
    }
    const std::vector<int64_t> self_addresses = element_addresses(self.ref);
    for (size_t k = 0; k < node.reads.size(); ++k) {
      if (static_cast<int32_t>(k) == node.self_operand) continue;
      const Operand& other = node.reads[k];
      if (other.ref.storage != self.ref.storage) continue;
      const std::vector<int64_t> cells = cells_of(memory, other.ref);
      const auto hit = std::find_if(cells.begin(), cells.end(), [&](int64_t c) { return seen.count(c) > 0; });
      if (hit == cells.end()) continue;
      const bool exactly_self = other.ref.itemsize == self.ref.itemsize &&
                                other.ref.sizes == self.ref.sizes &&
                                element_addresses(other.ref) == self_addresses;
      if (node.pointwise && exactly_self) continue;
      const int64_t element =
          (hit - cells.begin()) / (other.ref.itemsize / memory.granularity(other.ref.storage));
      throw Found{static_cast<int32_t>(k), CheckReason::kOperandOverlapsSelf,
                  "writes " + operand_text(self) + " in place while reading operand " + operand_text(other) +
                      ", whose element " + index_text(other.ref.sizes, element) + " is in self's memory" +
                      (node.pointwise ? " without being exactly self" : " (the op is not pointwise)")};
    }
  }

  // Rule 4 for an out= form writing a buffer that is none of its operands:
  // ATen's out= rule, the buffer overlaps neither itself nor any operand.
  void check_out_aliasing(const CheckNode& node) {
    if (node.self_operand < 0 || static_cast<size_t>(node.self_operand) + 1 != node.reads.size())
      throw CannotCheck("an out= node without its out operand last");
    const Operand& out = node.reads[node.self_operand];
    const TagMemory& memory = rewritten_.memory();
    std::unordered_set<int64_t> seen;
    for (int64_t c : cells_of(memory, out.ref))
      if (!seen.insert(c).second)
        throw Found{node.self_operand, CheckReason::kSelfOverlap,
                    "writes out= " + operand_text(out) + ", two of whose elements share memory"};
    for (size_t k = 0; k + 1 < node.reads.size(); ++k) {
      const Operand& other = node.reads[k];
      if (other.ref.storage != out.ref.storage) continue;
      const std::vector<int64_t> cells = cells_of(memory, other.ref);
      if (std::any_of(cells.begin(), cells.end(), [&](int64_t c) { return seen.count(c) > 0; }))
        throw Found{static_cast<int32_t>(k), CheckReason::kOperandOverlapsSelf,
                    "writes out= " + operand_text(out) + " while reading operand " + operand_text(other) +
                        ", which shares its memory"};
    }
  }

  // Rule 4 for `_foreach_*_` ops: ATen's in-place rule for each list element k
  // (self[k] does not overlap itself; an operand of element k touches self[k]
  // only by being exactly self[k], for a pointwise op), and no operand of
  // element k touches self[j] for j != k, other self elements included: the
  // kernel may process the elements in any order (CUDA's multi_tensor_apply
  // does them at once). An operand of every element (a Tensor argument beside
  // the lists) may thus touch no self element unless the list has one.
  void check_foreach_aliasing(const CheckNode& node) {
    const size_t n = node.self_operands.size();
    if (node.element_of.size() != node.reads.size())
      throw CannotCheck("a foreach node whose operands are not assigned to list elements");
    const TagMemory& memory = rewritten_.memory();
    auto is_self = [&](size_t r) {
      const int32_t e = node.element_of[r];
      return e >= 0 && static_cast<size_t>(e) < n && node.self_operands[e] == static_cast<int32_t>(r);
    };
    // Per storage, cell -> the list element whose self covers it.
    std::unordered_map<int32_t, std::unordered_map<int64_t, int32_t>> owner;
    std::vector<std::vector<int64_t>> self_addresses(n);
    for (size_t k = 0; k < n; ++k) {
      const int32_t s = node.self_operands[k];
      if (s < 0 || static_cast<size_t>(s) >= node.reads.size() ||
          node.element_of[s] != static_cast<int32_t>(k))
        throw CannotCheck("a foreach node without the self operand of its list element " + std::to_string(k));
      const Operand& self = node.reads[s];
      const int64_t per_element = self.ref.itemsize / memory.granularity(self.ref.storage);
      const std::vector<int64_t> cells = cells_of(memory, self.ref);
      auto& owned = owner[self.ref.storage];
      for (size_t i = 0; i < cells.size(); ++i) {
        const auto [it, fresh] = owned.emplace(cells[i], static_cast<int32_t>(k));
        if (fresh) continue;
        const std::string element = index_text(self.ref.sizes, static_cast<int64_t>(i) / per_element);
        if (it->second == static_cast<int32_t>(k))
          throw Found{s, CheckReason::kSelfOverlap,
                      "writes " + operand_text(self) + " in place, but its element " + element +
                          " shares memory with another of its elements"};
        throw Found{s, CheckReason::kForeachSelfOverlap,
                    "writes " + operand_text(self) + " in place, but its element " + element +
                        " shares memory with " + operand_text(node.reads[node.self_operands[it->second]]) +
                        ", which it writes too; the kernel may process the list's elements in any order"};
      }
      self_addresses[k] = element_addresses(self.ref);
    }
    for (size_t r = 0; r < node.reads.size(); ++r) {
      if (is_self(r)) continue;
      const Operand& other = node.reads[r];
      const auto found = owner.find(other.ref.storage);
      if (found == owner.end()) continue;
      const std::vector<int64_t> cells = cells_of(memory, other.ref);
      const int64_t per_element = other.ref.itemsize / memory.granularity(other.ref.storage);
      for (size_t i = 0; i < cells.size(); ++i) {
        const auto hit = found->second.find(cells[i]);
        if (hit == found->second.end()) continue;
        const int32_t k = hit->second;
        const int32_t e = node.element_of[r];
        const Operand& self = node.reads[node.self_operands[k]];
        const std::string element = index_text(other.ref.sizes, static_cast<int64_t>(i) / per_element);
        const int32_t operand = static_cast<int32_t>(r);
        if (e != k && !(e < 0 && n == 1)) {
          const std::string whose =
              e < 0 ? "read for every element of the list" : "read for element " + std::to_string(e);
          throw Found{operand, CheckReason::kOperandOverlapsOtherElement,
                      "writes " + operand_text(self) + " in place while operand " + operand_text(other) +
                          " (" + whose + ") has its element " + element +
                          " in that memory; the kernel may process the list's elements in any order"};
        }
        const bool exactly_self = other.ref.itemsize == self.ref.itemsize &&
                                  other.ref.sizes == self.ref.sizes &&
                                  element_addresses(other.ref) == self_addresses[k];
        if (node.pointwise && exactly_self) break;  // all its cells are self[k]'s
        throw Found{operand, CheckReason::kOperandOverlapsSelf,
                    "writes " + operand_text(self) + " in place while reading operand " +
                        operand_text(other) + ", whose element " + element + " is in self's memory" +
                        (node.pointwise ? " without being exactly self" : " (the op is not pointwise)")};
      }
    }
  }

  // Rule 4 for custom ops: in the functional graph the op writes fresh clones,
  // so a written operand may share memory with another operand only where the
  // functional call's operands share it too.
  void check_custom_op_aliasing(const CheckNode& node, const CheckNode& twin) {
    for (int32_t w : node.written_operands) {
      if (w < 0 || static_cast<size_t>(w) >= node.reads.size()) throw CannotCheck("a bad written operand");
      for (size_t k = 0; k < node.reads.size(); ++k) {
        if (static_cast<int32_t>(k) == w) continue;
        if (!overlap(rewritten_.memory(), node.reads[w].ref, node.reads[k].ref)) continue;
        if (overlap(functional_.memory(), twin.reads[w].ref, twin.reads[k].ref)) continue;
        throw Found{w, CheckReason::kOperandOverlapsWritten,
                    "writes " + operand_text(node.reads[w]) +
                        " in place while it shares memory with operand " + operand_text(node.reads[k]) +
                        "; in the functional graph they are separate"};
      }
    }
  }

  // Rule 2: outputs alias inputs and each other exactly as in the functional graph.
  void check_output_aliasing(const CheckNode& node, const CheckNode& twin) {
    const auto& rs = problem_.rewritten.storages;
    const auto& fs = problem_.functional.storages;
    for (size_t i = 0; i < node.reads.size(); ++i) {
      const int32_t mine = rs.at(node.reads[i].ref.storage).input;
      const int32_t theirs = fs.at(twin.reads[i].ref.storage).input;
      if (mine == theirs) continue;
      const int32_t operand = static_cast<int32_t>(i);
      if (mine >= 0)
        throw Found{operand, CheckReason::kOutputAliasesInput,
                    operand_text(node.reads[i]) + " shares memory with graph input " +
                        problem_.inputs[mine].name +
                        (theirs >= 0 ? " instead of " + problem_.inputs[theirs].name : "") +
                        "; in the functional graph it does not"};
      throw Found{operand, CheckReason::kOutputAliasesInput,
                  operand_text(node.reads[i]) + " does not share memory with graph input " +
                      problem_.inputs[theirs].name + " as it does in the functional graph"};
    }
    for (size_t i = 0; i < node.reads.size(); ++i) {
      for (size_t j = i + 1; j < node.reads.size(); ++j) {
        const bool mine = node.reads[i].ref.storage == node.reads[j].ref.storage;
        const bool theirs = twin.reads[i].ref.storage == twin.reads[j].ref.storage;
        if (mine == theirs) continue;
        throw Found{static_cast<int32_t>(j), CheckReason::kOutputAliasesOutput,
                    operand_text(node.reads[i]) + " and " + operand_text(node.reads[j]) +
                        (mine ? " share memory; in the functional graph they do not"
                              : " do not share memory as they do in the functional graph")};
      }
    }
  }

  // Rule 2: each output has the functional graph's layout, which is eager's
  // (sizes and dtype are compared with its value, rule 1): the same strides
  // and storage offset, as a caller sees them. Strides of dimensions of size
  // one and the layout of empty outputs address nothing and are not compared
  // (as Inductor's own assert_size_stride).
  // Strides, not the storage offset: an output computed in place into a view
  // of a dead intermediate (`y = x + 1; return y[1:] * 3` -> mul_ into y[1:])
  // starts where the view starts, eager's fresh result at 0 -- the stock pass
  // makes that rewrite too, and values, sizes and strides are eager's.
  void check_output_layouts(const CheckNode& node, const CheckNode& twin) {
    for (size_t i = 0; i < node.reads.size() && i < twin.reads.size(); ++i) {
      const TensorRef& mine = node.reads[i].ref;
      const TensorRef& theirs = twin.reads[i].ref;
      if (mine.sizes != theirs.sizes || numel(mine.sizes) == 0) continue;
      bool same = mine.strides.size() == theirs.strides.size();
      for (size_t d = 0; same && d < mine.sizes.size(); ++d)
        same = mine.sizes[d] == 1 || mine.strides[d] == theirs.strides[d];
      if (same) continue;
      throw Found{static_cast<int32_t>(i), CheckReason::kOutputLayout,
                  operand_text(node.reads[i]) + " has strides " + sizes_text(mine.strides) +
                      "; the functional graph's " + operand_text(twin.reads[i]) +
                      " (eager's layout) has strides " + sizes_text(theirs.strides)};
    }
  }

  // Rule 1 at the end: each graph input holds what the functional graph leaves in it.
  void check_final_inputs() {
    for (int32_t input = 0; input < static_cast<int32_t>(problem_.inputs.size()); ++input) {
      const int32_t f = storage_of(problem_.functional, input);
      const int32_t r = storage_of(problem_.rewritten, input);
      if (f < 0 || r < 0) continue;  // a graph that never sees it leaves it as it was
      const InputStorage& in = problem_.inputs[input];
      if (in.donated) continue;  // no one reads it after the graph
      const TagMemory& fm = functional_.memory();
      const TagMemory& rm = rewritten_.memory();
      if (fm.nbytes(f) != rm.nbytes(r))
        throw Found{-1, CheckReason::kFinalInput,
                    "at the end graph input " + in.name + " has " + std::to_string(rm.nbytes(r)) +
                        " bytes of storage; the functional graph leaves " + std::to_string(fm.nbytes(f))};
      const int64_t unit = std::min(fm.granularity(f), rm.granularity(r));
      for (int64_t b = 0; b < fm.nbytes(f); b += unit) {
        const Tag got = rm.byte_tag(r, b), want = fm.byte_tag(f, b);
        if (got == want) continue;
        std::string text = space_.describe(got);
        const int32_t writer = rm.byte_writer(r, b);
        if (writer >= 0) text += " (written by " + problem_.rewritten.nodes[writer].name + ")";
        throw Found{-1, CheckReason::kFinalInput,
                    "at the end, storage element " + std::to_string(b / in.itemsize) + " of graph input " +
                        in.name + " holds " + text + "; the functional graph leaves " +
                        space_.describe(want) + " there"};
      }
    }
  }

  static int32_t storage_of(const CheckGraph& graph, int32_t input) {
    for (size_t s = 0; s < graph.storages.size(); ++s)
      if (graph.storages[s].input == input) return static_cast<int32_t>(s);
    return -1;
  }

  const CheckProblem& problem_;
  TagSpace space_;
  Run functional_;
  Run rewritten_;
  InductorContract contract_;  // rule 5, when problem_.inductor
  int32_t next_functional_ = 0;
  std::vector<std::vector<bool>> written_back_;  // per input, per byte
};

}  // namespace

CheckResult check_rewrite(const CheckProblem& problem) {
  try {
    return Checker(problem).run();
  } catch (const CannotCheck& e) {  // while setting up
    CheckResult result;
    result.outcome = Outcome::kCannotCheck;
    result.reason = CheckReason::kCannotCheck;
    result.message = e.what();
    return result;
  }
}

}  // namespace fxinplace::checker
