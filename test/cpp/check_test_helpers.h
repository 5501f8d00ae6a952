// Shared by the rewrite checker's GoogleTest files: hand-built graph pairs.
// Tensors are float32 (4-byte) unless said; a TensorRef's dtype code is its itemsize.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "rewrite_checker.h"

namespace fxinplace::checker::testing {

inline TensorRef strided(int32_t storage, std::vector<int64_t> sizes, std::vector<int64_t> strides,
                         int64_t offset = 0, int64_t itemsize = 4) {
  TensorRef r;
  r.storage = storage;
  r.sizes = std::move(sizes);
  r.strides = std::move(strides);
  r.offset = offset;
  r.itemsize = itemsize;
  r.dtype = static_cast<int32_t>(itemsize);
  return r;
}

inline TensorRef vec(int32_t storage, int64_t n, int64_t offset = 0) {
  return strided(storage, {n}, {1}, offset);
}

inline Effect fill(TensorRef dst, int32_t slot) {
  Effect e;
  e.kind = EffectKind::kFill;
  e.dst = std::move(dst);
  e.slot = slot;
  return e;
}

inline Effect copy(TensorRef dst, TensorRef src) {
  Effect e;
  e.kind = EffectKind::kCopy;
  e.dst = std::move(dst);
  e.src = std::move(src);
  return e;
}

inline Operand operand(std::string arg, std::string source, TensorRef ref, bool values_read = true) {
  return Operand{std::move(arg), std::move(source), std::move(ref), values_read};
}

inline CheckNode node(std::string name, std::vector<Operand> reads, std::vector<Effect> effects,
                      int32_t counterpart = -1) {
  CheckNode n;
  n.name = std::move(name);
  n.reads = std::move(reads);
  n.effects = std::move(effects);
  n.counterpart = counterpart;
  return n;
}

inline CheckNode inplace(CheckNode n, bool pointwise = true) {
  n.write_rule = WriteRule::kInplace;
  n.self_operand = 0;
  n.pointwise = pointwise;
  return n;
}

inline CheckNode output(std::vector<Operand> reads, int32_t counterpart = -1) {
  CheckNode n = node("output", std::move(reads), {}, counterpart);
  n.is_output = true;
  return n;
}

// A pair of graphs over a float32 input x of `n` elements (storage 0 in both).
struct Pair {
  CheckProblem p;
  explicit Pair(int64_t n = 4, bool constant = false) {
    p.inputs.push_back(InputStorage{constant ? "w" : "x_1", n * 4, 4, constant});
    p.functional.storages.push_back(StorageDecl{n * 4, 4, 0});
    p.rewritten.storages.push_back(StorageDecl{n * 4, 4, 0});
  }
  int32_t slot(std::string name, std::vector<int64_t> sizes) {
    p.slots.push_back(Slot{std::move(name), std::move(sizes), 4, 4});
    return static_cast<int32_t>(p.slots.size()) - 1;
  }
  static int32_t storage(CheckGraph& g, int64_t nbytes, int64_t granularity = 4) {
    g.storages.push_back(StorageDecl{nbytes, granularity, -1});
    return static_cast<int32_t>(g.storages.size()) - 1;
  }
  int32_t f_storage(int64_t nbytes) { return storage(p.functional, nbytes); }
  int32_t r_storage(int64_t nbytes) { return storage(p.rewritten, nbytes); }
  int32_t f(CheckNode n) {
    p.functional.nodes.push_back(std::move(n));
    return static_cast<int32_t>(p.functional.nodes.size()) - 1;
  }
  void r(CheckNode n) { p.rewritten.nodes.push_back(std::move(n)); }
  CheckResult check() const { return check_rewrite(p); }
};

inline void expect_ok(const CheckResult& r) {
  EXPECT_EQ(r.outcome, Outcome::kOk) << check_reason_name(r.reason) << ": " << r.message;
}

// An AssertionResult rather than an EXPECT inside, so that a failure shows
// the part looked for beside the whole message.
inline ::testing::AssertionResult message_has(const CheckResult& r, const std::string& part) {
  if (r.message.find(part) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "the message has no \"" << part << "\": " << r.message;
}

// `says`: parts of the message, each of which it must contain.
inline void expect_violation(const CheckResult& r, const std::string& reason, int32_t node,
                             int32_t operand = -1, const std::vector<std::string>& says = {}) {
  EXPECT_EQ(r.outcome, Outcome::kViolation) << r.message;
  EXPECT_EQ(std::string(check_reason_name(r.reason)), reason) << r.message;
  EXPECT_EQ(r.node, node) << r.message;
  if (operand >= 0) EXPECT_EQ(r.operand, operand) << r.message;
  for (const std::string& part : says) EXPECT_TRUE(message_has(r, part));
}

}  // namespace fxinplace::checker::testing
