#include "server/kserve/shared_memory_params.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <limits>
#include <utility>

#include "server/kserve/raw_contents.h"

namespace tessera::kserve {
namespace {

using nlohmann::json;

constexpr std::string_view kRegion = "shared_memory_region";
constexpr std::string_view kOffset = "shared_memory_offset";
constexpr std::string_view kByteSize = "shared_memory_byte_size";

// One parameter, whichever transport carried it.
struct Param {
  enum class Kind { kAbsent, kString, kInteger, kOther } kind = Kind::kAbsent;
  std::string text;
  int64_t integer = 0;
};

Param other() { return {Param::Kind::kOther, "", 0}; }

Param proto_param(const ProtoParameters& params, std::string_view key) {
  const auto it = params.find(std::string(key));
  if (it == params.end()) return {};
  const inference::InferParameter& p = it->second;
  switch (p.parameter_choice_case()) {
    case inference::InferParameter::kStringParam: return {Param::Kind::kString, p.string_param(), 0};
    case inference::InferParameter::kInt64Param: return {Param::Kind::kInteger, "", p.int64_param()};
    case inference::InferParameter::kUint64Param:
      if (p.uint64_param() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return other();
      return {Param::Kind::kInteger, "", static_cast<int64_t>(p.uint64_param())};
    default: return other();
  }
}

Param json_param(const json* params, std::string_view key) {
  if (params == nullptr) return {};
  const auto it = params->find(key);
  if (it == params->end()) return {};
  if (it->is_string()) return {Param::Kind::kString, it->get<std::string>(), 0};
  if (it->is_number_unsigned()) {
    if (it->get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return other();
    return {Param::Kind::kInteger, "", static_cast<int64_t>(it->get<uint64_t>())};
  }
  if (it->is_number_integer()) return {Param::Kind::kInteger, "", it->get<int64_t>()};
  return other();
}

Status param_error(std::string_view field, std::string_view key, const std::string& why) {
  return Status::invalid_argument(std::string(field) + "." + std::string(key) + ": " + why);
}

// A size or offset: an integer >= 0.
Result<uint64_t> size_param(const Param& p, std::string_view field, std::string_view key) {
  if (p.kind != Param::Kind::kInteger) return param_error(field, key, "must be an integer (int64_param)");
  if (p.integer < 0) return param_error(field, key, std::to_string(p.integer) + " is negative");
  return static_cast<uint64_t>(p.integer);
}

Result<std::optional<ShmRef>> ref_from(const Param& region, const Param& offset, const Param& byte_size,
                                       std::string_view field) {
  if (region.kind == Param::Kind::kAbsent) {
    if (offset.kind != Param::Kind::kAbsent || byte_size.kind != Param::Kind::kAbsent) {
      return param_error(field, offset.kind != Param::Kind::kAbsent ? kOffset : kByteSize,
                         "can not be specified without 'shared_memory_region'");
    }
    return std::optional<ShmRef>();
  }
  if (region.kind != Param::Kind::kString) return param_error(field, kRegion, "must be a string (string_param)");
  if (byte_size.kind == Param::Kind::kAbsent) {
    return param_error(field, kByteSize, "must be specified along with 'shared_memory_region'");
  }
  ShmRef ref;
  ref.region = region.text;
  TESSERA_ASSIGN_OR_RETURN(ref.byte_size, size_param(byte_size, field, kByteSize));
  if (offset.kind != Param::Kind::kAbsent) {
    TESSERA_ASSIGN_OR_RETURN(ref.offset, size_param(offset, field, kOffset));
  }
  return std::optional<ShmRef>(std::move(ref));
}

// The region `ref` names, with its window [offset, offset + byte_size) inside it.
Result<std::shared_ptr<const SharedMemoryRegion>> find_window(const ShmRequest* shm, const ShmRef& ref,
                                                              std::string_view field) {
  const std::string where = std::string(field) + "." + std::string(kRegion) + ": ";
  if (shm == nullptr || shm->registry == nullptr) {
    return Status::invalid_argument(where + "system shared memory is not available here");
  }
  auto region = shm->registry->find(ref.region);
  if (!region) return Status(region.status().code(), where + region.status().message());
  const uint64_t size = (*region)->status().byte_size;
  if (ref.offset >= size) {
    return Status::invalid_argument(where + "offset " + std::to_string(ref.offset) + " is past region '" + ref.region +
                                    "' (" + std::to_string(size) + " bytes)");
  }
  if (ref.byte_size > size - ref.offset) {
    return Status::invalid_argument(where + "offset " + std::to_string(ref.offset) + " + byte size " +
                                    std::to_string(ref.byte_size) + " is past region '" + ref.region + "' (" +
                                    std::to_string(size) + " bytes)");
  }
  return region;
}

}  // namespace

Result<std::optional<ShmRef>> shm_ref(const ProtoParameters& params, std::string_view field) {
  return ref_from(proto_param(params, kRegion), proto_param(params, kOffset), proto_param(params, kByteSize), field);
}

Result<std::optional<ShmRef>> shm_ref(const json* params, std::string_view field) {
  return ref_from(json_param(params, kRegion), json_param(params, kOffset), json_param(params, kByteSize), field);
}

Result<std::optional<std::string>> shm_input_bytes(const ShmRequest* shm, const std::optional<ShmRef>& ref,
                                                   bool has_data, std::string_view field) {
  if (!ref) return std::optional<std::string>();
  if (has_data) {
    return Status::invalid_argument(std::string(field) +
                                    ": the input names a shared memory region and carries data too; send one");
  }
  TESSERA_ASSIGN_OR_RETURN(auto region, find_window(shm, *ref, field));
  auto bytes = region->read(ref->offset, ref->byte_size);
  if (!bytes) return Status(bytes.status().code(), std::string(field) + ": " + bytes.status().message());
  return std::optional<std::string>(std::move(bytes).value());
}

Status add_shm_output(ShmRequest* shm, const std::optional<ShmRef>& ref, RequestedOutput& output,
                      const ModelSignature& model, size_t images, std::string_view field) {
  if (!ref) return Status::ok();
  if (output.classification > 0) {
    return Status::invalid_argument(std::string(field) +
                                    ": output can't set both 'shared_memory_region' and 'classification'");
  }
  TESSERA_ASSIGN_OR_RETURN(auto region, find_window(shm, *ref, field));
  const uint64_t needed = static_cast<uint64_t>(images) * static_cast<uint64_t>(std::max(model.num_classes, 0)) * 4;
  if (ref->byte_size < needed) {
    return Status::invalid_argument(std::string(field) +
                                    ": shared memory size specified with the request for output '" + output.name +
                                    "' (" + std::to_string(ref->byte_size) + " bytes) should be at least " +
                                    std::to_string(needed) + " bytes to hold the results");
  }
  shm->outputs.push_back({output.name, *ref, std::move(region)});
  output.shared_memory = true;
  return Status::ok();
}

Status write_shm_outputs(const ShmRequest& shm, const ImageScores& scores) {
  if (shm.outputs.empty()) return Status::ok();
  std::vector<float> rows;
  for (const std::vector<float>& image : scores) rows.insert(rows.end(), image.begin(), image.end());
  const std::string bytes = raw_from_floats(rows);
  for (const ShmOutput& target : shm.outputs) {
    TESSERA_RETURN_IF_ERROR(target.region->write(target.ref.offset, bytes));
  }
  return Status::ok();
}

}  // namespace tessera::kserve
