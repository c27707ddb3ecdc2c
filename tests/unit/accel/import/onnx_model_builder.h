// Builds small ONNX models with the protobuf API for the importer's tests.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "accel/import/onnx/onnx_importer.h"
#include "onnx.pb.h"

namespace tessera::testing {

using tessera::onnx::AttributeProto;
using tessera::onnx::ModelProto;
using tessera::onnx::NodeProto;
using tessera::onnx::TensorProto;

// Float inputs [N,...] (dim 0 dynamic, or static with static_batch()), one output.
class ModelBuilder {
 public:
  explicit ModelBuilder(int64_t opset = 13) {
    model_.set_ir_version(8);
    auto* op = model_.add_opset_import();
    op->set_domain("");
    op->set_version(opset);
    model_.mutable_graph()->set_name("test");
  }

  // Graph inputs declared after this have a static dim 0.
  ModelBuilder& static_batch() {
    static_batch_ = true;
    return *this;
  }
  ModelBuilder& input(const std::string& name, const std::vector<int64_t>& dims) {
    value(model_.mutable_graph()->add_input(), name, dims);
    return *this;
  }
  ModelBuilder& output(const std::string& name) {
    value(model_.mutable_graph()->add_output(), name, {});
    return *this;
  }
  TensorProto* initializer(const std::string& name, const std::vector<int64_t>& dims,
                           const std::vector<float>& values) {
    TensorProto* t = model_.mutable_graph()->add_initializer();
    fill(t, name, dims, values);
    return t;
  }
  TensorProto* int64_initializer(const std::string& name, const std::vector<int64_t>& values) {
    TensorProto* t = model_.mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(TensorProto::INT64);
    t->add_dims(static_cast<int64_t>(values.size()));
    for (int64_t v : values) t->add_int64_data(v);
    return t;
  }
  NodeProto* node(const std::string& op, const std::vector<std::string>& inputs,
                  const std::vector<std::string>& outputs, const std::string& name = "") {
    NodeProto* n = model_.mutable_graph()->add_node();
    n->set_op_type(op);
    n->set_name(name.empty() ? op + "_" + std::to_string(model_.graph().node_size()) : name);
    for (auto& i : inputs) n->add_input(i);
    for (auto& o : outputs) n->add_output(o);
    return n;
  }
  static void ints(NodeProto* n, const std::string& name, const std::vector<int64_t>& values) {
    AttributeProto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(AttributeProto::INTS);
    for (int64_t v : values) a->add_ints(v);
  }
  static void integer(NodeProto* n, const std::string& name, int64_t v) {
    AttributeProto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(AttributeProto::INT);
    a->set_i(v);
  }
  static void real(NodeProto* n, const std::string& name, float v) {
    AttributeProto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(AttributeProto::FLOAT);
    a->set_f(v);
  }
  static void fill(TensorProto* t, const std::string& name, const std::vector<int64_t>& dims,
                   const std::vector<float>& values) {
    t->set_name(name);
    t->set_data_type(TensorProto::FLOAT);
    for (int64_t d : dims) t->add_dims(d);
    t->set_raw_data(std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float)));
  }

  ModelProto& proto() { return model_; }
  Result<Graph> import() {
    std::string bytes = model_.SerializeAsString();
    return import_onnx({reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()});
  }

 private:
  void value(tessera::onnx::ValueInfoProto* v, const std::string& name, const std::vector<int64_t>& dims) const {
    v->set_name(name);
    auto* tt = v->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(TensorProto::FLOAT);
    auto* shape = tt->mutable_shape();
    for (size_t i = 0; i < dims.size(); ++i) {
      auto* d = shape->add_dim();
      if (i == 0 && !static_batch_)
        d->set_dim_param("N");
      else
        d->set_dim_value(dims[i]);
    }
  }
  ModelProto model_;
  bool static_batch_ = false;
};

// An import refused with `code` and a message containing `fragment` (the node or the reason).
inline void expect_import_error(const Result<Graph>& graph, StatusCode code, const std::string& fragment) {
  ASSERT_FALSE(graph.is_ok());
  EXPECT_EQ(graph.status().code(), code) << graph.status().to_string();
  EXPECT_NE(graph.status().message().find(fragment), std::string::npos) << graph.status().message();
}

}  // namespace tessera::testing
