#include "tag_memory.h"

#include <algorithm>
#include <sstream>

namespace fxinplace::checker {

int64_t numel(const std::vector<int64_t>& sizes) {
  int64_t n = 1;
  for (int64_t s : sizes) {
    if (s < 0) throw CannotCheck("negative size " + std::to_string(s));
    n *= s;
  }
  return n;
}

std::vector<int64_t> element_addresses(const TensorRef& ref) {
  if (ref.sizes.size() != ref.strides.size()) throw CannotCheck("a tensor has as many strides as sizes");
  const int64_t n = numel(ref.sizes);
  std::vector<int64_t> out;
  out.reserve(static_cast<size_t>(n));
  if (n == 0) return out;
  const size_t dims = ref.sizes.size();
  std::vector<int64_t> index(dims, 0);
  int64_t element = ref.offset;
  // An odometer over the logical index; `element` follows it incrementally.
  for (int64_t e = 0; e < n; ++e) {
    out.push_back(element * ref.itemsize);
    for (size_t d = dims; d-- > 0;) {
      if (++index[d] < ref.sizes[d]) {
        element += ref.strides[d];
        break;
      }
      element -= ref.strides[d] * (ref.sizes[d] - 1);
      index[d] = 0;
    }
  }
  return out;
}

std::string index_text(const std::vector<int64_t>& sizes, int64_t e) {
  std::vector<int64_t> index(sizes.size(), 0);
  for (size_t d = sizes.size(); d-- > 0;) {
    if (sizes[d] > 0) {
      index[d] = e % sizes[d];
      e /= sizes[d];
    }
  }
  return sizes_text(index);
}

std::string sizes_text(const std::vector<int64_t>& sizes) {
  std::ostringstream os;
  os << "[";
  for (size_t d = 0; d < sizes.size(); ++d) os << (d ? ", " : "") << sizes[d];
  os << "]";
  return os.str();
}

TagSpace::TagSpace(const CheckProblem& problem) : problem_(problem) {
  Tag next = 1;  // 0 is "uninitialised"
  for (const InputStorage& input : problem.inputs) {
    input_base_.push_back(next);
    next += static_cast<Tag>(std::max<int64_t>(input.nbytes, 1));
  }
  for (const Slot& slot : problem.slots) {
    slot_base_.push_back(next);
    next += static_cast<Tag>(std::max<int64_t>(numel(slot.sizes) * slot.itemsize, 1));
  }
}

std::string TagSpace::describe(Tag tag) const {
  if (tag == 0) return "uninitialised memory";
  // The ranges are laid out in order, inputs first: the last base <= tag owns it.
  auto owner = [tag](const std::vector<Tag>& bases) {
    auto it = std::upper_bound(bases.begin(), bases.end(), tag);
    return static_cast<int64_t>(it - bases.begin()) - 1;
  };
  int64_t s = owner(slot_base_);
  if (s >= 0) {
    const Slot& slot = problem_.slots[s];
    const int64_t byte = static_cast<int64_t>(tag - slot_base_[s]);
    std::string text = slot.name + "'s value at " + index_text(slot.sizes, byte / slot.itemsize);
    if (byte % slot.itemsize) text += " (byte " + std::to_string(byte % slot.itemsize) + ")";
    return text;
  }
  int64_t i = owner(input_base_);
  if (i >= 0) {
    const InputStorage& input = problem_.inputs[i];
    const int64_t byte = static_cast<int64_t>(tag - input_base_[i]);
    std::string text = "the original contents of " + std::string(input.constant ? "constant " : "input ") +
                       input.name + " at storage element " + std::to_string(byte / input.itemsize);
    if (byte % input.itemsize) text += " (byte " + std::to_string(byte % input.itemsize) + ")";
    return text;
  }
  return "tag " + std::to_string(tag);
}

TagMemory::TagMemory(const CheckGraph& graph, const TagSpace& space) {
  for (const StorageDecl& decl : graph.storages) {
    if (decl.granularity <= 0) throw CannotCheck("a storage has a granularity below one byte");
    Storage s;
    s.nbytes = decl.nbytes;
    s.granularity = decl.granularity;
    s.cells.assign(static_cast<size_t>((decl.nbytes + decl.granularity - 1) / decl.granularity), 0);
    s.writers.assign(s.cells.size(), -1);
    if (decl.input >= 0) {
      for (size_t c = 0; c < s.cells.size(); ++c)
        s.cells[c] = space.input_tag(decl.input, static_cast<int64_t>(c) * decl.granularity);
    }
    storages_.push_back(std::move(s));
  }
}

Tag TagMemory::byte_tag(int32_t storage, int64_t byte) const {
  const Storage& s = storages_[storage];
  const Tag cell = s.cells[static_cast<size_t>(byte / s.granularity)];
  return cell == 0 ? 0 : cell + static_cast<Tag>(byte % s.granularity);
}

int32_t TagMemory::byte_writer(int32_t storage, int64_t byte) const {
  const Storage& s = storages_[storage];
  return s.writers[static_cast<size_t>(byte / s.granularity)];
}

void TagMemory::grow(int32_t storage, int64_t nbytes) {
  Storage& s = storages_.at(storage);
  if (nbytes <= s.nbytes) return;
  s.nbytes = nbytes;
  s.cells.resize(static_cast<size_t>((nbytes + s.granularity - 1) / s.granularity), 0);
  s.writers.resize(s.cells.size(), -1);
}

void TagMemory::check_in_bounds(const TensorRef& ref, const std::string& what) const {
  if (ref.storage < 0 || static_cast<size_t>(ref.storage) >= storages_.size())
    throw CannotCheck(what + " refers to an unknown storage");
  const Storage& s = storages_[ref.storage];
  if (ref.itemsize <= 0 || ref.itemsize % s.granularity != 0)
    throw CannotCheck(what + " has an itemsize that is not a multiple of its storage's cells");
  if (numel(ref.sizes) == 0) return;
  int64_t lo = ref.offset, hi = ref.offset;
  for (size_t d = 0; d < ref.sizes.size(); ++d) {
    const int64_t reach = ref.strides[d] * (ref.sizes[d] - 1);
    (reach < 0 ? lo : hi) += reach;
  }
  if (lo < 0 || (hi + 1) * ref.itemsize > s.nbytes) throw CannotCheck(what + " reaches outside its storage");
}

std::vector<Tag> TagMemory::read(const TensorRef& ref, int64_t unit) const {
  const Storage& s = storages_.at(ref.storage);
  // A cell's bytes need not be consecutive past a unit: reading wider units
  // than the cells would drop the tags of all but a unit's first cell.
  if (unit <= 0 || s.granularity % unit != 0 || ref.itemsize % unit != 0)
    throw CannotCheck("a read in units that do not divide its storage's cells");
  const std::vector<int64_t> addresses = element_addresses(ref);
  const int64_t per_element = ref.itemsize / unit;
  std::vector<Tag> tags;
  tags.reserve(addresses.size() * static_cast<size_t>(per_element));
  if (unit == s.granularity) {  // the common case: one cell per unit
    for (int64_t a : addresses)
      for (int64_t k = 0; k < per_element; ++k) tags.push_back(s.cells[static_cast<size_t>(a / unit + k)]);
    return tags;
  }
  for (int64_t a : addresses)
    for (int64_t k = 0; k < per_element; ++k) tags.push_back(byte_tag(ref.storage, a + k * unit));
  return tags;
}

bool TagMemory::fits_cells(const Storage& s, const std::vector<Tag>& tags, int64_t unit) {
  const int64_t per_cell = s.granularity / unit;
  for (size_t first = 0; first < tags.size(); first += static_cast<size_t>(per_cell)) {
    for (int64_t k = 1; k < per_cell; ++k) {
      const Tag t = tags[first + static_cast<size_t>(k)];
      if (tags[first] == 0 ? t != 0 : t != tags[first] + static_cast<Tag>(k * unit)) return false;
    }
  }
  return true;
}

void TagMemory::refine(Storage& s, int64_t granularity) {
  const int64_t split = s.granularity / granularity;
  std::vector<Tag> cells;
  std::vector<int32_t> writers;
  cells.reserve(s.cells.size() * static_cast<size_t>(split));
  writers.reserve(cells.capacity());
  for (size_t c = 0; c < s.cells.size(); ++c) {
    for (int64_t k = 0; k < split; ++k) {
      cells.push_back(s.cells[c] == 0 ? 0 : s.cells[c] + static_cast<Tag>(k * granularity));
      writers.push_back(s.writers[c]);
    }
  }
  s.cells = std::move(cells);
  s.writers = std::move(writers);
  s.granularity = granularity;
}

void TagMemory::write(const TensorRef& dst, const std::vector<Tag>& tags, int64_t unit, int32_t writer) {
  Storage& s = storages_.at(dst.storage);
  if (unit <= 0 || dst.itemsize % unit != 0 || (s.granularity % unit != 0 && unit % s.granularity != 0))
    throw CannotCheck("incompatible cell sizes in one copy");
  const std::vector<int64_t> addresses = element_addresses(dst);
  const int64_t per_element = dst.itemsize / unit;
  if (tags.size() != addresses.size() * static_cast<size_t>(per_element))
    throw CannotCheck("a write's source and destination differ in size");
  // Units narrower than the cells (bytes moved through a view of a narrower
  // dtype) fit only while each cell's units are consecutive bytes of one value;
  // otherwise the storage is cut into cells of the unit, which holds anything.
  if (s.granularity > unit && !fits_cells(s, tags, unit)) refine(s, unit);
  const int64_t g = s.granularity;
  size_t next = 0;
  for (int64_t a : addresses) {
    if (g <= unit) {
      // Each unit covers unit / g cells, its bytes consecutive.
      for (int64_t k = 0; k < per_element; ++k) {
        const Tag t = tags[next++];
        for (int64_t c = 0; c < unit / g; ++c) {
          const size_t cell = static_cast<size_t>((a + k * unit) / g + c);
          s.cells[cell] = t == 0 ? 0 : t + static_cast<Tag>(c * g);
          s.writers[cell] = writer;
        }
      }
      continue;
    }
    // A cell spans several units, consecutive bytes of one value (fits_cells):
    // it keeps the first one's tag.
    for (int64_t c = 0; c < dst.itemsize / g; ++c) {
      s.cells[static_cast<size_t>(a / g + c)] = tags[next];
      s.writers[static_cast<size_t>(a / g + c)] = writer;
      next += static_cast<size_t>(g / unit);
    }
  }
}

}  // namespace fxinplace::checker
