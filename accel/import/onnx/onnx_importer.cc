#include "accel/import/onnx/onnx_importer.h"

#include <algorithm>
#include <deque>
#include <fstream>
#include <set>

#include "accel/graph/op_shapes.h"
#include "accel/graph/passes.h"
#include "accel/import/onnx/onnx_fold.h"
#include "accel/import/onnx/onnx_node.h"
#include "accel/import/onnx/onnx_tensor.h"

namespace tessera {
namespace {

using tessera::onnx::GraphProto;
using tessera::onnx::ModelProto;
using tessera::onnx::TensorProto;
using tessera::onnx::ValueInfoProto;

Result<int64_t> default_domain_opset(const ModelProto& model) {
  for (const auto& entry : model.opset_import()) {
    if (entry.domain().empty() || entry.domain() == "ai.onnx") {
      const int64_t v = entry.version();
      if (v < kMinOnnxOpset || v > kMaxOnnxOpset) {
        return Status::unimplemented("ONNX opset " + std::to_string(v) + " is not supported (" +
                                     std::to_string(kMinOnnxOpset) + " to " + std::to_string(kMaxOnnxOpset) +
                                     " are); re-export the model with "
                                     "opset_version in that range");
      }
      return v;
    }
  }
  return Status::invalid_argument("the model declares no opset for the default ONNX domain");
}

Result<ValueInfo> value_info(const ValueInfoProto& proto, const char* role) {
  ValueInfo info{proto.name(), {}};
  if (!proto.type().has_tensor_type()) {
    return Status::unimplemented(std::string("graph ") + role + " '" + proto.name() + "' is not a tensor");
  }
  const auto& tensor_type = proto.type().tensor_type();
  if (tensor_type.elem_type() != TensorProto::FLOAT) {
    return Status::unimplemented(std::string("graph ") + role + " '" + proto.name() + "' has element type " +
                                 std::to_string(tensor_type.elem_type()) +
                                 "; only float32 inputs and outputs are supported");
  }
  for (const auto& dim : tensor_type.shape().dim()) {
    info.shape.push_back(dim.has_dim_value() && dim.dim_value() > 0 ? dim.dim_value() : -1);
  }
  return info;
}

// The graph being imported: its IR, what conversion may look up, and the values folded at load.
class GraphImport {
 public:
  explicit GraphImport(int64_t opset) { context_.opset = opset; }

  Status add_initializer(const TensorProto& init) {
    if (init.name().empty()) return Status::invalid_argument("an initializer has no name");
    TESSERA_ASSIGN_OR_RETURN(Tensor t, onnx_import::to_float_tensor(init, "initializer '" + init.name() + "'"));
    graph_.constants[init.name()] = std::move(t);
    context_.constants[init.name()] = &init;
    return Status::ok();
  }

  Status add_input(const ValueInfoProto& input) {
    if (graph_.constants.count(input.name())) return Status::ok();  // older exports list initializers as inputs
    TESSERA_ASSIGN_OR_RETURN(ValueInfo info, value_info(input, "input"));
    Shape tracked = info.shape;
    for (int64_t& d : tracked) {
      if (d < 0) {
        d = 1;
        dynamic_ = true;
      }
    }
    context_.batch_of_one = context_.batch_of_one || (!info.shape.empty() && info.shape[0] <= 1);
    context_.shapes[info.name] = tracked;
    graph_.inputs.push_back(std::move(info));
    return Status::ok();
  }

  Status add_node(const tessera::onnx::NodeProto& node) {
    if (node.op_type() == "Constant") return add_constant_node(node);
    if (node.op_type() == "Shape") {
      const std::string in = node.input_size() == 1 ? node.input(0) : std::string();
      if (auto it = context_.shapes.find(in); it != context_.shapes.end()) return fold_shape(node, it->second, true);
      if (auto it = context_.constants.find(in); it != context_.constants.end()) {
        return fold_shape(node, Shape(it->second->dims().begin(), it->second->dims().end()), false);
      }
    }
    if (onnx_import::is_foldable(node.op_type()) && all_constant(node)) return fold(node);
    const size_t first = graph_.nodes.size();
    TESSERA_RETURN_IF_ERROR(onnx_import::convert_node(node, context_, graph_));
    for (size_t i = first; i < graph_.nodes.size(); ++i) TESSERA_RETURN_IF_ERROR(infer_shape(i));
    return Status::ok();
  }

  Result<Graph> finish(const GraphProto& proto) {
    for (const ValueInfoProto& output : proto.output()) {
      TESSERA_ASSIGN_OR_RETURN(ValueInfo info, value_info(output, "output"));
      graph_.outputs.push_back(std::move(info));
    }
    if (graph_.outputs.empty()) return Status::invalid_argument("the graph has no output");
    TESSERA_RETURN_IF_ERROR(fuse_layer_norm(graph_).status());
    TESSERA_RETURN_IF_ERROR(fuse_gelu(graph_).status());
    drop_unread_constants();
    TESSERA_RETURN_IF_ERROR(validate_graph(graph_));
    return std::move(graph_);
  }

  bool has_inputs() const { return !graph_.inputs.empty(); }
  void set_name(const std::string& name) { graph_.name = name; }

 private:
  Status add_constant_node(const tessera::onnx::NodeProto& node) {
    // Folded at import: its value becomes a constant operand of the nodes that read it.
    const tessera::onnx::AttributeProto* value = nullptr;
    for (const auto& a : node.attribute()) {
      if (a.name() == "value" && a.has_t()) value = &a;
    }
    if (!value || node.output_size() != 1) {
      return Status::unimplemented(onnx_import::describe_node(node) +
                                   ": only Constant nodes with a tensor 'value' are supported");
    }
    if (value->t().data_type() == TensorProto::BOOL) {  // masks: read by folding, as 0 and 1
      TESSERA_ASSIGN_OR_RETURN(onnx_import::ConstValue v,
                               onnx_import::decode_const(value->t(), onnx_import::describe_node(node)));
      return store(node.output(0), std::move(v));
    }
    TESSERA_ASSIGN_OR_RETURN(Tensor t, onnx_import::to_float_tensor(value->t(), onnx_import::describe_node(node)));
    graph_.constants[node.output(0)] = std::move(t);
    context_.constants[node.output(0)] = &value->t();
    return Status::ok();
  }

  bool all_constant(const tessera::onnx::NodeProto& node) const {
    for (const std::string& in : node.input()) {
      if (!in.empty() && context_.constants.count(in) == 0) return false;
    }
    return node.input_size() > 0 && node.output_size() == 1;
  }

  // Shape of an activation (`activation`: its dims may follow a dynamic input dim) or a constant.
  Status fold_shape(const tessera::onnx::NodeProto& node, const Shape& shape, bool activation) {
    const std::string where = onnx_import::describe_node(node);
    if (activation && dynamic_) {
      return Status::unimplemented(where + ": the shape of '" + node.input(0) +
                                   "' depends on a dynamic input dim; export with a static input shape "
                                   "(no dynamic_axes) so shape arithmetic folds at load");
    }
    const auto rank = static_cast<int64_t>(shape.size());
    int64_t start = 0, end = rank;
    for (const auto& a : node.attribute()) {
      if (a.name() == "start") start = a.i();
      if (a.name() == "end") end = a.i();
    }
    start = std::clamp(start < 0 ? start + rank : start, int64_t{0}, rank);
    end = std::clamp(end < 0 ? end + rank : end, int64_t{0}, rank);
    onnx_import::ConstValue v{{std::max<int64_t>(0, end - start)}, {}, true};
    for (int64_t d = start; d < end; ++d) v.values.push_back(static_cast<double>(shape[static_cast<size_t>(d)]));
    return store(node.output(0), std::move(v));
  }

  Status fold(const tessera::onnx::NodeProto& node) {
    std::vector<const onnx_import::ConstValue*> operands;
    for (const std::string& in : node.input()) {
      if (in.empty()) {
        operands.push_back(nullptr);
        continue;
      }
      auto it = values_.find(in);
      if (it == values_.end()) {
        TESSERA_ASSIGN_OR_RETURN(onnx_import::ConstValue v,
                                 onnx_import::decode_const(*context_.constants.at(in), "constant '" + in + "'"));
        it = values_.emplace(in, std::move(v)).first;
      }
      operands.push_back(&it->second);
    }
    TESSERA_ASSIGN_OR_RETURN(onnx_import::ConstValue v, onnx_import::fold_node(node, operands, context_.opset));
    return store(node.output(0), std::move(v));
  }

  // A value known at load under `name`: for later folding, for converters reading operands, and
  // as a float constant for the nodes that read it at run time.
  Status store(const std::string& name, onnx_import::ConstValue v) {
    protos_.push_back(onnx_import::encode_const(v, name));
    context_.constants[name] = &protos_.back();
    Tensor t(v.shape);
    std::transform(v.values.begin(), v.values.end(), t.data.begin(), [](double d) { return static_cast<float>(d); });
    graph_.constants[name] = std::move(t);
    values_[name] = std::move(v);
    return Status::ok();
  }

  Status infer_shape(size_t index) {
    const Node& node = graph_.nodes[index];
    std::vector<const Shape*> operands;
    for (const std::string& name : node.inputs) {
      if (name.empty()) {
        operands.push_back(nullptr);
      } else if (auto it = context_.shapes.find(name); it != context_.shapes.end()) {
        operands.push_back(&it->second);
      } else if (const Tensor* c = graph_.constant(name)) {
        operands.push_back(&c->shape);
      } else {
        return Status::invalid_argument(node_label(node, index) + ": input '" + name +
                                        "' is not a graph input, a constant or an earlier node's output");
      }
    }
    auto shape = node_output_shape(node, operands);
    if (!shape) return Status(shape.status().code(), node_label(node, index) + ": " + shape.status().message());
    context_.shapes[node.outputs[0]] = std::move(shape).value();
    return Status::ok();
  }

  // Initializers and folded values no node reads (shape arithmetic, Clip's bounds, Slice's
  // bounds) are not kept.
  void drop_unread_constants() {
    std::set<std::string> read;
    for (const Node& node : graph_.nodes) read.insert(node.inputs.begin(), node.inputs.end());
    for (const ValueInfo& out : graph_.outputs) read.insert(out.name);
    for (auto it = graph_.constants.begin(); it != graph_.constants.end();) {
      it = read.count(it->first) != 0 ? std::next(it) : graph_.constants.erase(it);
    }
  }

  Graph graph_;
  onnx_import::ImportContext context_;
  std::deque<TensorProto> protos_;  // folded values, which context_.constants points into
  std::map<std::string, onnx_import::ConstValue> values_;
  bool dynamic_ = false;  // a graph input has a dynamic dim
};

Result<Graph> convert_graph(const GraphProto& proto, int64_t opset) {
  GraphImport import(opset);
  import.set_name(proto.name());
  for (const TensorProto& init : proto.initializer()) TESSERA_RETURN_IF_ERROR(import.add_initializer(init));
  for (const ValueInfoProto& input : proto.input()) TESSERA_RETURN_IF_ERROR(import.add_input(input));
  if (!import.has_inputs()) return Status::invalid_argument("the graph has no input");
  for (const auto& node : proto.node()) TESSERA_RETURN_IF_ERROR(import.add_node(node));
  return import.finish(proto);
}

}  // namespace

Result<Graph> import_onnx(std::span<const uint8_t> bytes) {
  if (bytes.empty()) return Status::invalid_argument("the ONNX file is empty");
  if (bytes.size() > static_cast<size_t>(INT32_MAX)) {
    return Status::invalid_argument("the ONNX file is larger than protobuf's 2 GiB limit");
  }
  ModelProto model;
  if (!model.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return Status::invalid_argument("not a valid ONNX model (the protobuf does not parse)");
  }
  if (!model.has_graph()) return Status::invalid_argument("the ONNX model has no graph");
  TESSERA_ASSIGN_OR_RETURN(int64_t opset, default_domain_opset(model));
  return convert_graph(model.graph(), opset);
}

Result<Graph> import_onnx_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return Status::not_found("cannot open ONNX model " + path.string());
  std::vector<uint8_t> bytes(static_cast<size_t>(in.tellg()));
  in.seekg(0);
  if (!in.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()))) {
    return Status::invalid_argument("cannot read ONNX model " + path.string());
  }
  auto graph = import_onnx(bytes);
  if (!graph) return Status(graph.status().code(), path.filename().string() + ": " + graph.status().message());
  return graph;
}

}  // namespace tessera
