#include "accel/device/xrt/xrt_device.h"

#include <experimental/xrt_system.h>
#include <version.h>  // XRT's build version (xrt_build_version)

#include <algorithm>
#include <utility>

#include "accel/device/xrt/xrt_env.h"
#include "accel/device/xrt/xrt_handles.h"
#include "accel/device/xrt/xrt_program.h"
#include "accel/device/xrt/xrt_sensors.h"

namespace tessera {
namespace {

// Device info of type std::string, or `fallback` when this platform does not report it.
template <xrt::info::device Param>
std::string device_text(const xrt::device& device, std::string fallback) {
  try {
    return device.get_info<Param>();
  } catch (const std::exception&) {
    return fallback;
  }
}

template <xrt::info::device Param>
Result<std::string> sensor_json(const xrt::device& device, const char* what) {
  try {
    return device.get_info<Param>();
  } catch (const std::exception& e) {
    return status_from_exception(StatusCode::kUnavailable, std::string("XRT ") + what + " sensors", e);
  }
}

}  // namespace

Result<unsigned> xrt_device_count() {
  const Status env = ensure_xilinx_xrt_env();
  if (!env.is_ok()) return Status::unavailable("XRT environment: " + env.message());
  try {
    return xrt::system::enumerate_devices();
  } catch (const std::exception& e) {
    return status_from_exception(StatusCode::kUnavailable, "XRT: enumerating devices", e);
  }
}

XrtDevice::XrtDevice(std::unique_ptr<XrtHandles> handles, DeviceInfo info, XrtOptions options)
    : handles_(std::move(handles)), info_(std::move(info)), options_(std::move(options)) {}

namespace {

// Opens device `index`, loads `handles.xclbin` onto it and finds the kernel, into `handles`.
Status open_handles(XrtHandles& handles, unsigned index, const std::filesystem::path& xclbin_path) {
  const std::string where = "Xilinx device " + std::to_string(index);
  try {
    handles.device = xrt::device(index);
  } catch (const std::exception& e) {
    return status_from_exception(StatusCode::kUnavailable, "cannot open " + where, e);
  }
  try {
    handles.uuid = handles.device.load_xclbin(handles.xclbin);
  } catch (const std::exception& e) {
    return status_from_exception(StatusCode::kFailedPrecondition, "loading " + xclbin_path.string() + " onto " + where,
                                 e);
  }
  try {
    handles.kernel = xrt::kernel(handles.device, handles.uuid, handles.kernel_name);
  } catch (const std::exception& e) {
    return status_from_exception(StatusCode::kFailedPrecondition,
                                 "kernel " + handles.kernel_name + " of " + xclbin_path.string(), e);
  }
  return Status::ok();
}

// "xclbin uuid U, kernel tessera_accel compute units tessera_accel_1 [program:HP0 weights:HP1 ...]":
// what the xclbin on the card holds, for the daemon's log line at load (the same on a board).
// With `only` set, that compute unit's banks alone (a device per compute unit).
std::string describe_layout(const XclbinLayout& layout, const std::string& only = "") {
  static constexpr const char* kArgNames[kXrtKernelArgs] = {"program", "weights", "quant", "arena", "status"};
  std::string text = "xclbin uuid " + (layout.uuid.empty() ? std::string("unknown") : layout.uuid) + ", kernel " +
                     kXrtKernelName + (only.empty() ? " compute units" : " compute unit");
  bool first = true;
  for (const XclbinComputeUnit& cu : layout.compute_units) {
    if (!only.empty() && cu.name != only) continue;
    text += (first ? " " : ", ") + cu.name + " [";
    first = false;
    for (int arg = 0; arg < kXrtKernelArgs; ++arg) {
      text += std::string(arg == 0 ? "" : " ") + kArgNames[arg] + ":" + (cu.banks[arg].empty() ? "?" : cu.banks[arg]);
    }
    text += "]";
  }
  if (first) text += " none listed";
  if (!only.empty() && layout.compute_units.size() > 1) {
    text += " (1 of " + std::to_string(layout.compute_units.size()) + ")";
  }
  return text;
}

}  // namespace

Result<std::vector<std::string>> xrt_compute_units(const std::filesystem::path& xclbin) {
  TESSERA_ASSIGN_OR_RETURN(const xrt::xclbin file, read_xclbin(xclbin));
  std::vector<std::string> names;
  for (const XclbinComputeUnit& cu : xclbin_layout(file).compute_units) names.push_back(cu.name);
  return names;
}

XrtDevice::~XrtDevice() = default;

Result<std::unique_ptr<Device>> XrtDevice::open(const XrtOptions& options) {
  // xrt_device_count() sets up XILINX_XRT before any other XRT call. The xclbin is a file: it is
  // checked even without a board, so its problem is named either way.
  Result<unsigned> count = xrt_device_count();
  Result<xrt::xclbin> xclbin = read_xclbin(options.xclbin);
  const std::string also = xclbin.is_ok() ? "" : "; also " + xclbin.status().message();
  if (!count.is_ok()) return Status(count.status().code(), count.status().message() + also);
  if (*count == 0) {
    return Status::unavailable("no Xilinx device found (xrt::system::enumerate_devices() = 0)" + also);
  }
  if (options.index >= *count) {
    return Status::unavailable("Xilinx device index " + std::to_string(options.index) + " out of range (" +
                               std::to_string(*count) + " devices)" + also);
  }
  if (!xclbin.is_ok()) return xclbin.status();

  auto handles = std::make_unique<XrtHandles>();
  handles->xclbin = std::move(xclbin).value();
  handles->xclbin_path = options.xclbin;
  const XclbinLayout layout = xclbin_layout(handles->xclbin);
  if (!options.compute_unit.empty()) {
    const bool listed = std::any_of(layout.compute_units.begin(), layout.compute_units.end(),
                                    [&](const XclbinComputeUnit& cu) { return cu.name == options.compute_unit; });
    if (!listed) {
      return Status::failed_precondition("compute unit " + options.compute_unit + " not in xclbin " +
                                         options.xclbin.string() + " (" + describe_layout(layout) + ")");
    }
    handles->kernel_name = std::string(kXrtKernelName) + ":{" + options.compute_unit + "}";
  }
  handles->kernel_clock_mhz = xclbin_data_clock_mhz(handles->xclbin);
  const std::string where = "Xilinx device " + std::to_string(options.index);
  TESSERA_RETURN_IF_ERROR(open_handles(*handles, options.index, options.xclbin));

  DeviceInfo info;
  info.kind = "xrt";
  info.name = device_text<xrt::info::device::name>(handles->device, where);
  info.board = options.board;
  info.clock_mhz = handles->kernel_clock_mhz;
  info.detail = "xclbin " + options.xclbin.string() + ", XRT " + xrt_build_version + ", device " +
                std::to_string(options.index) + " (" + device_text<xrt::info::device::bdf>(handles->device, "no bdf") +
                "), kernel clock " +
                (handles->kernel_clock_mhz ? std::to_string(handles->kernel_clock_mhz) + " MHz" : "unknown") + "; " +
                describe_layout(layout, options.compute_unit);
  return std::unique_ptr<Device>(new XrtDevice(std::move(handles), std::move(info), options));
}

DeviceInfo XrtDevice::info() const { return info_; }

Result<std::unique_ptr<DeviceProgram>> XrtDevice::load(const CompiledProgram& program, uint32_t max_batch) {
  std::lock_guard lock(mu_);
  return XrtProgram::create(*handles_, program, max_batch);
}

Status XrtDevice::reset() {
  // The new handles replace the old ones only once complete: a failed reset leaves the old ones
  // in place (the next reset tries again; the supervisor counts the failure).
  auto handles = std::make_unique<XrtHandles>();
  {
    std::lock_guard lock(mu_);
    handles->xclbin = handles_->xclbin;
    handles->xclbin_path = handles_->xclbin_path;
    handles->kernel_name = handles_->kernel_name;
    handles->kernel_clock_mhz = handles_->kernel_clock_mhz;
  }
  TESSERA_RETURN_IF_ERROR(open_handles(*handles, options_.index, options_.xclbin));
  std::lock_guard lock(mu_);
  handles_ = std::move(handles);
  return Status::ok();
}

Result<DeviceSensors> XrtDevice::sample_sensors() const { return merge_xrt_sensors(electrical_json(), thermal_json()); }

Result<std::string> XrtDevice::electrical_json() const {
  std::lock_guard lock(mu_);
  return sensor_json<xrt::info::device::electrical>(handles_->device, "electrical");
}

Result<std::string> XrtDevice::thermal_json() const {
  std::lock_guard lock(mu_);
  return sensor_json<xrt::info::device::thermal>(handles_->device, "thermal");
}

}  // namespace tessera
