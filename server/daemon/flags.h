// tesserad's settings, one table for both ways of giving them: command-line flags (CLI11) and
// the config file (`--config tesserad.toml`, TOML, the same names as top-level keys: `grpc-port
// = 50051`). The file is read first, flags override it; an unknown key, a wrong type or a value
// out of range is an error at start naming the file and the key.
#pragma once

#include <CLI/CLI.hpp>

#include <filesystem>
#include <functional>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include "accel/common/status.h"
#include "server/daemon/daemon.h"

namespace tessera {

// size_t's own slot in DaemonFlag::target. On 32-bit ARM (armhf) size_t is uint32_t, and a
// variant with the same alternative twice cannot be built from a uint32_t*: there the slot holds
// uint64_t* instead (no setting is one today, but the list stays distinct on every target).
using SizeSlot = std::conditional_t<std::is_same_v<size_t, uint32_t>, uint64_t*, size_t*>;

// One setting: its flag/key name (without dashes), help, where it is stored and its checks.
struct DaemonFlag {
  std::string name;
  std::string help;
  std::variant<std::string*, std::filesystem::path*, int*, uint32_t*, int64_t*, SizeSlot, double*, bool*> target;
  double min = 0, max = 0;           // numbers: the allowed range (min == max: unchecked)
  std::vector<std::string> choices;  // strings: the allowed values (empty: any)
};

// The settings of `options` (plus the log level, which lives outside DaemonOptions).
std::vector<DaemonFlag> daemon_flags(DaemonOptions& options, std::string& log_level);

// Registers every setting as `--name` on `app` (defaults shown from the current values).
void add_daemon_flags(CLI::App& app, std::vector<DaemonFlag>& flags);

// Reads `file` into the settings' targets. Errors name the file and the key.
Status apply_config_file(const std::filesystem::path& file, const std::vector<DaemonFlag>& flags);

// The value of `--config FILE` / `--config=FILE` in argv, read before the flags are parsed.
std::filesystem::path find_config_flag(int argc, const char* const* argv);

}  // namespace tessera
