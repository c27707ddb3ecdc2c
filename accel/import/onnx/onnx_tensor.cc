#include "accel/import/onnx/onnx_tensor.h"

#include <cstring>

namespace tessera::onnx_import {
namespace {

using tessera::onnx::TensorProto;

Status check_location(const TensorProto& proto, const std::string& what) {
  if (proto.data_location() == TensorProto::EXTERNAL) {
    return Status::unimplemented(what +
                                 ": weights stored as external data are not supported; "
                                 "save the model with all tensors inside the .onnx file");
  }
  for (int64_t d : proto.dims()) {
    if (d < 0) return Status::invalid_argument(what + ": negative dimension in tensor shape");
  }
  return Status::ok();
}

Shape dims_of(const TensorProto& proto) { return Shape(proto.dims().begin(), proto.dims().end()); }

// Copies `count` little-endian elements of type T out of raw_data, converting to Out.
template <class T, class Out>
Status read_raw(const TensorProto& proto, int64_t count, std::vector<Out>& out, const std::string& what) {
  const std::string& raw = proto.raw_data();
  constexpr auto kBytes = static_cast<int64_t>(sizeof(T));
  // The count is compared in elements first: a hostile shape's count (saturated at int64's
  // maximum by shape_elements) times the element size would overflow (found by fuzz_onnx_import).
  const auto held = static_cast<int64_t>(raw.size());
  if (count > held / kBytes || held != count * kBytes) {
    return Status::invalid_argument(what + ": raw_data holds " + std::to_string(raw.size()) + " bytes, shape " +
                                    shape_to_string(dims_of(proto)) + " needs " + std::to_string(count) +
                                    " elements of " + std::to_string(kBytes) + " bytes");
  }
  out.resize(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) {
    T v;
    std::memcpy(&v, raw.data() + i * static_cast<int64_t>(sizeof(T)), sizeof(T));
    out[static_cast<size_t>(i)] = static_cast<Out>(v);
  }
  return Status::ok();
}

template <class Field, class Out>
Status read_field(const Field& field, int64_t count, std::vector<Out>& out, const std::string& what) {
  if (static_cast<int64_t>(field.size()) != count) {
    return Status::invalid_argument(what + ": tensor holds " + std::to_string(field.size()) +
                                    " values, its shape needs " + std::to_string(count));
  }
  out.assign(field.begin(), field.end());
  return Status::ok();
}

}  // namespace

Result<Tensor> to_float_tensor(const TensorProto& proto, const std::string& what) {
  TESSERA_RETURN_IF_ERROR(check_location(proto, what));
  Tensor t;
  t.shape = dims_of(proto);
  const int64_t count = shape_elements(t.shape);
  const bool raw = proto.has_raw_data();
  switch (proto.data_type()) {
    case TensorProto::FLOAT:
      TESSERA_RETURN_IF_ERROR(raw ? read_raw<float>(proto, count, t.data, what)
                                  : read_field(proto.float_data(), count, t.data, what));
      break;
    case TensorProto::DOUBLE:
      TESSERA_RETURN_IF_ERROR(raw ? read_raw<double>(proto, count, t.data, what)
                                  : read_field(proto.double_data(), count, t.data, what));
      break;
    case TensorProto::INT64:
      TESSERA_RETURN_IF_ERROR(raw ? read_raw<int64_t>(proto, count, t.data, what)
                                  : read_field(proto.int64_data(), count, t.data, what));
      break;
    case TensorProto::INT32:
      TESSERA_RETURN_IF_ERROR(raw ? read_raw<int32_t>(proto, count, t.data, what)
                                  : read_field(proto.int32_data(), count, t.data, what));
      break;
    case TensorProto::INT8:
      TESSERA_RETURN_IF_ERROR(raw ? read_raw<int8_t>(proto, count, t.data, what)
                                  : read_field(proto.int32_data(), count, t.data, what));
      break;
    case TensorProto::UINT8:
      TESSERA_RETURN_IF_ERROR(raw ? read_raw<uint8_t>(proto, count, t.data, what)
                                  : read_field(proto.int32_data(), count, t.data, what));
      break;
    default:
      return Status::unimplemented(what + ": tensor element type " + std::to_string(proto.data_type()) +
                                   " is not supported (float, double, int8/32/64, uint8 are)");
  }
  return t;
}

Result<std::vector<int64_t>> to_int64_values(const TensorProto& proto, const std::string& what) {
  TESSERA_RETURN_IF_ERROR(check_location(proto, what));
  const int64_t count = shape_elements(dims_of(proto));
  std::vector<int64_t> values;
  const bool raw = proto.has_raw_data();
  switch (proto.data_type()) {
    case TensorProto::INT64:
      TESSERA_RETURN_IF_ERROR(raw ? read_raw<int64_t>(proto, count, values, what)
                                  : read_field(proto.int64_data(), count, values, what));
      break;
    case TensorProto::INT32:
      TESSERA_RETURN_IF_ERROR(raw ? read_raw<int32_t>(proto, count, values, what)
                                  : read_field(proto.int32_data(), count, values, what));
      break;
    default:
      return Status::invalid_argument(what + ": expected an int64 or int32 tensor, got element type " +
                                      std::to_string(proto.data_type()));
  }
  return values;
}

}  // namespace tessera::onnx_import
