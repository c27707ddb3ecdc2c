// What the node converters share: typed attribute access, operand checks, and the converter
// tables (onnx_node.cc: the CNN operators; onnx_layout_ops.cc: elementwise functions, layout,
// selection, reductions and normalisation).
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "accel/common/status.h"
#include "accel/graph/graph.h"
#include "accel/import/onnx/onnx_node.h"
#include "onnx.pb.h"

namespace tessera::onnx_import {

using tessera::onnx::AttributeProto;
using tessera::onnx::NodeProto;

// Typed access to a node's attributes; every error names the node and the attribute.
class Attributes {
 public:
  explicit Attributes(const NodeProto& node) : where_(describe_node(node)) {
    for (const AttributeProto& a : node.attribute()) by_name_[a.name()] = &a;
  }

  bool has(const std::string& name) const { return by_name_.count(name) != 0; }

  Result<int64_t> integer(const std::string& name, int64_t fallback) const {
    const AttributeProto* a = find(name);
    if (!a) return fallback;
    if (a->type() != AttributeProto::INT) return wrong_type(name, "an int");
    return a->i();
  }

  Result<float> real(const std::string& name, float fallback) const {
    const AttributeProto* a = find(name);
    if (!a) return fallback;
    if (a->type() != AttributeProto::FLOAT) return wrong_type(name, "a float");
    return a->f();
  }

  Result<std::vector<int64_t>> integers(const std::string& name) const {
    const AttributeProto* a = find(name);
    if (!a) return std::vector<int64_t>{};
    if (a->type() != AttributeProto::INTS) return wrong_type(name, "a list of ints");
    return std::vector<int64_t>(a->ints().begin(), a->ints().end());
  }

  Result<std::string> text(const std::string& name, const std::string& fallback) const {
    const AttributeProto* a = find(name);
    if (!a) return fallback;
    if (a->type() != AttributeProto::STRING) return wrong_type(name, "a string");
    return a->s();
  }

  const AttributeProto* find(const std::string& name) const {
    auto it = by_name_.find(name);
    return it == by_name_.end() ? nullptr : it->second;
  }

  Status error(const std::string& what) const { return Status::invalid_argument(where_ + ": " + what); }
  Status unsupported(const std::string& what) const { return Status::unimplemented(where_ + ": " + what); }

 private:
  Status wrong_type(const std::string& name, const char* expected) const {
    return error("attribute '" + name + "' must be " + expected);
  }

  std::string where_;
  std::map<std::string, const AttributeProto*> by_name_;
};

Status expect_inputs(const tessera::onnx::NodeProto& node, const Attributes& attrs, int min, int max);

// Only the first output may be consumed (Dropout's mask, MaxPool's indices, BatchNorm's
// training statistics are not supported).
Status expect_single_output(const tessera::onnx::NodeProto& node, const Attributes& attrs);

// Operand `index` as int64 values; it must be a constant (an initializer, a Constant node or a
// value folded at import). `what` names it in the error.
Result<std::vector<int64_t>> constant_ints(const tessera::onnx::NodeProto& node, int index, const ImportContext& ctx,
                                           const Attributes& attrs, const std::string& what);

using Converter =
    std::function<Status(const tessera::onnx::NodeProto&, const Attributes&, const ImportContext&, Node&)>;

// A constant Reshape target's dim 0 made 0 ("copy the input's") where it is the batch of a
// batch-of-one export (ImportContext::batch_of_one), so the node runs at any batch.
void keep_batch_dim(const tessera::onnx::NodeProto& node, const ImportContext& ctx, Shape& target);

// Split: one Slice node per output, appended to graph.nodes.
Status convert_split(const tessera::onnx::NodeProto& node, const Attributes& attrs, const ImportContext& ctx,
                     Graph& graph);

// Adds the converters of onnx_layout_ops.cc for `opset` to `table`.
void add_layout_converters(int64_t opset, std::map<std::string, Converter>& table);

}  // namespace tessera::onnx_import
