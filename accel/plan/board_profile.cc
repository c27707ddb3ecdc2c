#include "accel/plan/board_profile.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include "accel/common/toml_file.h"
#include "kernels/kernel_abi.h"

namespace tessera::plan {
namespace {

Status profile_error(const std::filesystem::path& file, const std::string& key, const std::string& why) {
  return Status::invalid_argument(file.string() + ": '" + key + "' " + why);
}

Result<double> positive_number(const toml::table& t, const std::filesystem::path& file, const std::string& key) {
  const auto* node = t.get(key);
  if (!node) return profile_error(file, key, "is required");
  auto v = node->value<double>();
  if (!v || !(*v > 0)) return profile_error(file, key, "must be a positive number");
  return *v;
}

Result<uint64_t> positive_integer(const toml::table& t, const std::filesystem::path& file, const std::string& key) {
  const auto* node = t.get(key);
  if (!node) return profile_error(file, key, "is required");
  auto v = node->value_exact<int64_t>();
  if (!v || *v < 1 || *v > (int64_t{1} << 40)) return profile_error(file, key, "must be a positive integer");
  return static_cast<uint64_t>(*v);
}

Result<double> optional_number(const toml::table& t, const std::filesystem::path& file, const std::string& key,
                               double lo, double hi) {
  const auto* node = t.get(key);
  if (!node) return lo;
  auto v = node->value<double>();
  if (!v || *v < lo || *v > hi)
    return profile_error(file, key, "must be a number in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
  return *v;
}

// The part keys (optional): part, part_dsp, part_bram36, part_uram, shell_share,
// int8_macs_per_dsp, output_in_uram, kernel_instances, instance_ddr_gbps, add_lanes.
Status read_part(const toml::table& t, const std::filesystem::path& file, BoardProfile& b) {
  if (const auto* node = t.get("part")) {
    auto v = node->value<std::string>();
    if (!v) return profile_error(file, "part", "must be a string");
    b.part = *v;
  }
  TESSERA_ASSIGN_OR_RETURN(double dsp, optional_number(t, file, "part_dsp", 0, 1e6));
  TESSERA_ASSIGN_OR_RETURN(double bram, optional_number(t, file, "part_bram36", 0, 1e6));
  TESSERA_ASSIGN_OR_RETURN(double uram, optional_number(t, file, "part_uram", 0, 1e6));
  TESSERA_ASSIGN_OR_RETURN(b.shell_share, optional_number(t, file, "shell_share", 0, 0.9));
  TESSERA_ASSIGN_OR_RETURN(double packing, optional_number(t, file, "int8_macs_per_dsp", 1, 2));
  TESSERA_ASSIGN_OR_RETURN(double instances, optional_number(t, file, "kernel_instances", 1, 16));
  TESSERA_ASSIGN_OR_RETURN(b.instance_ddr_gbps, optional_number(t, file, "instance_ddr_gbps", 0, 1e4));
  TESSERA_ASSIGN_OR_RETURN(b.host_gflops, optional_number(t, file, "host_gflops", 0, 1e6));
  TESSERA_ASSIGN_OR_RETURN(b.host_gbps, optional_number(t, file, "host_gbps", 0, 1e4));
  if (t.get("add_lanes") != nullptr) {
    TESSERA_ASSIGN_OR_RETURN(uint64_t add_lanes, positive_integer(t, file, "add_lanes"));
    if (add_lanes > abi::schedule::kMaxAddLanes || abi::schedule::kMaxAddLanes % add_lanes != 0)
      return profile_error(file, "add_lanes", "must divide " + std::to_string(abi::schedule::kMaxAddLanes));
    b.add_lanes = static_cast<uint32_t>(add_lanes);
  }
  b.kernel_instances = static_cast<uint32_t>(instances);
  b.part_dsp = static_cast<uint32_t>(dsp);
  b.part_bram36 = static_cast<uint32_t>(bram);
  b.part_uram = static_cast<uint32_t>(uram);
  b.int8_macs_per_dsp = static_cast<uint32_t>(packing);
  if (const auto* node = t.get("output_in_uram")) {
    auto v = node->value<bool>();
    if (!v) return profile_error(file, "output_in_uram", "must be true or false");
    b.output_in_uram = *v;
  }
  return Status::ok();
}

}  // namespace

std::string boards_dir() {
  std::error_code ec;
  // An explicit choice wins: a packaged layout we do not know, or a test's own profiles.
  if (const char* env = std::getenv("TESSERA_BOARDS_DIR"); env != nullptr && env[0] != '\0') return env;
  // An installed tree: <prefix>/bin/<binary> next to <prefix>/share/tessera/boards.
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const std::filesystem::path installed = exe.parent_path() / ".." / "share" / "tessera" / "boards";
    if (std::filesystem::is_directory(installed, ec)) return installed.lexically_normal().string();
  }
#ifdef TESSERA_BOARDS_DIR
  return TESSERA_BOARDS_DIR;  // the source tree's accel/plan/boards (a build tree)
#else
  return (std::filesystem::path(__FILE__).parent_path() / "boards").string();
#endif
}

std::vector<std::string> board_names() {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(boards_dir(), ec)) {
    if (entry.path().extension() == ".toml") names.push_back(entry.path().stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

Result<BoardProfile> load_board_profile(std::string_view name) {
  return load_board_profile_file(std::filesystem::path(boards_dir()) / (std::string(name) + ".toml"));
}

Result<BoardProfile> load_board_profile_file(const std::filesystem::path& file) {
  if (!std::filesystem::exists(file)) return Status::not_found("no board profile " + file.string());
  TESSERA_ASSIGN_OR_RETURN(toml::table root, parse_toml_file(file));
  BoardProfile b;
  b.name = file.stem().string();
  auto u32 = [](uint64_t v) { return static_cast<uint32_t>(std::min<uint64_t>(v, UINT32_MAX)); };
  TESSERA_ASSIGN_OR_RETURN(b.fabric_clock_mhz, positive_number(root, file, "fabric_clock_mhz"));
  TESSERA_ASSIGN_OR_RETURN(uint64_t lanes, positive_integer(root, file, "mac_lanes"));
  TESSERA_ASSIGN_OR_RETURN(uint64_t channels, positive_integer(root, file, "mac_channels"));
  TESSERA_ASSIGN_OR_RETURN(uint64_t cus, positive_integer(root, file, "compute_units"));
  TESSERA_ASSIGN_OR_RETURN(b.input_buffer_bytes, positive_integer(root, file, "input_buffer_bytes"));
  TESSERA_ASSIGN_OR_RETURN(b.weight_buffer_bytes, positive_integer(root, file, "weight_buffer_bytes"));
  TESSERA_ASSIGN_OR_RETURN(b.output_buffer_bytes, positive_integer(root, file, "output_buffer_bytes"));
  TESSERA_ASSIGN_OR_RETURN(b.ddr_gbps, positive_number(root, file, "ddr_gbps"));
  TESSERA_ASSIGN_OR_RETURN(uint64_t burst, positive_integer(root, file, "burst_bytes"));
  TESSERA_ASSIGN_OR_RETURN(b.cas_cycles, positive_number(root, file, "cas_cycles"));
  TESSERA_ASSIGN_OR_RETURN(b.dma_start_cycles, positive_number(root, file, "dma_start_cycles"));
  TESSERA_ASSIGN_OR_RETURN(b.dma_scatter_cycles, positive_number(root, file, "dma_scatter_cycles"));
  TESSERA_ASSIGN_OR_RETURN(b.dma_byte_cycles, positive_number(root, file, "dma_byte_cycles"));
  TESSERA_ASSIGN_OR_RETURN(b.static_watts, positive_number(root, file, "static_watts"));
  TESSERA_ASSIGN_OR_RETURN(b.pj_per_mac, positive_number(root, file, "pj_per_mac"));
  TESSERA_ASSIGN_OR_RETURN(b.pj_per_ddr_byte, positive_number(root, file, "pj_per_ddr_byte"));
  TESSERA_RETURN_IF_ERROR(read_part(root, file, b));
  b.mac_lanes = u32(lanes);
  b.mac_channels = u32(channels);
  b.compute_units = u32(cus);
  b.burst_bytes = u32(burst);
  return b;
}

}  // namespace tessera::plan
