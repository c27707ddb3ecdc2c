// xrt::xclbin of the emulated XRT library: reads an axlf file as XRT does (the kernels and their
// arguments from EMBEDDED_METADATA's XML, the compute units from IP_LAYOUT, the memory banks from
// MEM_TOPOLOGY and which bank each argument of each compute unit uses from CONNECTIVITY).
#include <experimental/xrt_xclbin.h>

#include <cstring>
#include <fstream>
#include <stdexcept>

#include "xrt_emu.h"

namespace tessera_xrt_emu {
namespace {

// The value of attribute `key` in the XML element text `element`, or "".
std::string attribute(const std::string& element, const std::string& key) {
  const std::string pattern = " " + key + "=\"";
  const size_t at = element.find(pattern);
  if (at == std::string::npos) return "";
  const size_t begin = at + pattern.size();
  const size_t end = element.find('"', begin);
  return end == std::string::npos ? "" : element.substr(begin, end - begin);
}

// <kernel name=...> elements with their <arg .../> children.
std::vector<KernelInfo> kernels_of(const std::string& xml) {
  std::vector<KernelInfo> kernels;
  size_t at = 0;
  while ((at = xml.find("<kernel ", at)) != std::string::npos) {
    const size_t end = xml.find("</kernel>", at);
    if (end == std::string::npos) throw std::runtime_error("xclbin metadata: <kernel> without </kernel>");
    KernelInfo kernel;
    kernel.name = attribute(xml.substr(at, xml.find('>', at) - at), "name");
    for (size_t arg = xml.find("<arg ", at); arg != std::string::npos && arg < end; arg = xml.find("<arg ", arg + 1)) {
      const std::string element = xml.substr(arg, xml.find('>', arg) - arg);
      kernel.args.push_back(KernelArg{attribute(element, "name"), std::stoi(attribute(element, "id")),
                                      attribute(element, "addressQualifier") == "1"});
    }
    kernels.push_back(std::move(kernel));
    at = end;
  }
  return kernels;
}

template <typename T>
T read_at(const XclbinData& x, uint64_t offset) {
  if (offset + sizeof(T) > x.bytes) throw std::runtime_error("xclbin: section data past the end of the file");
  T value;
  std::memcpy(&value, reinterpret_cast<const char*>(x.storage.data()) + offset, sizeof(T));
  return value;
}

void parse_sections(XclbinData& x) {
  const axlf* top = x.top();
  std::string xml;
  std::vector<std::string> ips;
  std::vector<connection> connections;
  for (uint32_t i = 0; i < top->m_header.m_numSections; ++i) {
    const uint64_t header_at = offsetof(axlf, m_sections) + uint64_t{i} * sizeof(axlf_section_header);
    const auto section = read_at<axlf_section_header>(x, header_at);
    if (section.m_sectionOffset + section.m_sectionSize > x.bytes) throw std::runtime_error("xclbin: bad section");
    const uint64_t at = section.m_sectionOffset;
    const int32_t count = read_at<int32_t>(x, at);
    switch (section.m_sectionKind) {
      case MEM_TOPOLOGY:
        for (int32_t k = 0; k < count; ++k) {
          const auto mem = read_at<mem_data>(x, at + offsetof(mem_topology, m_mem_data) + k * sizeof(mem_data));
          x.banks.emplace_back(reinterpret_cast<const char*>(mem.m_tag),
                               strnlen(reinterpret_cast<const char*>(mem.m_tag), 16));
        }
        break;
      case IP_LAYOUT:
        for (int32_t k = 0; k < count; ++k) {
          const auto ip = read_at<ip_data>(x, at + offsetof(ip_layout, m_ip_data) + k * sizeof(ip_data));
          ips.emplace_back(ip.m_type == IP_KERNEL ? std::string(reinterpret_cast<const char*>(ip.m_name),
                                                                strnlen(reinterpret_cast<const char*>(ip.m_name), 64))
                                                  : std::string());
        }
        break;
      case CONNECTIVITY:
        for (int32_t k = 0; k < count; ++k) {
          connections.push_back(
              read_at<connection>(x, at + offsetof(struct connectivity, m_connection) + k * sizeof(connection)));
        }
        break;
      case EMBEDDED_METADATA:
        xml.assign(reinterpret_cast<const char*>(x.storage.data()) + at, section.m_sectionSize);
        break;
      default: break;
    }
  }
  x.kernels = kernels_of(xml);
  for (const std::string& ip : ips) {
    CuInfo cu;
    const size_t colon = ip.find(':');
    if (!ip.empty() && colon != std::string::npos) {
      cu.kernel = ip.substr(0, colon);
      cu.instance = ip.substr(colon + 1);
    }
    for (const KernelInfo& k : x.kernels) {
      if (k.name == cu.kernel) cu.arg_bank.assign(k.args.size(), -1);
    }
    x.cus.push_back(std::move(cu));
  }
  for (const connection& c : connections) {
    if (c.m_ip_layout_index < 0 || static_cast<size_t>(c.m_ip_layout_index) >= x.cus.size() || c.mem_data_index < 0 ||
        static_cast<size_t>(c.mem_data_index) >= x.banks.size()) {
      throw std::runtime_error("xclbin: connectivity entry out of range");
    }
    CuInfo& cu = x.cus[c.m_ip_layout_index];
    if (c.arg_index >= 0 && static_cast<size_t>(c.arg_index) < cu.arg_bank.size())
      cu.arg_bank[c.arg_index] = c.mem_data_index;
  }
  std::erase_if(x.cus, [](const CuInfo& cu) { return cu.kernel.empty(); });
}

}  // namespace

std::shared_ptr<const XclbinData> parse_xclbin_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("Failed to open file '" + path + "' for reading");
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto x = std::make_shared<XclbinData>();
  x->bytes = bytes.size();
  x->storage.assign((bytes.size() + 7) / 8, 0);
  std::memcpy(x->storage.data(), bytes.data(), bytes.size());
  if (bytes.size() < sizeof(axlf) || std::memcmp(bytes.data(), "xclbin2", 8) != 0) {
    throw std::runtime_error("Invalid xclbin file '" + path + "': no axlf header (magic xclbin2)");
  }
  const axlf* top = x->top();
  if (top->m_header.m_length > bytes.size()) throw std::runtime_error("Invalid xclbin file '" + path + "': truncated");
  std::memcpy(x->uuid, top->m_header.uuid, sizeof(x->uuid));
  x->platform.assign(reinterpret_cast<const char*>(top->m_header.m_platformVBNV),
                     strnlen(reinterpret_cast<const char*>(top->m_header.m_platformVBNV), 64));
  parse_sections(*x);
  return x;
}

}  // namespace tessera_xrt_emu

namespace xrt {

class xclbin_impl {
 public:
  std::shared_ptr<const tessera_xrt_emu::XclbinData> data;
};

class xclbin::kernel_impl {
 public:
  tessera_xrt_emu::KernelInfo info;
  std::vector<std::string> cus;  // IP_LAYOUT names "kernel:instance" of its compute units
};

class xclbin::ip_impl {
 public:
  std::string name;
};

xclbin::xclbin(const std::string& filename)
    : detail::pimpl<xclbin_impl>(
          std::make_shared<xclbin_impl>(xclbin_impl{tessera_xrt_emu::parse_xclbin_file(filename)})) {}

std::vector<xclbin::kernel> xclbin::get_kernels() const {
  if (!handle) throw std::runtime_error("xclbin: empty object");
  std::vector<kernel> kernels;
  for (const auto& k : handle->data->kernels) {
    auto impl = std::make_shared<kernel_impl>(kernel_impl{k, {}});
    for (const auto& cu : handle->data->cus) {
      if (cu.kernel == k.name) impl->cus.push_back(cu.kernel + ":" + cu.instance);
    }
    kernels.emplace_back(std::move(impl));
  }
  return kernels;
}

const axlf* xclbin::get_axlf() const {
  if (!handle) throw std::runtime_error("xclbin: empty object");
  return handle->data->top();
}

std::string xclbin::kernel::get_name() const { return handle->info.name; }

size_t xclbin::kernel::get_num_args() const { return handle->info.args.size(); }

std::vector<xclbin::ip> xclbin::kernel::get_cus() const {
  std::vector<ip> cus;
  for (const auto& name : handle->cus) cus.emplace_back(std::make_shared<ip_impl>(ip_impl{name}));
  return cus;
}

std::string xclbin::ip::get_name() const { return handle->name; }

}  // namespace xrt

namespace tessera_xrt_emu {

// For xrt_emu_device.cc: the parsed data behind an xrt::xclbin.
std::shared_ptr<const XclbinData> data_of(const xrt::xclbin& xclbin) {
  if (!xclbin.get_handle()) throw std::runtime_error("load_xclbin: empty xclbin object");
  return xclbin.get_handle()->data;
}

}  // namespace tessera_xrt_emu
