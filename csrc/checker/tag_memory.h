// Storages as arrays of tags, and the element-by-element addressing the checker
// is built on. Deliberately naive: every question about a tensor is answered by
// listing the byte address of each of its elements.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "check_model.h"

namespace fxinplace::checker {

// The checker cannot model what it was given (a malformed problem, or memory
// it cannot represent). Reported as "cannot check", never as a violation.
class CannotCheck : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Byte address of every element of `ref`, in logical (row-major) order.
std::vector<int64_t> element_addresses(const TensorRef& ref);

int64_t numel(const std::vector<int64_t>& sizes);

// "[1, 2]": the logical index of flat element `e` of a tensor of `sizes`.
std::string index_text(const std::vector<int64_t>& sizes, int64_t e);
std::string sizes_text(const std::vector<int64_t>& sizes);

// Assigns each graph input's original bytes and each functional value's bytes
// a range of tags, and says in words what a tag is.
class TagSpace {
 public:
  explicit TagSpace(const CheckProblem& problem);
  Tag input_tag(int32_t input, int64_t byte) const { return input_base_[input] + byte; }
  Tag slot_tag(int32_t slot, int64_t byte) const { return slot_base_[slot] + byte; }
  // "mul's value at [2]", "the original contents of input x_1 at element 3",
  // "uninitialised memory".
  std::string describe(Tag tag) const;

 private:
  const CheckProblem& problem_;
  std::vector<Tag> input_base_;
  std::vector<Tag> slot_base_;
};

// One graph's memory. A storage is cut into cells of `granularity` bytes; a
// cell stores the tag of its first byte, the others following consecutively
// (byte b of a cell tagged t is t + b), which every write keeps true. A cell is
// thus a compressed run of byte tags: a storage starts with cells as wide as
// its tensors' elements allow, and is cut into narrower ones the first time a
// write (through a view of a narrower dtype) puts bytes of different values
// into one cell. Comparisons are byte for byte whatever the cells.
class TagMemory {
 public:
  TagMemory(const CheckGraph& graph, const TagSpace& space);

  int64_t nbytes(int32_t storage) const { return storages_.at(storage).nbytes; }
  int64_t granularity(int32_t storage) const { return storages_.at(storage).granularity; }
  Tag byte_tag(int32_t storage, int64_t byte) const;
  // The node that last wrote the byte (its index in the graph's nodes), or -1.
  int32_t byte_writer(int32_t storage, int64_t byte) const;
  void grow(int32_t storage, int64_t nbytes);

  // The tags of every element of `ref`, `unit` bytes apart (unit divides the
  // itemsize and the storage's current cells).
  std::vector<Tag> read(const TensorRef& ref, int64_t unit) const;
  // Writes `tags` (as `read` returns them, at `unit`) into the elements of `dst`,
  // narrowing dst's storage's cells to `unit` where they cannot hold them.
  void write(const TensorRef& dst, const std::vector<Tag>& tags, int64_t unit, int32_t writer);
  // Checks `ref` lies in its storage and its itemsize is a multiple of the cells.
  void check_in_bounds(const TensorRef& ref, const std::string& what) const;

 private:
  struct Storage {
    int64_t nbytes = 0;
    int64_t granularity = 1;
    std::vector<Tag> cells;
    std::vector<int32_t> writers;  // per cell: who wrote it last, for messages
  };
  // Whether `tags` (at `unit`, a divisor of s's cells) are runs of consecutive
  // bytes, one per cell, so that s's cells can hold them.
  static bool fits_cells(const Storage& s, const std::vector<Tag>& tags, int64_t unit);
  // Cuts every cell of `s` into cells of `granularity` bytes (a divisor), same tags.
  static void refine(Storage& s, int64_t granularity);
  std::vector<Storage> storages_;
};

}  // namespace fxinplace::checker
