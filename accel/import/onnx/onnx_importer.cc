#include "accel/import/onnx/onnx_importer.h"

#include <fstream>
#include <set>

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

Result<Graph> convert_graph(const GraphProto& proto, int64_t opset) {
  Graph graph;
  graph.name = proto.name();
  onnx_import::ImportContext context;
  context.opset = opset;

  for (const TensorProto& init : proto.initializer()) {
    if (init.name().empty()) return Status::invalid_argument("an initializer has no name");
    TESSERA_ASSIGN_OR_RETURN(Tensor t, onnx_import::to_float_tensor(init, "initializer '" + init.name() + "'"));
    graph.constants[init.name()] = std::move(t);
    context.constants[init.name()] = &init;
  }
  for (const ValueInfoProto& input : proto.input()) {
    if (graph.constants.count(input.name())) continue;  // older exports list initializers as inputs
    TESSERA_ASSIGN_OR_RETURN(ValueInfo info, value_info(input, "input"));
    graph.inputs.push_back(std::move(info));
  }
  if (graph.inputs.empty()) return Status::invalid_argument("the graph has no input");

  for (const auto& node : proto.node()) {
    if (node.op_type() == "Constant") {
      // Folded at import: its value becomes a constant operand of the nodes that read it.
      const tessera::onnx::AttributeProto* value = nullptr;
      for (const auto& a : node.attribute()) {
        if (a.name() == "value" && a.has_t()) value = &a;
      }
      if (!value || node.output_size() != 1) {
        return Status::unimplemented(onnx_import::describe_node(node) +
                                     ": only Constant nodes with a tensor 'value' are supported");
      }
      TESSERA_ASSIGN_OR_RETURN(Tensor t, onnx_import::to_float_tensor(value->t(), onnx_import::describe_node(node)));
      graph.constants[node.output(0)] = std::move(t);
      context.constants[node.output(0)] = &value->t();
      continue;
    }
    TESSERA_RETURN_IF_ERROR(onnx_import::convert_node(node, context, graph));
  }

  for (const ValueInfoProto& output : proto.output()) {
    TESSERA_ASSIGN_OR_RETURN(ValueInfo info, value_info(output, "output"));
    graph.outputs.push_back(std::move(info));
  }
  if (graph.outputs.empty()) return Status::invalid_argument("the graph has no output");
  TESSERA_RETURN_IF_ERROR(validate_graph(graph));
  return graph;
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
