#include "accel/import/caffe/caffe_importer.h"

#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/text_format.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <vector>

#include "accel/graph/op_shapes.h"
#include "accel/import/caffe/caffe_layers.h"
#include "caffe.pb.h"

namespace tessera {
namespace {

// Collects the text parser's errors and warnings (unknown fields are warnings: the parser skips
// them so that an unsupported layer's parameters do not hide the clearer "unsupported layer"
// error; they become errors afterwards).
class TextErrors : public google::protobuf::io::ErrorCollector {
 public:
  struct Warning {
    int line;  // 0-based
    std::string text;
  };
  explicit TextErrors(std::string source) : source_(std::move(source)) {}
  void AddError(int line, google::protobuf::io::ColumnNumber column, const std::string& message) override {
    if (errors_.empty()) errors_ = where(line, column) + message;
  }
  void AddWarning(int line, google::protobuf::io::ColumnNumber column, const std::string& message) override {
    warnings_.push_back(Warning{line, where(line, column) + message});
  }
  const std::string& first_error() const { return errors_; }
  const std::vector<Warning>& warnings() const { return warnings_; }

 private:
  std::string where(int line, google::protobuf::io::ColumnNumber column) const {
    return source_ + ":" + std::to_string(line + 1) + ":" + std::to_string(column + 1) + ": ";
  }
  std::string source_;
  std::string errors_;
  std::vector<Warning> warnings_;
};

// Caffe's V1 layer types under their current names (UpgradeV1LayerType); the others keep their
// enum name and are reported as unsupported.
std::string v1_type_name(caffe::V1LayerParameter::LayerType type) {
  using V1 = caffe::V1LayerParameter;
  static const std::map<int, std::string> names = {
      {V1::CONVOLUTION, "Convolution"},
      {V1::POOLING, "Pooling"},
      {V1::RELU, "ReLU"},
      {V1::INNER_PRODUCT, "InnerProduct"},
      {V1::LRN, "LRN"},
      {V1::CONCAT, "Concat"},
      {V1::ELTWISE, "Eltwise"},
      {V1::DROPOUT, "Dropout"},
      {V1::SOFTMAX, "Softmax"},
      {V1::FLATTEN, "Flatten"},
      {V1::SPLIT, "Split"},
      {V1::DATA, "Data"},
      {V1::SOFTMAX_LOSS, "SoftmaxWithLoss"},
      {V1::ACCURACY, "Accuracy"},
      {V1::SIGMOID, "Sigmoid"},
      {V1::TANH, "TanH"},
  };
  auto it = names.find(type);
  return it != names.end() ? it->second : V1::LayerType_Name(type);
}

// A V1 layer as a current one (Caffe's UpgradeV1LayerParameter, for the fields Tessera reads).
caffe::LayerParameter upgrade_v1(const caffe::V1LayerParameter& v1) {
  caffe::LayerParameter layer;
  layer.set_name(v1.name());
  layer.set_type(v1_type_name(v1.type()));
  layer.mutable_bottom()->CopyFrom(v1.bottom());
  layer.mutable_top()->CopyFrom(v1.top());
  layer.mutable_include()->CopyFrom(v1.include());
  layer.mutable_exclude()->CopyFrom(v1.exclude());
  layer.mutable_blobs()->CopyFrom(v1.blobs());
  if (v1.has_concat_param()) *layer.mutable_concat_param() = v1.concat_param();
  if (v1.has_convolution_param()) *layer.mutable_convolution_param() = v1.convolution_param();
  if (v1.has_dropout_param()) *layer.mutable_dropout_param() = v1.dropout_param();
  if (v1.has_eltwise_param()) *layer.mutable_eltwise_param() = v1.eltwise_param();
  if (v1.has_inner_product_param()) *layer.mutable_inner_product_param() = v1.inner_product_param();
  if (v1.has_lrn_param()) *layer.mutable_lrn_param() = v1.lrn_param();
  if (v1.has_pooling_param()) *layer.mutable_pooling_param() = v1.pooling_param();
  if (v1.has_relu_param()) *layer.mutable_relu_param() = v1.relu_param();
  if (v1.has_softmax_param()) *layer.mutable_softmax_param() = v1.softmax_param();
  return layer;
}

std::vector<caffe::LayerParameter> all_layers(const caffe::NetParameter& net) {
  std::vector<caffe::LayerParameter> layers;
  for (const auto& v1 : net.layers()) layers.push_back(upgrade_v1(v1));
  for (const auto& layer : net.layer()) layers.push_back(layer);
  return layers;
}

// Whether a layer runs in the TEST phase (deploy): Caffe's include/exclude NetStateRules, by
// phase only (levels and stages are not used at deploy time).
bool in_test_phase(const caffe::LayerParameter& layer) {
  if (layer.has_phase() && layer.phase() != caffe::TEST) return false;
  if (layer.include_size() > 0) {
    bool any = false;
    for (const auto& rule : layer.include()) any = any || !rule.has_phase() || rule.phase() == caffe::TEST;
    if (!any) return false;
  }
  for (const auto& rule : layer.exclude()) {
    if (!rule.has_phase() || rule.phase() == caffe::TEST) return false;
  }
  return true;
}

Result<std::vector<uint8_t>> read_file(const std::filesystem::path& path, const char* what) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return Status::not_found(std::string("cannot open ") + what + " " + path.string());
  std::vector<uint8_t> bytes(static_cast<size_t>(in.tellg()));
  in.seekg(0);
  if (!in.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()))) {
    return Status::invalid_argument(std::string("cannot read ") + what + " " + path.string());
  }
  return bytes;
}

// The network's legacy inputs (`input:` with `input_shape` or four `input_dim` each).
Status add_legacy_inputs(const caffe::NetParameter& net, caffe_import::NetBuilder& builder) {
  if (net.input_size() == 0) return Status::ok();
  const bool by_dim = net.input_dim_size() > 0;
  if (by_dim && net.input_dim_size() != 4 * net.input_size()) {
    return Status::invalid_argument("the network declares " + std::to_string(net.input_size()) + " input(s) but " +
                                    std::to_string(net.input_dim_size()) +
                                    " input_dim values (4 per input are needed)");
  }
  if (!by_dim && net.input_shape_size() != net.input_size()) {
    return Status::invalid_argument("the network declares " + std::to_string(net.input_size()) + " input(s) but " +
                                    std::to_string(net.input_shape_size()) + " input_shape entries");
  }
  for (int i = 0; i < net.input_size(); ++i) {
    Shape shape;
    if (by_dim) {
      for (int d = 0; d < 4; ++d) shape.push_back(net.input_dim(4 * i + d));
    } else {
      shape.assign(net.input_shape(i).dim().begin(), net.input_shape(i).dim().end());
    }
    TESSERA_RETURN_IF_ERROR(builder.add_input(net.input(i), shape, "network input '" + net.input(i) + "'"));
  }
  return Status::ok();
}

}  // namespace

Result<Graph> import_caffe(std::string_view prototxt, std::span<const uint8_t> caffemodel, const std::string& source) {
  caffe::NetParameter net;
  {
    TextErrors errors(source);
    google::protobuf::TextFormat::Parser parser;
    parser.RecordErrorsTo(&errors);
    parser.AllowUnknownField(true);
    google::protobuf::TextFormat::ParseInfoTree locations;
    parser.WriteLocationsTo(&locations);
    if (!parser.ParseFromString(std::string(prototxt), &net)) {
      return Status::invalid_argument(errors.first_error().empty() ? source + ": not a valid prototxt"
                                                                   : errors.first_error());
    }
    // A field Tessera's schema lacks: the unsupported layer that carries it is the better error;
    // otherwise the unknown field itself (a typo such as `kernal_size` must not pass unnoticed),
    // unless it sits in a layer the deploy net leaves out (a TRAIN-phase Data layer's data_param).
    if (!errors.warnings().empty()) {
      for (const auto& layer : all_layers(net)) {
        if (in_test_phase(layer) && !caffe_import::is_supported_layer_type(layer.type())) {
          return caffe_import::unsupported_layer_error(layer);
        }
      }
      // Each layer's first line, to find the layer a warning's line falls in.
      std::vector<std::pair<int, bool>> starts;  // (line, in the TEST phase)
      starts.reserve(static_cast<size_t>(net.layers_size()));
      const auto* d = caffe::NetParameter::descriptor();
      for (int i = 0; i < net.layers_size(); ++i) {
        starts.emplace_back(locations.GetLocation(d->FindFieldByName("layers"), i).line,
                            in_test_phase(upgrade_v1(net.layers(i))));
      }
      for (int i = 0; i < net.layer_size(); ++i) {
        starts.emplace_back(locations.GetLocation(d->FindFieldByName("layer"), i).line, in_test_phase(net.layer(i)));
      }
      std::sort(starts.begin(), starts.end());
      for (const auto& warning : errors.warnings()) {
        bool used = true;  // outside every layer: a top-level field
        for (const auto& [line, test_phase] : starts) {
          if (line <= warning.line) used = test_phase;
        }
        if (used) return Status::invalid_argument(warning.text);
      }
    }
  }
  if (net.layer_size() > 0 && net.layers_size() > 0) {
    return Status::invalid_argument(source + ": mixes `layer` and legacy `layers` entries; use one form");
  }

  // Trained weights by layer name, from the caffemodel (either layer form) and, where a layer in
  // the prototxt carries blobs itself, from there.
  caffe::NetParameter weights_net;
  if (!caffemodel.empty()) {
    if (caffemodel.size() > static_cast<size_t>(INT32_MAX)) {
      return Status::invalid_argument("the caffemodel is larger than protobuf's 2 GiB limit");
    }
    if (!weights_net.ParseFromArray(caffemodel.data(), static_cast<int>(caffemodel.size()))) {
      return Status::invalid_argument("not a valid caffemodel (the binary NetParameter does not parse)");
    }
  }
  const std::vector<caffe::LayerParameter> weight_layers = all_layers(weights_net);
  const std::vector<caffe::LayerParameter> layers = all_layers(net);
  caffe_import::WeightsByLayer weights;
  for (const auto& layer : weight_layers) {
    if (layer.blobs_size() > 0) weights[layer.name()] = &layer.blobs();
  }
  for (const auto& layer : layers) {
    if (layer.blobs_size() > 0) weights[layer.name()] = &layer.blobs();
  }

  caffe_import::NetBuilder builder(net.name(), std::move(weights), !caffemodel.empty());
  TESSERA_RETURN_IF_ERROR(add_legacy_inputs(net, builder));
  std::set<std::string> names;
  for (const auto& layer : layers) {
    if (!in_test_phase(layer)) continue;
    if (!layer.name().empty() && !names.insert(layer.name()).second) {
      return Status::invalid_argument("layer '" + layer.name() + "' is defined twice");
    }
    TESSERA_RETURN_IF_ERROR(builder.add_layer(layer));
  }
  return builder.finish();
}

Result<Graph> import_caffe_files(const std::filesystem::path& prototxt, const std::filesystem::path& caffemodel) {
  TESSERA_ASSIGN_OR_RETURN(std::vector<uint8_t> text, read_file(prototxt, "Caffe prototxt"));
  std::vector<uint8_t> weights;
  if (!caffemodel.empty()) {
    TESSERA_ASSIGN_OR_RETURN(weights, read_file(caffemodel, "caffemodel"));
  }
  auto graph = import_caffe(std::string_view(reinterpret_cast<const char*>(text.data()), text.size()), weights,
                            prototxt.filename().string());
  if (!graph) {
    const std::string name = caffemodel.empty() ? prototxt.filename().string()
                                                : prototxt.filename().string() + " + " + caffemodel.filename().string();
    return Status(graph.status().code(), name + ": " + graph.status().message());
  }
  return graph;
}

Result<Tensor> parse_caffe_mean(std::span<const uint8_t> bytes) {
  caffe::BlobProto blob;
  if (bytes.empty() || bytes.size() > static_cast<size_t>(INT32_MAX) ||
      !blob.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return Status::invalid_argument("not a valid mean.binaryproto (a Caffe BlobProto)");
  }
  TESSERA_ASSIGN_OR_RETURN(Tensor t, caffe_import::blob_to_tensor(blob, "the mean blob"));
  Shape s = t.shape;
  while (s.size() > 3 && s.front() == 1) s.erase(s.begin());
  if (s.size() != 3) {
    return Status::invalid_argument("the mean blob has shape " + shape_to_string(t.shape) +
                                    "; a mean image is [1,] C x H x W");
  }
  t.shape = s;
  return t;
}

Result<Tensor> read_caffe_mean_file(const std::filesystem::path& path) {
  TESSERA_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, read_file(path, "mean file"));
  auto mean = parse_caffe_mean(bytes);
  if (!mean) return Status(mean.status().code(), path.string() + ": " + mean.status().message());
  return mean;
}

}  // namespace tessera
