// Internal to accel/device/xrt/: the XRT handles a loaded xclbin gives, shared by XrtDevice and its
// programs, and the helpers that turn XRT's exceptions and command states into Status. This is
// the only header that includes XRT; include it from accel/device/xrt/*.cc only (the XRT include
// directories are private to tessera_accel).
#pragma once

#include <experimental/xrt_xclbin.h>
#include <xrt/xrt_bo.h>
#include <xrt/xrt_device.h>
#include <xrt/xrt_kernel.h>

#include <cstdint>
#include <exception>
#include <filesystem>
#include <string>
#include <vector>

#include "accel/common/status.h"

namespace tessera {

// The kernel every xclbin of Tessera provides, and its five m_axi arguments (gmem0..gmem4).
constexpr const char* kXrtKernelName = "tessera_accel";
enum XrtKernelArg : int { kArgProgram = 0, kArgWeights = 1, kArgQuant = 2, kArgArena = 3, kArgStatus = 4 };
constexpr int kXrtKernelArgs = 5;

// XRT handles are reference-counted values: copying them keeps the device, the loaded xclbin and
// the kernel alive, so a program stays valid even if its XrtDevice is destroyed first.
struct XrtHandles {
  // "tessera_accel" (XRT picks among all its compute units) or "tessera_accel:{tessera_accel_2}".
  std::string kernel_name = kXrtKernelName;
  xrt::device device;
  xrt::xclbin xclbin;
  xrt::uuid uuid;
  xrt::kernel kernel;
  std::filesystem::path xclbin_path;
  uint32_t kernel_clock_mhz = 0;  // 0 when the xclbin names no data clock
};

// Reads and checks an xclbin file without a device: FAILED_PRECONDITION "xclbin not found: PATH",
// "PATH is not an xclbin (...)", "kernel tessera_accel not in xclbin PATH (kernels: ...)" or a
// kernel without the five arguments.
Result<xrt::xclbin> read_xclbin(const std::filesystem::path& path);

// The data clock (ap_clk of HLS kernels) from the xclbin's CLOCK_FREQ_TOPOLOGY, in MHz; 0 when the
// section or the entry is missing (common on edge platforms).
uint32_t xclbin_data_clock_mhz(const xrt::xclbin& xclbin);

// What an xclbin holds for the log and for opening one compute unit at a time, read from its
// axlf sections (IP_LAYOUT, CONNECTIVITY, MEM_TOPOLOGY) as xclbin_data_clock_mhz reads clocks.
struct XclbinComputeUnit {
  std::string name;                // the instance, "tessera_accel_1"
  std::vector<std::string> banks;  // memory bank tag per argument index ("" when not connected)
};
struct XclbinLayout {
  std::string uuid;
  std::vector<XclbinComputeUnit> compute_units;  // of kernel tessera_accel, in IP_LAYOUT order
};
XclbinLayout xclbin_layout(const xrt::xclbin& xclbin);

// "ERT_CMD_STATE_TIMEOUT" etc.
const char* ert_state_name(ert_cmd_state state);

// "`what`: <exception text>" with `code`; for catch (const std::exception&) blocks.
Status status_from_exception(StatusCode code, const std::string& what, const std::exception& e);

}  // namespace tessera
