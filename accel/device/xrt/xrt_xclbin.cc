#include <xrt/xclbin.h>

#include <cstddef>
#include <cstring>
#include <system_error>

#include "accel/device/xrt/xrt_handles.h"

namespace tessera {

Result<xrt::xclbin> read_xclbin(const std::filesystem::path& path) {
  if (path.empty()) {
    return Status::failed_precondition(
        "no xclbin given (--xclbin, $TESSERA_XCLBIN or /opt/tessera/tessera_accel.xclbin)");
  }
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    return Status::failed_precondition("xclbin not found: " + path.string());
  xrt::xclbin xclbin;
  try {
    xclbin = xrt::xclbin(path.string());
  } catch (const std::exception& e) {
    return Status::failed_precondition(path.string() + " is not an xclbin (XRT: " + e.what() + ")");
  }
  std::string names;
  try {
    for (const auto& kernel : xclbin.get_kernels()) {
      const std::string name = kernel.get_name();
      if (name == kXrtKernelName) {
        if (kernel.get_num_args() != kXrtKernelArgs) {
          return Status::failed_precondition("kernel " + name + " in " + path.string() + " has " +
                                             std::to_string(kernel.get_num_args()) +
                                             " arguments, expected 5 (program, weights, quant, arena, status)");
        }
        return xclbin;
      }
      names += (names.empty() ? "" : ", ") + name;
    }
  } catch (const std::exception& e) {
    return status_from_exception(StatusCode::kFailedPrecondition, "reading kernels of " + path.string(), e);
  }
  return Status::failed_precondition(std::string("kernel ") + kXrtKernelName + " not in xclbin " + path.string() +
                                     " (kernels: " + (names.empty() ? "none" : names) + ")");
}

uint32_t xclbin_data_clock_mhz(const xrt::xclbin& xclbin) {
  try {
    // Walk the section table ourselves: XRT's own accessor gives the section but not its size.
    const axlf* top = xclbin.get_axlf();
    if (top == nullptr) return 0;
    const char* base = reinterpret_cast<const char*>(top);
    const uint64_t length = top->m_header.m_length;
    const axlf_section_header* sections = top->m_sections;
    for (uint32_t i = 0; i < top->m_header.m_numSections; ++i) {
      const axlf_section_header& section = sections[i];
      if (section.m_sectionKind != CLOCK_FREQ_TOPOLOGY) continue;
      if (section.m_sectionOffset > length || section.m_sectionSize > length - section.m_sectionOffset ||
          section.m_sectionSize < sizeof(int16_t)) {
        return 0;
      }
      const char* data = base + section.m_sectionOffset;
      int16_t count = 0;
      std::memcpy(&count, data, sizeof(count));
      const size_t entries_offset = offsetof(clock_freq_topology, m_clock_freq);
      for (int16_t k = 0; k < count; ++k) {
        const size_t at = entries_offset + static_cast<size_t>(k) * sizeof(clock_freq);
        if (at + sizeof(clock_freq) > section.m_sectionSize) break;
        clock_freq entry{};
        std::memcpy(&entry, data + at, sizeof(entry));
        if (entry.m_type == CT_DATA) return entry.m_freq_Mhz;
      }
      return 0;
    }
  } catch (const std::exception&) {}
  return 0;
}

const char* ert_state_name(ert_cmd_state state) {
  switch (state) {
    case ERT_CMD_STATE_NEW: return "ERT_CMD_STATE_NEW";
    case ERT_CMD_STATE_QUEUED: return "ERT_CMD_STATE_QUEUED";
    case ERT_CMD_STATE_RUNNING: return "ERT_CMD_STATE_RUNNING";
    case ERT_CMD_STATE_COMPLETED: return "ERT_CMD_STATE_COMPLETED";
    case ERT_CMD_STATE_ERROR: return "ERT_CMD_STATE_ERROR";
    case ERT_CMD_STATE_ABORT: return "ERT_CMD_STATE_ABORT";
    case ERT_CMD_STATE_SUBMITTED: return "ERT_CMD_STATE_SUBMITTED";
    case ERT_CMD_STATE_TIMEOUT: return "ERT_CMD_STATE_TIMEOUT";
    case ERT_CMD_STATE_NORESPONSE: return "ERT_CMD_STATE_NORESPONSE";
    case ERT_CMD_STATE_SKERROR: return "ERT_CMD_STATE_SKERROR";
    case ERT_CMD_STATE_SKCRASHED: return "ERT_CMD_STATE_SKCRASHED";
    default: return "unknown ert_cmd_state";
  }
}

Status status_from_exception(StatusCode code, const std::string& what, const std::exception& e) {
  return Status(code, what + ": " + e.what());
}

}  // namespace tessera
