#include "inductor_contract.h"

#include <algorithm>
#include <functional>
#include <unordered_map>
#include <unordered_set>
#include <utility>

namespace fxinplace::checker {
namespace {

std::string operand_text(const Operand& o) { return o.arg + " (" + o.source + ")"; }

// Byte address of element `flat` (row-major) of a tensor of sizes `target`,
// read from `ref` broadcast to them; nullopt where `ref` does not broadcast.
std::optional<int64_t> broadcast_address(const TensorRef& ref, const std::vector<int64_t>& target,
                                         int64_t flat) {
  if (ref.sizes.size() > target.size() || ref.sizes.size() != ref.strides.size()) return std::nullopt;
  const size_t lead = target.size() - ref.sizes.size();
  int64_t element = ref.offset;
  for (size_t d = target.size(); d-- > 0;) {
    const int64_t size = target[d];
    const int64_t index = size > 0 ? flat % size : 0;
    flat = size > 0 ? flat / size : 0;
    if (d < lead) continue;
    const int64_t mine = ref.sizes[d - lead];
    if (mine == size)
      element += index * ref.strides[d - lead];
    else if (mine != 1)
      return std::nullopt;
  }
  return element * ref.itemsize;
}

struct CellKey {
  int32_t storage;
  int64_t byte;
  int64_t index;
  bool operator==(const CellKey& o) const {
    return storage == o.storage && byte == o.byte && index == o.index;
  }
};

struct CellKeyHash {
  size_t operator()(const CellKey& k) const {
    size_t h = std::hash<int64_t>()(k.byte);
    h ^= std::hash<int64_t>()(k.index) + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
    h ^= std::hash<int32_t>()(k.storage) + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
    return h;
  }
};

// A read of the written buffer found inside the write's kernel.
struct Hazard {
  int64_t element = -1;       // the written tensor's element read
  int64_t index = -1;         // the loop index (element written) it is read for; -1: every index
  std::vector<int32_t> path;  // the inlined producers, from the write's operand to the read
  int32_t writer = -1;        // the node that wrote the element read (-1: the input's original contents)
};

// Follows one write's operands back through the nodes Inductor would inline
// into its kernel, looking for a read of the written tensor `dst`.
class Walk {
 public:
  Walk(const CheckGraph& graph, const TagMemory& memory,
       const std::function<bool(int32_t, int32_t, int32_t)>& written_between, int32_t write,
       const TensorRef& dst, bool exempt_original)
      : graph_(graph),
        memory_(memory),
        written_between_(written_between),
        write_(write),
        dst_(dst),
        exempt_original_(exempt_original) {
    const std::vector<int64_t> addresses = element_addresses(dst);
    numel_ = static_cast<int64_t>(addresses.size());
    for (int64_t e = 0; e < numel_; ++e) starts_.emplace(addresses[e], e);
  }

  // `operand` read at the write's loop index: element i of dst from element i
  // of the operand broadcast to dst's sizes.
  bool aligned(const TensorRef& operand) {
    for (int64_t i = 0; i < numel_; ++i) {
      const std::optional<int64_t> at = broadcast_address(operand, dst_.sizes, i);
      if (!at) return any(operand);
      if (trace(operand.storage, *at, operand.itemsize, i)) return true;
    }
    return false;
  }

  // Every element of `operand` read for every element written.
  bool any(const TensorRef& operand) {
    for (int64_t at : element_addresses(operand))
      if (trace(operand.storage, at, operand.itemsize, -1)) return true;
    return false;
  }

  const Hazard& hazard() const { return hazard_; }

 private:
  // Bytes [byte, byte + len) of `storage`, read for loop index `index`.
  bool trace(int32_t storage, int64_t byte, int64_t len, int64_t index) {
    if (storage == dst_.storage) return leaf(byte, len, index);
    const int64_t g = memory_.granularity(storage);
    for (int64_t b = byte; b < byte + len;) {
      const int64_t end = std::min(byte + len, (b / g + 1) * g);
      if (visited_.insert(CellKey{storage, b, index}).second) {
        const int32_t writer = memory_.byte_writer(storage, b);
        if (writer >= 0 && writer < write_ && through(writer, storage, b, end - b, index)) return true;
      }
      b = end;
    }
    return false;
  }

  // A read of dst's storage: a hazard unless it is the element written at the
  // same index (or dst has one element, read for any index).
  bool leaf(int64_t byte, int64_t len, int64_t index) {
    const int64_t size = dst_.itemsize;
    for (int64_t start = byte - byte % size; start < byte + len; start += size) {
      const auto found = starts_.find(start);
      if (found == starts_.end()) continue;
      const int64_t element = found->second;
      if (index >= 0 ? element == index : numel_ == 1) continue;
      const int64_t lo = std::max(byte, start), hi = std::min(byte + len, start + size);
      int32_t writer = -1;
      for (int64_t b = lo; b < hi && writer < 0; ++b) writer = memory_.byte_writer(dst_.storage, b);
      // Inductor's own write-back reading the input under its old name, or
      // what another of the functional graph's write-backs put there (inputs
      // that share memory, which AOTAutograd hands Inductor as one base): the
      // functional graph's own epilogue, not a rewrite's doing.
      if (exempt_original_ && (writer < 0 || original_write_back(writer))) continue;
      hazard_ = Hazard{element, index, path_, writer};
      return true;
    }
    return false;
  }

  bool original_write_back(int32_t p) const {
    const CheckNode& node = graph_.nodes[p];
    return node.write_rule == WriteRule::kWriteBack && node.counterpart >= 0;
  }

  // The bytes were last written by node `p`: read what p's kernel reads for them,
  // if Inductor inlines p.
  bool through(int32_t p, int32_t storage, int64_t byte, int64_t len, int64_t index) {
    const CheckNode& node = graph_.nodes[p];
    if (node.write_rule != WriteRule::kNone || node.is_output) return false;  // a write: realized
    if (node.inductor != InductorCode::kPointwise && node.inductor != InductorCode::kAnyIndex) return false;
    if (realized(p)) return false;
    // The effect of p that wrote these bytes last, and the element.
    for (size_t k = node.effects.size(); k-- > 0;) {
      const Effect& e = node.effects[k];
      if (e.kind == EffectKind::kGrow || e.dst.storage != storage) continue;
      const auto& starts = effect_starts(p, k);
      const int64_t start = byte - byte % e.dst.itemsize;
      const auto found = starts.find(start);
      if (found == starts.end()) continue;
      const int64_t j = found->second;
      path_.push_back(p);
      bool hit = false;
      if (e.kind == EffectKind::kCopy) {
        // A value moved: element j of the source, whatever the node's code.
        const std::vector<int64_t>& from = source_addresses(p, k);
        hit = trace(e.src.storage, from[j] + (byte - start), len, index);
      } else if (node.inductor == InductorCode::kPointwise) {
        // A `_foreach_*` node computes its result k from list element k's operands.
        const bool per_element = node.element_of.size() == node.reads.size();
        for (size_t r = 0; r < node.reads.size(); ++r) {
          const Operand& q = node.reads[r];
          if (!q.values_read) continue;
          if (per_element && node.element_of[r] >= 0 && node.element_of[r] != static_cast<int32_t>(k))
            continue;
          const std::optional<int64_t> at = broadcast_address(q.ref, e.dst.sizes, j);
          hit = at ? trace(q.ref.storage, *at, q.ref.itemsize, index) : any_of(q.ref);
          if (hit) break;
        }
      } else {
        hit = every_operand(p);
      }
      if (!hit) path_.pop_back();
      return hit;
    }
    return false;
  }

  bool any_of(const TensorRef& ref) {
    for (int64_t at : element_addresses(ref))
      if (trace(ref.storage, at, ref.itemsize, -1)) return true;
    return false;
  }

  // A kAnyIndex node: every element of every operand, for every index.
  bool every_operand(int32_t p) {
    if (!whole_.insert(p).second) return false;
    for (const Operand& q : graph_.nodes[p].reads)
      if (q.values_read && any_of(q.ref)) return true;
    return false;
  }

  // Inductor realizes a node whose operand is mutated before the write runs,
  // and a node whose own result is mutated before it (an extern op writing
  // into it in place, e.g. an auto_functionalized op Inductor reinplaces into
  // a dead buffer): the mutation needs the buffer to exist.
  //
  //     s = sub(fill, neg)          # kernel 1 writes s
  //     af = auto_functionalized_v2(op_, _all_bases=[s])   # extern: op_(s[0])
  //     copy_(x, af[1])             # kernel 2 reads s: not fused with kernel 1
  bool realized(int32_t p) {
    const auto known = realized_.find(p);
    if (known != realized_.end()) return known->second;
    bool r = false;
    for (const Operand& q : graph_.nodes[p].reads) r = r || written_between_(q.ref.storage, p, write_);
    for (const Effect& e : graph_.nodes[p].effects)
      r = r || (e.kind != EffectKind::kGrow && written_between_(e.dst.storage, p, write_));
    realized_.emplace(p, r);
    return r;
  }

  const std::unordered_map<int64_t, int64_t>& effect_starts(int32_t p, size_t k) {
    auto [it, fresh] =
        starts_by_effect_.try_emplace((static_cast<int64_t>(p) << 16) + static_cast<int64_t>(k));
    if (fresh) {
      const std::vector<int64_t> addresses = element_addresses(graph_.nodes[p].effects[k].dst);
      for (size_t j = 0; j < addresses.size(); ++j) it->second.emplace(addresses[j], static_cast<int64_t>(j));
    }
    return it->second;
  }

  const std::vector<int64_t>& source_addresses(int32_t p, size_t k) {
    auto [it, fresh] = sources_.try_emplace((static_cast<int64_t>(p) << 16) + static_cast<int64_t>(k));
    if (fresh) it->second = element_addresses(graph_.nodes[p].effects[k].src);
    return it->second;
  }

  const CheckGraph& graph_;
  const TagMemory& memory_;
  const std::function<bool(int32_t, int32_t, int32_t)>& written_between_;
  int32_t write_;
  const TensorRef& dst_;
  bool exempt_original_;
  int64_t numel_ = 0;
  std::unordered_map<int64_t, int64_t> starts_;  // dst's element start byte -> element
  std::unordered_set<CellKey, CellKeyHash> visited_;
  std::unordered_set<int32_t> whole_;
  std::unordered_map<int32_t, bool> realized_;
  std::unordered_map<int64_t, std::unordered_map<int64_t, int64_t>> starts_by_effect_;
  std::unordered_map<int64_t, std::vector<int64_t>> sources_;
  std::vector<int32_t> path_;
  Hazard hazard_;
};

}  // namespace

InductorContract::InductorContract(const CheckProblem& problem, const TagMemory& memory)
    : problem_(problem),
      graph_(problem.rewritten),
      memory_(memory),
      writes_(problem.rewritten.storages.size()) {}

void InductorContract::wrote(int32_t storage, int32_t node) {
  if (storage < 0 || static_cast<size_t>(storage) >= writes_.size()) return;
  std::vector<int32_t>& log = writes_[storage];
  if (log.empty() || log.back() != node) log.push_back(node);
}

bool InductorContract::written_between(int32_t storage, int32_t after, int32_t before) const {
  if (storage < 0 || static_cast<size_t>(storage) >= writes_.size()) return false;
  const std::vector<int32_t>& log = writes_[storage];
  const auto next = std::upper_bound(log.begin(), log.end(), after);
  return next != log.end() && *next < before;
}

std::optional<ContractFinding> InductorContract::check(int32_t index) const {
  if (!problem_.inductor) return std::nullopt;
  const CheckNode& node = graph_.nodes.at(index);
  if (auto found = dtype_view(node)) return found;
  return fused_reads(index);
}

// 5a.
std::optional<ContractFinding> InductorContract::dtype_view(const CheckNode& node) const {
  std::vector<int32_t> selves;
  if (node.write_rule == WriteRule::kInplace) selves.push_back(node.self_operand);
  if (node.write_rule == WriteRule::kForeachInplace) selves = node.self_operands;
  for (int32_t s : selves) {
    if (s < 0 || static_cast<size_t>(s) >= node.reads.size()) continue;
    const Operand& self = node.reads[s];
    const int32_t buffer = graph_.storages.at(self.ref.storage).dtype;
    if (buffer < 0 || buffer == self.ref.dtype) continue;
    return ContractFinding{
        s, CheckReason::kWriteThroughDtypeView,
        "writes " + operand_text(self) + " in place, a view of another dtype than the buffer it lives in (" +
            std::to_string(self.ref.itemsize) +
            "-byte elements): Inductor lowers such a write as a value conversion into the buffer's dtype, "
            "or cannot index it (no write through a DtypeView)"};
  }
  return std::nullopt;
}

// 5b.
std::optional<ContractFinding> InductorContract::fused_reads(int32_t index) const {
  const CheckNode& node = graph_.nodes[index];
  if (node.inductor != InductorCode::kPointwise && node.inductor != InductorCode::kAnyIndex)
    return std::nullopt;
  const bool scatter = node.inductor == InductorCode::kAnyIndex;
  // Per written tensor: (its operand, the operands read at its loop index, those read at any index).
  struct Target {
    int32_t self;
    std::vector<int32_t> aligned, any;
  };
  std::vector<Target> targets;
  const int32_t n = static_cast<int32_t>(node.reads.size());
  auto add = [&](int32_t self, auto same_loop) {
    if (self < 0 || self >= n) return;
    Target t{self, {}, {}};
    for (int32_t r = 0; r < n; ++r) {
      if (r == self || !node.reads[r].values_read) continue;
      const int loop = same_loop(r);  // 1: same loop, 0: another list element's, -1: not read
      if (loop < 0) continue;
      (loop == 1 && !scatter ? t.aligned : t.any).push_back(r);
    }
    targets.push_back(std::move(t));
  };
  switch (node.write_rule) {
    case WriteRule::kWriteBack:
      // copy_(input, src): resize_ and as_strided_ read nothing.
      if (n >= 2) add(0, [](int32_t) { return 1; });
      break;
    case WriteRule::kInplace:
      add(node.self_operand, [](int32_t) { return 1; });
      break;
    case WriteRule::kForeachInplace:
      for (size_t k = 0; k < node.self_operands.size(); ++k) {
        const int32_t self = node.self_operands[k];
        add(self, [&](int32_t r) {
          const int32_t e = static_cast<size_t>(r) < node.element_of.size() ? node.element_of[r] : -1;
          if (e < 0 || e == static_cast<int32_t>(k)) return 1;
          // Another element's self is that element's own (rule 4 keeps the selves apart).
          return std::find(node.self_operands.begin(), node.self_operands.end(), r) !=
                         node.self_operands.end()
                     ? -1
                     : 0;
        });
      }
      break;
    default:
      return std::nullopt;  // custom ops run as extern kernels on realized operands
  }
  // Inductor's own write-back reads the input under its old name safely.
  const bool exempt = node.write_rule == WriteRule::kWriteBack && node.counterpart >= 0;
  const std::function<bool(int32_t, int32_t, int32_t)> between = [this](int32_t s, int32_t a, int32_t b) {
    return written_between(s, a, b);
  };
  for (const Target& t : targets) {
    const Operand& self = node.reads[t.self];
    Walk walk(graph_, memory_, between, index, self.ref, exempt);
    int32_t culprit = -1;
    for (int32_t r : t.aligned)
      if (walk.aligned(node.reads[r].ref)) {
        culprit = r;
        break;
      }
    if (culprit < 0)
      for (int32_t r : t.any)
        if (walk.any(node.reads[r].ref)) {
          culprit = r;
          break;
        }
    if (culprit < 0) continue;
    const Hazard& h = walk.hazard();
    std::string through;
    for (int32_t p : h.path) through += (through.empty() ? "" : " <- ") + graph_.nodes[p].name;
    std::string message = "writes " + operand_text(self) + " in place in a kernel Inductor fuses with the " +
                          "producers of what it writes, and operand " + operand_text(node.reads[culprit]) +
                          (through.empty() ? "" : ", computed there through " + through + ",") +
                          " reads self's element " + index_text(self.ref.sizes, h.element) +
                          (h.index >= 0 ? " for the write of element " + index_text(self.ref.sizes, h.index)
                                        : " for every element written") +
                          ": the kernel may read it after overwriting it";
    if (h.writer >= 0)
      message += " (it holds the value " + graph_.nodes[h.writer].name +
                 " wrote into that memory, which the functional graph keeps in a buffer of its own)";
    else if (!exempt)
      message += " (the write is not in the functional graph, which Inductor protects itself)";
    return ContractFinding{culprit, CheckReason::kFusedReadHazard, message};
  }
  return std::nullopt;
}

}  // namespace fxinplace::checker
