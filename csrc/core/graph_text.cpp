#include "graph_text.h"

#include <sstream>
#include <stdexcept>
#include <utility>

#include "reinplace_planner.h"

namespace fxinplace::core {
namespace {

// The words of the text format for each node kind and scatter kind: the
// writer and the reader share one table each.
template <typename E>
using Words = std::pair<E, const char*>;

constexpr Words<NodeKind> kKindWords[] = {
    {NodeKind::kInput, "input"},     {NodeKind::kConstant, "constant"},
    {NodeKind::kOp, "op"},           {NodeKind::kGetItem, "getitem"},
    {NodeKind::kOther, "other"},     {NodeKind::kAutoFunctionalized, "auto_functionalized"},
    {NodeKind::kForeach, "foreach"}, {NodeKind::kWriteBack, "write_back"},
    {NodeKind::kOutput, "output"}};

// ScatterKind::kNone is written as "none" but never read: a node without a
// scatter has no scatter= field.
constexpr Words<ScatterKind> kScatterWords[] = {{ScatterKind::kSelect, "select"},
                                                {ScatterKind::kSlice, "slice"},
                                                {ScatterKind::kDiagonal, "diagonal"},
                                                {ScatterKind::kAsStrided, "as_strided"}};

template <typename E, size_t N>
const char* word_of(const Words<E> (&words)[N], E value, const char* otherwise) {
  for (const auto& [e, word] : words)
    if (e == value) return word;
  return otherwise;
}

template <typename E, size_t N>
E value_of(const Words<E> (&words)[N], const std::string& s, const char* what) {
  for (const auto& [e, word] : words)
    if (s == word) return e;
  throw std::invalid_argument("unknown " + std::string(what) + " '" + s + "'");
}

const char* kind_text(NodeKind k) { return word_of(kKindWords, k, "?"); }
NodeKind kind_from(const std::string& s) { return value_of(kKindWords, s, "node kind"); }
const char* scatter_text(ScatterKind k) { return word_of(kScatterWords, k, "none"); }
ScatterKind scatter_from(const std::string& s) { return value_of(kScatterWords, s, "scatter kind"); }

std::string extent_text(const Extent& e) {
  return e.is_known() ? std::to_string(e.value()) : "$" + std::to_string(e.symbol());
}

Extent extent_from(const std::string& s) {
  if (!s.empty() && s[0] == '$') return Extent::symbolic(std::stoi(s.substr(1)));
  return Extent(std::stoll(s));
}

template <typename T, typename F>
std::string join(const std::vector<T>& items, F text) {
  std::string out;
  for (size_t k = 0; k < items.size(); ++k) out += (k ? "," : "") + text(items[k]);
  return out;
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> parts;
  if (s.empty()) return parts;
  std::string cur;
  for (char c : s) {
    if (c == sep) {
      parts.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  parts.push_back(cur);
  return parts;
}

std::string geometry_text(const Geometry& g) {
  std::string dense =
      g.proven_dense_order ? join(*g.proven_dense_order, [](int32_t d) { return std::to_string(d); }) : "-";
  return join(g.sizes, extent_text) + "|" + join(g.strides, extent_text) + "|" + extent_text(g.offset) + "|" +
         dense;
}

Geometry geometry_from(const std::string& s) {
  std::vector<std::string> parts = split(s, '|');
  if (parts.size() != 4) throw std::invalid_argument("geometry '" + s + "' needs sizes|strides|offset|dense");
  Geometry g;
  for (const std::string& e : split(parts[0], ',')) g.sizes.push_back(extent_from(e));
  for (const std::string& e : split(parts[1], ',')) g.strides.push_back(extent_from(e));
  g.offset = extent_from(parts[2]);
  if (parts[3] != "-") {
    std::vector<int32_t> order;
    for (const std::string& d : split(parts[3], ',')) order.push_back(std::stoi(d));
    g.proven_dense_order = order;
  }
  return g;
}

std::vector<Int> ints_from(const std::string& s) {
  std::vector<Int> out;
  for (const std::string& v : split(s, ',')) out.push_back(std::stoll(v));
  return out;
}

std::string ints_text(const std::vector<Int>& v) {
  return join(v, [](Int i) { return std::to_string(i); });
}

void write_node(std::ostringstream& out, const Graph& g, NodeId id) {
  const Node& n = g.at(id);
  out << "node " << id << " " << kind_text(n.kind) << " " << (n.name.empty() ? "_" : n.name);
  auto ref = [&out](const char* key, NodeId v) {
    if (v != kNoNode) out << " " << key << "=" << v;
  };
  ref("self", n.self);
  ref("scatter_src", n.scatter_src);
  ref("view_of", n.view_of);
  ref("layout_parent", n.layout_parent);
  ref("item_of", n.item_of);
  if (n.item_index >= 0) out << " item_index=" << n.item_index;
  ref("written_input", n.written_input);
  ref("written_value", n.written_value);
  if (n.view == ViewKind::kSingle) out << " view=single";
  if (n.view == ViewKind::kMulti) out << " view=multi";
  if (n.layout_use == LayoutUse::kReshape) out << " layout=reshape";
  if (n.layout_use == LayoutUse::kStrides) out << " layout=strides";
  if (n.layout_use == LayoutUse::kAbsolute) out << " layout=absolute";
  if (n.has_inplace) out << " inplace";
  if (n.pointwise) out << " pointwise";
  if (n.is_resize) out << " resize";
  if (n.indexed_write) out << " indexed_write";
  if (n.collective) out << " collective";
  if (n.compiler_extern) out << " compiler_extern";
  if (n.realized) out << " realized";
  if (n.compiler_lacks_inplace) out << " lacks_inplace_lowering";
  if (n.compiler_opaque) out << " compiler_opaque";
  if (!n.reads_memory) out << " no_reads";
  if (n.keeps_self_geometry) out << " keeps_self_geometry";
  if (!n.operands.empty())
    out << " operands=" << join(n.operands, [](NodeId o) { return std::to_string(o); });
  if (!n.absolute_layout_reads.empty())
    out << " absolute=" << join(n.absolute_layout_reads, [](NodeId o) { return std::to_string(o); });
  if (!n.operand_elements.empty())
    out << " elements=" << join(n.operand_elements, [](int32_t e) { return std::to_string(e); });
  for (const WriteSlot& s : n.slots)
    out << " slot=" << s.target << ":" << s.result << ":" << s.item << ":" << (s.already_in_place ? 1 : 0)
        << ":" << static_cast<int>(s.via);
  for (const TensorValue& v : n.results)
    out << " result=" << v.storage << ":" << v.dtype << ":" << geometry_text(g.geometries().at(v.geom));
  if (n.scatter.kind != ScatterKind::kNone) {
    out << " scatter=" << scatter_text(n.scatter.kind);
    if (n.scatter.replayable)
      out << " sargs=" << ints_text(n.scatter.ints) << ";" << ints_text(n.scatter.sizes) << ";"
          << ints_text(n.scatter.strides);
    if (n.scatter.view_on_recorded_base) out << " sview=" << geometry_text(*n.scatter.view_on_recorded_base);
  }
  out << "\n";
}

void read_field(Graph& g, Node& n, const std::string& token) {
  auto eq = token.find('=');
  std::string key = token.substr(0, eq);
  std::string value = eq == std::string::npos ? "" : token.substr(eq + 1);
  auto node_ref = [&value]() { return static_cast<NodeId>(std::stoi(value)); };
  if (key == "self")
    n.self = node_ref();
  else if (key == "scatter_src")
    n.scatter_src = node_ref();
  else if (key == "view_of")
    n.view_of = node_ref();
  else if (key == "layout_parent")
    n.layout_parent = node_ref();
  else if (key == "item_of")
    n.item_of = node_ref();
  else if (key == "item_index")
    n.item_index = std::stoi(value);
  else if (key == "written_input")
    n.written_input = node_ref();
  else if (key == "written_value")
    n.written_value = node_ref();
  else if (key == "view")
    n.view = value == "multi" ? ViewKind::kMulti : ViewKind::kSingle;
  else if (key == "layout")
    n.layout_use = value == "reshape"   ? LayoutUse::kReshape
                   : value == "strides" ? LayoutUse::kStrides
                                        : LayoutUse::kAbsolute;
  else if (key == "inplace")
    n.has_inplace = true;
  else if (key == "pointwise")
    n.pointwise = true;
  else if (key == "resize")
    n.is_resize = true;
  else if (key == "indexed_write")
    n.indexed_write = true;
  else if (key == "collective")
    n.collective = true;
  else if (key == "compiler_extern")
    n.compiler_extern = true;
  else if (key == "realized")
    n.realized = true;
  else if (key == "lacks_inplace_lowering")
    n.compiler_lacks_inplace = true;
  else if (key == "compiler_opaque")
    n.compiler_opaque = true;
  else if (key == "no_reads")
    n.reads_memory = false;
  else if (key == "keeps_self_geometry")
    n.keeps_self_geometry = true;
  else if (key == "operands")
    for (const std::string& o : split(value, ',')) n.operands.push_back(std::stoi(o));
  else if (key == "absolute")
    for (const std::string& o : split(value, ',')) n.absolute_layout_reads.push_back(std::stoi(o));
  else if (key == "elements")
    for (const std::string& e : split(value, ',')) n.operand_elements.push_back(std::stoi(e));
  else if (key == "slot") {
    std::vector<std::string> p = split(value, ':');
    if (p.size() != 4 && p.size() != 5)
      throw std::invalid_argument("slot needs target:result:item:in_place[:via]");
    WriteSlot slot{std::stoi(p[0]), std::stoi(p[1]), std::stoi(p[2]), p[3] == "1"};
    int via = p.size() == 5 ? std::stoi(p[4]) : 0;
    if (via < 0 || via > 2) throw std::invalid_argument("slot via must be 0 (self), 1 (swapped) or 2 (out)");
    slot.via = static_cast<Destination>(via);
    n.slots.push_back(slot);
  } else if (key == "result") {
    auto first = value.find(':');
    auto second = value.find(':', first + 1);
    if (first == std::string::npos || second == std::string::npos)
      throw std::invalid_argument("result needs storage:dtype:geometry");
    TensorValue v;
    v.storage = std::stoi(value.substr(0, first));
    v.dtype = std::stoi(value.substr(first + 1, second - first - 1));
    Geometry geom = geometry_from(value.substr(second + 1));
    while (g.num_storages() <= v.storage) g.new_storage();
    v.shape = g.shape(geom.sizes);
    v.geom = g.geom(geom);
    n.results.push_back(v);
  } else if (key == "scatter") {
    n.scatter.kind = scatter_from(value);
  } else if (key == "sargs") {
    std::vector<std::string> p = split(value + " ", ';');
    if (p.size() != 3) throw std::invalid_argument("sargs needs ints;sizes;strides");
    p[2].pop_back();
    n.scatter.ints = ints_from(p[0]);
    n.scatter.sizes = ints_from(p[1]);
    n.scatter.strides = ints_from(p[2]);
    n.scatter.replayable = true;
  } else if (key == "sview") {
    n.scatter.view_on_recorded_base = geometry_from(value);
  } else {
    throw std::invalid_argument("unknown field '" + key + "'");
  }
}

}  // namespace

std::string graph_to_text(const Graph& g) {
  std::ostringstream out;
  out << "storages " << g.num_storages() << "\n";
  if (g.traced_symbolically()) out << "traced_symbolically\n";
  for (NodeId id = 0; id < static_cast<NodeId>(g.size()); ++id) write_node(out, g, id);
  return out.str();
}

GraphText graph_from_text(const std::string& text) {
  GraphText parsed;
  std::istringstream in(text);
  std::string line;
  int line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (line.empty() || line[0] == '#') continue;
    std::istringstream words(line);
    std::string head;
    words >> head;
    try {
      if (head == "storages") {
        int count = 0;
        words >> count;
        while (parsed.graph.num_storages() < count) parsed.graph.new_storage();
      } else if (head == "traced_symbolically") {
        parsed.graph.set_traced_symbolically(true);
      } else if (head == "node") {
        Node n;
        NodeId id = kNoNode;
        std::string kind;
        words >> id >> kind >> n.name;
        if (id != static_cast<NodeId>(parsed.graph.size()))
          throw std::invalid_argument("nodes must be in order");
        n.kind = kind_from(kind);
        std::string token;
        while (words >> token) read_field(parsed.graph, n, token);
        parsed.graph.add(std::move(n));
      } else if (head == "expect") {
        ExpectedDecision e;
        words >> e.node >> e.action >> e.reason;
        parsed.expected.push_back(e);
      } else {
        throw std::invalid_argument("unknown line '" + head + "'");
      }
    } catch (const std::exception& e) {
      throw std::invalid_argument("line " + std::to_string(line_no) + ": " + e.what());
    }
  }
  return parsed;
}

std::string expectations_to_text(const Plan& plan) {
  std::ostringstream out;
  for (size_t i = 0; i < plan.decisions.size(); ++i) {
    const Decision& d = plan.decisions[i];
    if (d.action == Action::kKeep && (d.reason == Reason::kNotCandidate || d.reason == Reason::kView))
      continue;
    out << "expect " << i << " " << action_name(d.action) << " " << reason_name(d.reason) << "\n";
  }
  return out.str();
}

}  // namespace fxinplace::core
