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

namespace {

// The section of `kind` as [begin, begin + size) inside the file, or nullptr.
const char* find_section(const axlf* top, axlf_section_kind kind, uint64_t& size) {
  const char* base = reinterpret_cast<const char*>(top);
  const uint64_t length = top->m_header.m_length;
  for (uint32_t i = 0; i < top->m_header.m_numSections; ++i) {
    const axlf_section_header& section = top->m_sections[i];
    if (section.m_sectionKind != kind) continue;
    if (section.m_sectionOffset > length || section.m_sectionSize > length - section.m_sectionOffset) return nullptr;
    size = section.m_sectionSize;
    return base + section.m_sectionOffset;
  }
  return nullptr;
}

// Entry `k` of a section laid out as {int32 count; T entries[]} with entries at `first`.
template <typename T>
bool entry(const char* data, uint64_t size, size_t first, int32_t k, T& out) {
  const uint64_t at = first + static_cast<uint64_t>(k) * sizeof(T);
  if (k < 0 || at + sizeof(T) > size) return false;
  std::memcpy(&out, data + at, sizeof(T));
  return true;
}

int32_t section_count(const char* data, uint64_t size) {
  int32_t count = 0;
  if (data != nullptr && size >= sizeof(count)) std::memcpy(&count, data, sizeof(count));
  return count;
}

std::string fixed_text(const void* text, size_t size) {
  const char* chars = static_cast<const char*>(text);
  return std::string(chars, strnlen(chars, size));
}

}  // namespace

XclbinLayout xclbin_layout(const xrt::xclbin& xclbin) {
  XclbinLayout layout;
  try {
    const axlf* top = xclbin.get_axlf();
    if (top == nullptr) return layout;
    layout.uuid = xrt::uuid(top->m_header.uuid).to_string();
    uint64_t mem_size = 0, ip_size = 0, conn_size = 0;
    const char* mem = find_section(top, MEM_TOPOLOGY, mem_size);
    const char* ips = find_section(top, IP_LAYOUT, ip_size);
    const char* conns = find_section(top, CONNECTIVITY, conn_size);
    std::vector<int> cu_of_ip;  // ip_layout index -> compute unit index, -1 when not ours
    const std::string prefix = std::string(kXrtKernelName) + ":";
    for (int32_t k = 0; k < section_count(ips, ip_size); ++k) {
      ip_data ip{};
      if (!entry(ips, ip_size, offsetof(ip_layout, m_ip_data), k, ip)) break;
      const std::string name = fixed_text(ip.m_name, sizeof(ip.m_name));
      cu_of_ip.push_back(-1);
      if (ip.m_type != IP_KERNEL || name.rfind(prefix, 0) != 0) continue;
      cu_of_ip.back() = static_cast<int>(layout.compute_units.size());
      layout.compute_units.push_back({name.substr(prefix.size()), std::vector<std::string>(kXrtKernelArgs)});
    }
    for (int32_t k = 0; k < section_count(conns, conn_size); ++k) {
      connection c{};
      mem_data bank{};
      if (!entry(conns, conn_size, offsetof(connectivity, m_connection), k, c)) break;
      if (c.m_ip_layout_index < 0 || static_cast<size_t>(c.m_ip_layout_index) >= cu_of_ip.size() ||
          cu_of_ip[c.m_ip_layout_index] < 0 || c.arg_index < 0 || c.arg_index >= kXrtKernelArgs ||
          !entry(mem, mem_size, offsetof(mem_topology, m_mem_data), c.mem_data_index, bank)) {
        continue;
      }
      layout.compute_units[cu_of_ip[c.m_ip_layout_index]].banks[c.arg_index] =
          fixed_text(bank.m_tag, sizeof(bank.m_tag));
    }
  } catch (const std::exception&) {}
  return layout;
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
