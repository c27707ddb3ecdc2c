#include "accel/device/device_registry.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <utility>

namespace tessera {
namespace {

Result<std::vector<BackendDevice>> open_emu(const DeviceOptions& options, const DeviceTarget& target) {
  TESSERA_ASSIGN_OR_RETURN(BackendDevice device, open_emu_backend(target, options.emu));
  std::vector<BackendDevice> devices;
  devices.push_back(std::move(device));
  return devices;
}

Result<std::vector<BackendDevice>> open_xrt(const DeviceOptions& options, const DeviceTarget& target) {
  auto devices = open_xrt_backend(target, options.xrt);
  if (!devices.is_ok()) return Status(devices.status().code(), "--device xrt: " + devices.status().message());
  return devices;
}

// The emulator, with a note saying why XRT was not used.
Result<std::vector<BackendDevice>> fall_back_to_emu(const DeviceOptions& options, const DeviceTarget& target,
                                                    const std::string& why) {
  auto devices = open_emu(options, target);
  if (devices.is_ok()) devices->front().note = "device auto: " + why + ", using the emulator";
  return devices;
}

Result<std::vector<BackendDevice>> open_auto(const DeviceOptions& options, const DeviceTarget& target) {
  if (!xrt_backend_built()) return fall_back_to_emu(options, target, "built without XRT");
  const Result<unsigned> count = count_xrt_devices();
  if (!count.is_ok()) {
    return fall_back_to_emu(options, target, "XRT unusable (" + count.status().message() + ")");
  }
  if (*count == 0) return fall_back_to_emu(options, target, "no Xilinx device found");
  if (resolve_xclbin(options.xrt).empty()) {
    return fall_back_to_emu(options, target,
                            std::to_string(*count) +
                                " Xilinx device(s) found but no xclbin (--xclbin, $TESSERA_XCLBIN, "
                                "/opt/tessera/tessera_accel.xclbin or .awsxclbin)");
  }
  auto devices = open_xrt_backend(target, options.xrt);
  if (!devices.is_ok()) {
    return fall_back_to_emu(options, target, "Xilinx device not usable (" + devices.status().message() + ")");
  }
  for (BackendDevice& opened : *devices) {
    const DeviceInfo info = opened.device->info();
    opened.note = "device auto: using Xilinx device " + std::to_string(target.index) + ", " + info.name + " (" +
                  info.detail + ")";
  }
  return devices;
}

// "--devices all": one emulator instance.
Result<std::vector<unsigned>> all_emu(const DeviceOptions&) { return std::vector<unsigned>{0}; }

// The indices of the Xilinx devices XRT sees; empty when there are none (or XRT is not usable).
Result<std::vector<unsigned>> xrt_indices() {
  const Result<unsigned> count = xrt_backend_built() ? count_xrt_devices() : Result<unsigned>(0U);
  if (!count.is_ok()) return count.status();
  std::vector<unsigned> indices(*count);
  for (unsigned i = 0; i < *count; ++i) indices[i] = i;
  return indices;
}

// "--devices all": every Xilinx device.
Result<std::vector<unsigned>> all_xrt(const DeviceOptions&) {
  auto indices = xrt_indices();
  if (indices.is_ok() && !indices->empty()) return indices;
  return Status::not_found("--devices all: no Xilinx device found" +
                           (indices.is_ok() ? std::string() : " (" + indices.status().message() + ")"));
}

// "--devices all": every Xilinx device when there is one and an xclbin, else one emulator.
Result<std::vector<unsigned>> all_auto(const DeviceOptions& options) {
  auto indices = xrt_indices();
  if (indices.is_ok() && !indices->empty() && !resolve_xclbin(options.xrt).empty()) return indices;
  return std::vector<unsigned>{0};
}

constexpr std::array<DeviceBackend, 3> kBackends = {{
    {"auto", open_auto, all_auto, "xrt when a Xilinx device and an xclbin are present, else emu"},
    {"emu", open_emu, all_emu, "bit-exact software emulation of the accelerator, modelled fabric time"},
    {"xrt", open_xrt, all_xrt, "a Zynq/ZynqMP board or Alveo/AWS F1 card through XRT (needs an xclbin)"},
}};

}  // namespace

std::span<const DeviceBackend> device_backends() { return kBackends; }

std::string device_kinds() {
  std::string kinds;
  for (const DeviceBackend& backend : kBackends) kinds += (kinds.empty() ? "" : ", ") + std::string(backend.name);
  return kinds;
}

namespace {

const DeviceBackend* find_backend(const std::string& kind) {
  for (const DeviceBackend& backend : kBackends) {
    if (kind == backend.name) return &backend;
  }
  return nullptr;
}

Status unknown_kind(const std::string& kind) {
  return Status::invalid_argument("unknown device kind '" + kind + "' (kinds: " + device_kinds() + ")");
}

}  // namespace

Result<std::unique_ptr<Device>> open_device(const DeviceOptions& options, std::string* log_note) {
  const DeviceBackend* backend = find_backend(options.kind);
  if (backend == nullptr) return unknown_kind(options.kind);
  TESSERA_ASSIGN_OR_RETURN(auto devices,
                           backend->factory(options, DeviceTarget{.index = options.index, .board = options.board}));
  if (log_note != nullptr) *log_note = std::move(devices.front().note);
  return std::move(devices.front().device);
}

Result<std::optional<std::vector<unsigned>>> parse_device_list(std::string_view text) {
  if (text == "all") return std::optional<std::vector<unsigned>>();
  std::vector<unsigned> indices;
  const std::string whole(text);
  for (bool more = true; more;) {
    const size_t comma = text.find(',');
    more = comma != std::string_view::npos;
    const std::string_view item = text.substr(0, comma);
    unsigned index = 0;
    const auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), index);
    if (item.empty() || ec != std::errc() || end != item.data() + item.size()) {
      return Status::invalid_argument("--devices wants \"all\" or device indices like \"0,1\", not \"" + whole + "\"");
    }
    if (std::find(indices.begin(), indices.end(), index) != indices.end()) {
      return Status::invalid_argument("--devices names device " + std::to_string(index) + " twice");
    }
    indices.push_back(index);
    if (more) text.remove_prefix(comma + 1);  // "0," leaves an empty item: refused above
  }
  return std::optional<std::vector<unsigned>>(std::move(indices));
}

Result<std::vector<OpenedDevice>> open_devices(const DeviceOptions& options, std::string* log_note) {
  const DeviceBackend* backend = find_backend(options.kind);
  if (backend == nullptr) return unknown_kind(options.kind);
  TESSERA_ASSIGN_OR_RETURN(auto listed, parse_device_list(options.devices));
  std::vector<unsigned> indices;
  if (listed) {
    indices = std::move(*listed);
  } else {
    TESSERA_ASSIGN_OR_RETURN(indices, backend->all(options));
  }
  std::vector<OpenedDevice> devices;
  std::string notes;
  for (unsigned index : indices) {
    const DeviceTarget target{
        .index = index, .list_size = static_cast<unsigned>(indices.size()), .board = options.board};
    TESSERA_ASSIGN_OR_RETURN(auto opened, backend->factory(options, target));
    // A card split into compute units: its devices are numbered in list order.
    const bool split = opened.size() > 1;
    for (BackendDevice& one : opened) {
      const auto number = split ? static_cast<unsigned>(devices.size()) : index;
      if (split || indices.size() > 1) {
        std::string line = "[device ";  // (GCC 12 -Wrestrict misfires on a + chain)
        line += std::to_string(number);
        line += "] ";
        one.note = line + one.note;
      }
      notes += (notes.empty() ? "" : "\n") + one.note;
      devices.push_back({number, std::move(one.device)});
    }
  }
  if (log_note != nullptr) *log_note = std::move(notes);
  return devices;
}

}  // namespace tessera
