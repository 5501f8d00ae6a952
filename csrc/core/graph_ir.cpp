#include "graph_ir.h"

#include <stdexcept>

namespace fxinplace::core {

NodeId Graph::add(Node node) {
  auto id = static_cast<NodeId>(nodes_.size());
  auto check = [id](NodeId ref, const char* what) {
    if (ref != kNoNode && (ref < 0 || ref >= id))
      throw std::invalid_argument(std::string("node ") + std::to_string(id) + ": " + what +
                                  " must name an earlier node");
  };
  check(node.self, "self");
  check(node.scatter_src, "scatter source");
  check(node.view_of, "view base");
  check(node.layout_parent, "layout parent");
  check(node.item_of, "getitem source");
  check(node.written_input, "written input");
  check(node.written_value, "written value");
  for (const WriteSlot& slot : node.slots) {
    check(slot.target, "write slot");
    if (slot.result < 0 || static_cast<size_t>(slot.result) >= node.results.size())
      throw std::invalid_argument("node " + std::to_string(id) + ": write slot names no result");
  }
  for (NodeId op : node.operands) check(op, "operand");
  for (NodeId op : node.absolute_layout_reads) check(op, "absolutely addressed operand");
  for (const TensorValue& v : node.results)
    if (v.storage < 0 || v.storage >= num_storages_)
      throw std::invalid_argument("node " + std::to_string(id) + ": unknown storage id");
  nodes_.push_back(std::move(node));
  return id;
}

int32_t Graph::shape(const std::vector<Extent>& sizes) {
  Geometry g;
  g.sizes = sizes;
  return shapes_.intern(g);
}

const TensorValue* Graph::result(NodeId id, int32_t index) const {
  const Node& n = at(id);
  return index >= 0 && static_cast<size_t>(index) < n.results.size() ? &n.results[static_cast<size_t>(index)]
                                                                     : nullptr;
}

const TensorValue* Graph::single_result(NodeId id) const {
  const Node& n = at(id);
  return n.results.size() == 1 ? &n.results[0] : nullptr;
}

}  // namespace fxinplace::core
