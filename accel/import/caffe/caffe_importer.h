// Caffe -> Graph. Reads a network definition (deploy.prototxt, protobuf text format, current
// `layer` or legacy V1 `layers`) and its trained weights (.caffemodel, binary NetParameter),
// matching weights to layers by name, into the IR. The schema is accel/import/caffe/caffe.proto,
// written from Caffe's public format (seeds/004 describes the files; seeds/001 maps such
// networks). Unsupported layers, missing weights, blob shape mismatches and syntax errors are
// errors naming the layer (or the line).
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>

#include "accel/common/status.h"
#include "accel/graph/graph.h"
#include "accel/graph/tensor.h"

namespace tessera {

// `prototxt` is the text of the network; `caffemodel` the binary weights (may be empty when the
// prototxt carries its own blobs or no layer has parameters). `source` names the prototxt in
// syntax errors.
Result<Graph> import_caffe(std::string_view prototxt, std::span<const uint8_t> caffemodel,
                           const std::string& source = "deploy.prototxt");
Result<Graph> import_caffe_files(const std::filesystem::path& prototxt, const std::filesystem::path& caffemodel);

// A mean.binaryproto (one BlobProto): the mean image as [C, H, W] (a leading num of 1 dropped).
Result<Tensor> parse_caffe_mean(std::span<const uint8_t> bytes);
Result<Tensor> read_caffe_mean_file(const std::filesystem::path& path);

}  // namespace tessera
