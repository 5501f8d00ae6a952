// What the rewrite checker knows of a graph run at concrete sizes: storages of
// tagged bytes, tensors as (storage, sizes, strides, offset, itemsize), and for
// each node what it reads and what it writes. Torch-free: the frontend
// (python/fxinplace/_checker/) fills it from real runs of both graphs.
//
// Shares nothing with the planner: no geometry, alias classes or overlap
// reasoning of its own beyond enumerating element addresses one by one.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "check_reasons.h"

namespace fxinplace::checker {

// Which value a byte holds. 0 is "never written" (uninitialised memory); any
// other tag names one byte of one value of the functional graph, or one byte of
// the original contents of a graph input (see TagSpace). Equal tags mean
// provably equal bytes.
using Tag = uint64_t;

struct TensorRef {
  int32_t storage = -1;          // index into its graph's storages
  std::vector<int64_t> sizes;    // logical shape
  std::vector<int64_t> strides;  // in elements
  int64_t offset = 0;            // in elements
  int64_t itemsize = 1;          // bytes per element
  int32_t dtype = 0;             // opaque code; operands compared must agree
};

struct StorageDecl {
  int64_t nbytes = 0;       // size when the storage first appears
  int64_t granularity = 1;  // bytes per cell to start with; divides the itemsize of every tensor on it
  int32_t input = -1;       // index into CheckProblem::inputs; -1: memory the graph allocates
  // The dtype (TensorRef::dtype code) of the buffer: of the tensor that
  // allocated it, or of the graph inputs on it; -1 when unknown or several.
  int32_t dtype = -1;
};

enum class EffectKind : uint8_t {
  kFill,  // dst's element e gets the tags of slot's element e: a computed value
  kCopy,  // dst's element e gets src's element e (same sizes and dtype): values moved, not computed
  kGrow,  // dst.storage grows to nbytes (resize_); the new bytes are uninitialised
};

struct Effect {
  EffectKind kind = EffectKind::kFill;
  TensorRef dst;
  TensorRef src;
  int32_t slot = -1;
  int64_t nbytes = 0;
};

struct Operand {
  std::string arg;     // what the op calls it: "self", "xs[1]", "output[0]"
  std::string source;  // the graph value passed: "clone"
  TensorRef ref;
  // False where only the operand's shape and dtype matter (copy_'s destination,
  // empty_like's input): its contents need not match.
  bool values_read = true;
};

enum class WriteRule : uint8_t {
  kNone,       // writes only memory it allocates
  kInplace,    // an ATen in-place op: writes reads[self_operand]; ATen's aliasing rules apply
  kWriteBack,  // functionalization's write-back into a graph input (copy_, resize_, as_strided_)
  kCustomOp,   // a mutable custom op (auto_functionalized_v2, or its direct call): writes written_operands
  // A `_foreach_*_` op: element k of its self list (reads[self_operands[k]]) is
  // written, ATen's in-place rule holding per element (element_of says which
  // element each operand belongs to), and no element's operands touching
  // another element's self: the kernel may process elements in any order.
  kForeachInplace,
  // An op's out= form writing a buffer that is none of its operands (a dead
  // buffer a memory plan reuses): reads[self_operand], the last read, is that
  // buffer, its values not read; the reads before it are the functional op's.
  // ATen's out= rule applies: it may not overlap itself or any operand.
  kOut,
};

// How Inductor runs a node (read only under CheckProblem::inductor; see
// inductor_contract.h). A node Inductor generates code for may be inlined into
// the kernel of a later write that uses its value; an extern one may not.
enum class InductorCode : uint8_t {
  kNone,       // not given: an extern kernel is assumed
  kExtern,     // a library kernel or fallback (mm, convolution, custom ops, higher-order ops, ...):
               // its operands are realized before it runs, its results are buffers
  kPointwise,  // generated code computing element e of each result from element e of each
               // operand (broadcast), or, for a write, writing element e of self from them
  kAnyIndex,   // generated code that may read any element of its operands for any element
               // it computes (flip, a reduction, a gather), or, for a write, a scatter
};

struct CheckNode {
  std::string name;
  std::string op;               // for messages: "aten.mul_.Tensor"
  int32_t counterpart = -1;     // rewritten graph: index of the functional node it must agree with
  std::vector<Effect> prepare;  // effects before the reads: auto_functionalized_v2's clones
  std::vector<Operand> reads;
  std::vector<Effect> effects;
  WriteRule write_rule = WriteRule::kNone;
  bool pointwise = false;     // kInplace, kForeachInplace: reading exactly self's elements is allowed
  int32_t self_operand = -1;  // kInplace: the operand written
  std::vector<int32_t> written_operands;  // kCustomOp: operands the op writes
  std::vector<int32_t> self_operands;     // kForeachInplace: per list element k, the operand written
  // kForeachInplace, and a functional `_foreach_*` node (whose effect k is its
  // result for list element k: rule 5): per read, its list element; -1: every element's.
  std::vector<int32_t> element_of;
  bool is_output = false;  // the graph's output node; reads are its tensors
  // kInplace: the op is commutative in its first two operands, which may come
  // in either order relative to the functional node's.
  bool commutative_pair = false;
  InductorCode inductor = InductorCode::kNone;  // rewritten graph, CheckProblem::inductor only
};

struct CheckGraph {
  std::vector<StorageDecl> storages;
  std::vector<CheckNode> nodes;
};

// One tensor value the functional graph computes: the tag space of kFill.
struct Slot {
  std::string name;  // "mul", "var_mean[1]", "auto_functionalized_v2 (new x)"
  std::vector<int64_t> sizes;
  int64_t itemsize = 1;
  int32_t dtype = 0;  // as TensorRef::dtype: a value lands only in a tensor of its dtype
};

struct InputStorage {
  std::string name;  // the placeholders or constants on it, for messages
  int64_t nbytes = 0;
  int64_t itemsize = 1;   // of the first tensor on it: messages count its elements
  bool constant = false;  // a get_attr tensor: never written
  // A donated buffer (AOTAutograd's backward input no one else holds): the
  // rewritten graph may write it once the functional graph is done reading it
  // (a memory plan reusing it); its final contents are not compared.
  bool donated = false;
};

struct CheckProblem {
  std::vector<InputStorage> inputs;
  std::vector<Slot> slots;
  CheckGraph functional;
  CheckGraph rewritten;
  // Any rewritten node may write graph-input bytes that the functional graph
  // writes back (reinplace's policy="compile": a written-back input's new value
  // computed in its own memory). The other rules still prove every read and
  // the inputs' final contents; without it only write-backs and custom ops may.
  bool inputs_written_back_may_be_written = false;
  // Also prove Inductor's contract (rule 5 in rewrite_checker.h): what
  // `reinplace(policy="inductor")` hands Inductor must be sound as Inductor
  // lowers it, not only as FX runs it.
  bool inductor = false;
};

enum class Outcome : uint8_t { kOk, kViolation, kCannotCheck };

struct CheckResult {
  Outcome outcome = Outcome::kOk;
  int32_t node = -1;     // rewritten.nodes index; -1: after the last node (final inputs)
  int32_t operand = -1;  // index into that node's reads, when the finding is about one
  CheckReason reason = CheckReason::kOk;
  std::string message;  // names the node, the operand and the values involved
};

}  // namespace fxinplace::checker
