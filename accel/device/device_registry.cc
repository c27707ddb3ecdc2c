#include "accel/device/device_registry.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdlib>
#include <system_error>
#include <thread>
#include <utility>

#include "accel/device/emu/emu_device.h"
#include "accel/device/emu/emu_kernels.h"
#include "accel/device/xrt_backend.h"

namespace tessera {
namespace {

// The emulator for the requested board profile (programs are planned and timed for it).
Result<std::unique_ptr<Device>> open_emu(const DeviceOptions& options, std::string* log_note) {
  EmuDeviceOptions emu_options;
  auto faults = emu::parse_emu_faults(options.emu_faults);
  if (!faults.is_ok()) return faults.status();
  if (auto kernels = emu::select_kernels(); !kernels.is_ok()) return kernels.status();  // TESSERA_EMU_KERNELS
  if (faults->applies_to(options.index)) emu_options.faults = *faults;
  emu_options.threads = options.emu_threads;
  auto device = std::make_unique<EmuDevice>(options.board, emu_options);
  *log_note = "device emu: " + device->info().name;
  if (emu_options.faults.any()) *log_note += "; injected faults: " + options.emu_faults;
  return std::unique_ptr<Device>(std::move(device));
}

Result<std::unique_ptr<Device>> open_xrt(const DeviceOptions& options, std::string* log_note) {
  auto device = open_xrt_device(options);
  if (!device.is_ok()) return Status(device.status().code(), "--device xrt: " + device.status().message());
  const DeviceInfo info = (*device)->info();
  *log_note = "device xrt: " + info.name + " (" + info.detail + ")";
  return device;
}

// The emulator, with a note saying why XRT was not used.
Result<std::unique_ptr<Device>> fall_back_to_emu(const DeviceOptions& options, std::string* log_note,
                                                 const std::string& why) {
  auto device = open_emu(options, log_note);
  *log_note = "device auto: " + why + ", using the emulator";
  return device;
}

Result<std::unique_ptr<Device>> open_auto(const DeviceOptions& options, std::string* log_note) {
  if (!xrt_backend_built()) return fall_back_to_emu(options, log_note, "built without XRT");
  const Result<unsigned> count = count_xrt_devices();
  if (!count.is_ok()) return fall_back_to_emu(options, log_note, "XRT unusable (" + count.status().message() + ")");
  if (*count == 0) return fall_back_to_emu(options, log_note, "no Xilinx device found");
  if (resolve_xclbin(options).empty()) {
    return fall_back_to_emu(options, log_note,
                            std::to_string(*count) +
                                " Xilinx device(s) found but no xclbin (--xclbin, $TESSERA_XCLBIN, "
                                "/opt/tessera/tessera_accel.xclbin or .awsxclbin)");
  }
  auto device = open_xrt_device(options);
  if (!device.is_ok()) {
    return fall_back_to_emu(options, log_note, "Xilinx device not usable (" + device.status().message() + ")");
  }
  const DeviceInfo info = (*device)->info();
  *log_note =
      "device auto: using Xilinx device " + std::to_string(options.index) + ", " + info.name + " (" + info.detail + ")";
  return device;
}

constexpr std::array<DeviceBackend, 3> kBackends = {{
    {"auto", open_auto, "xrt when a Xilinx device and an xclbin are present, else emu"},
    {"emu", open_emu, "bit-exact software emulation of the accelerator, modelled fabric time"},
    {"xrt", open_xrt, "a Zynq/ZynqMP board or Alveo/AWS F1 card through XRT (needs an xclbin)"},
}};

}  // namespace

std::span<const DeviceBackend> device_backends() { return kBackends; }

std::string device_kinds() {
  std::string kinds;
  for (const DeviceBackend& backend : kBackends) kinds += (kinds.empty() ? "" : ", ") + std::string(backend.name);
  return kinds;
}

std::filesystem::path resolve_xclbin(const DeviceOptions& options) {
  if (!options.xclbin.empty()) return options.xclbin;
  if (const char* env = std::getenv("TESSERA_XCLBIN"); env != nullptr && env[0] != '\0') return env;
  for (const char* path : kDefaultXclbinPaths) {
    std::error_code ec;
    if (std::filesystem::is_regular_file(path, ec)) return path;
  }
  return {};
}

Result<std::unique_ptr<Device>> open_device(const DeviceOptions& options, std::string* log_note) {
  std::string note;
  for (const DeviceBackend& backend : kBackends) {
    if (options.kind != backend.name) continue;
    auto device = backend.factory(options, &note);
    if (log_note != nullptr) *log_note = std::move(note);
    return device;
  }
  return Status::invalid_argument("unknown device kind '" + options.kind + "' (kinds: " + device_kinds() + ")");
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

namespace {

// The indices "all" stands for: every Xilinx device when XRT is asked for (or auto finds one),
// else one emulator.
Result<std::vector<unsigned>> all_devices(const DeviceOptions& options) {
  if (options.kind == "emu") return std::vector<unsigned>{0};
  const Result<unsigned> count = xrt_backend_built() ? count_xrt_devices() : Result<unsigned>(0U);
  if (count.is_ok() && *count > 0 && (options.kind == "xrt" || !resolve_xclbin(options).empty())) {
    std::vector<unsigned> indices(*count);
    for (unsigned i = 0; i < *count; ++i) indices[i] = i;
    return indices;
  }
  if (options.kind == "xrt") {
    return Status::not_found("--devices all: no Xilinx device found" +
                             (count.is_ok() ? std::string() : " (" + count.status().message() + ")"));
  }
  return std::vector<unsigned>{0};
}

}  // namespace

Result<std::vector<OpenedDevice>> open_devices(const DeviceOptions& options, std::string* log_note) {
  TESSERA_ASSIGN_OR_RETURN(auto listed, parse_device_list(options.devices));
  std::vector<unsigned> indices;
  if (listed) {
    indices = std::move(*listed);
  } else {
    TESSERA_ASSIGN_OR_RETURN(indices, all_devices(options));
  }
  const unsigned hardware = std::max(1U, std::thread::hardware_concurrency());
  std::vector<OpenedDevice> devices;
  std::string notes;
  for (unsigned index : indices) {
    DeviceOptions one = options;
    one.index = index;
    if (indices.size() > 1 && one.emu_threads == 0) {
      one.emu_threads = std::max(1U, hardware / static_cast<unsigned>(indices.size()));
    }
    std::string note;
    TESSERA_ASSIGN_OR_RETURN(auto device, open_device(one, &note));
    // An xclbin with several instances of the kernel: one device per compute unit of this card,
    // numbered in list order.
    const Result<std::vector<std::string>> units = device->info().kind == "xrt"
                                                       ? xrt_compute_units_of(one)
                                                       : Result<std::vector<std::string>>(std::vector<std::string>{});
    if (units.is_ok() && units->size() > 1) {
      device.reset();
      for (const std::string& unit : *units) {
        one.xrt_compute_unit = unit;
        TESSERA_ASSIGN_OR_RETURN(auto instance, open_device(one, &note));
        const auto number = static_cast<unsigned>(devices.size());
        std::string line = notes.empty() ? "[device " : "\n[device ";  // (GCC 12 -Wrestrict misfires on a + chain)
        line += std::to_string(number);
        line += "] ";
        notes += line + note;
        devices.push_back({number, std::move(instance)});
      }
      continue;
    }
    if (indices.size() > 1) note = "[device " + std::to_string(index) + "] " + note;
    notes += (notes.empty() ? "" : "\n") + note;
    devices.push_back({index, std::move(device)});
  }
  if (log_note != nullptr) *log_note = std::move(notes);
  return devices;
}

}  // namespace tessera
