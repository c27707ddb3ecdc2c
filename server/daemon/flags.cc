#include "server/daemon/flags.h"

#include <cstdlib>

#include <toml++/toml.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <map>

#include "accel/common/toml_file.h"
#include "accel/device/device_registry.h"

namespace tessera {
namespace {

template <class T>
DaemonFlag number(std::string name, std::string help, T* target, double min, double max) {
  return {std::move(name), std::move(help), target, min, max, {}};
}

DaemonFlag text(std::string name, std::string help, std::string* target, std::vector<std::string> choices = {}) {
  return {std::move(name), std::move(help), target, 0, 0, std::move(choices)};
}

DaemonFlag path(std::string name, std::string help, std::filesystem::path* target) {
  return {std::move(name), std::move(help), target, 0, 0, {}};
}

Status key_error(const std::filesystem::path& file, const std::string& key, const std::string& why) {
  return Status::invalid_argument(file.string() + ": '" + key + "' " + why);
}

std::string range_text(const DaemonFlag& f) {
  auto fmt = [](double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.15g", v);
    return std::string(buf);
  };
  return "from " + fmt(f.min) + " to " + fmt(f.max);
}

// One TOML value into one setting.
Status apply_value(const std::filesystem::path& file, const DaemonFlag& f, const toml::node& node) {
  return std::visit(
      [&](auto* target) -> Status {
        using T = std::remove_pointer_t<decltype(target)>;
        if constexpr (std::is_same_v<T, std::string> || std::is_same_v<T, std::filesystem::path>) {
          auto v = node.value_exact<std::string>();
          if (!v) return key_error(file, f.name, "must be a string");
          if (!f.choices.empty() && std::find(f.choices.begin(), f.choices.end(), *v) == f.choices.end()) {
            std::string list;
            for (const auto& c : f.choices) list += (list.empty() ? "" : ", ") + c;
            return key_error(file, f.name, "must be one of " + list + ", not \"" + *v + "\"");
          }
          *target = *v;
        } else if constexpr (std::is_same_v<T, bool>) {
          auto v = node.value_exact<bool>();
          if (!v) return key_error(file, f.name, "must be true or false");
          *target = *v;
        } else if constexpr (std::is_same_v<T, double>) {
          auto v = node.value<double>();  // integers are fine for a float setting
          if (!v || !std::isfinite(*v)) return key_error(file, f.name, "must be a number");
          if (f.min != f.max && (*v < f.min || *v > f.max)) return key_error(file, f.name, "must be " + range_text(f));
          *target = *v;
        } else {
          auto v = node.value_exact<int64_t>();
          if (!v) return key_error(file, f.name, "must be an integer");
          if (f.min != f.max && (static_cast<double>(*v) < f.min || static_cast<double>(*v) > f.max)) {
            return key_error(file, f.name, "must be an integer " + range_text(f));
          }
          *target = static_cast<T>(*v);
        }
        return Status::ok();
      },
      f.target);
}

// The settings of the devices the fabric part runs on (kind, instances, faults, timeouts).
std::vector<DaemonFlag> device_flags(DaemonOptions& o) {
  return {
      text("device",
           "Where the fabric part runs: " + device_kinds() +
               " (auto: a Xilinx board when one and an xclbin are there, else the emulator)",
           &o.device.kind),
      text("devices",
           "Device instances the models run on: all (every Xilinx device XRT sees; one emulator) or indices "
           "\"0,1\" (emu: that many instances, the hardware threads split between them); a batch goes to the "
           "instance with the least outstanding work",
           &o.device.devices),
      path("xclbin", "Accelerator binary for --device xrt/auto (else $TESSERA_XCLBIN)", &o.device.xrt.xclbin),
      text("board", "Board profile the tiles are planned for and the emulator models (accel/plan/boards)",
           &o.device.board),
      text("emu-faults",
           "Emulator fault injection for tests: fail-run=N, hang-run=N, wedge-run=N, corrupt-run=N, fail-load=N (N+ = "
           "from the Nth on), reset-ms=MS, instance=I (only device I), comma-separated ('' = none)",
           &o.device.emu.faults),
      number("device-timeout-ms", "A device run taking longer is aborted; its batch is answered UNAVAILABLE",
             &o.device_timeout_ms, 1, 3'600'000),
      number("device-max-failures",
             "Device failures in a row (each followed by a reset and a reload) before it is taken out of service",
             &o.device_max_failures, 1, 1000),
  };
}

// The limits of an image a request may send (its bytes, pixels, and its decode cost against the
// model's input).
std::vector<DaemonFlag> image_flags(DaemonOptions& o) {
  return {
      number("max-image-bytes", "Largest accepted image (encoded bytes)", &o.max_image_bytes, 1,
             double(int64_t{1} << 30)),
      number("max-image-pixels", "Largest accepted image (width x height, checked from the header)",
             &o.max_image_pixels, 1, 1e9),
      number("max-image-pixel-ratio",
             "A PNG with more pixels than this many times the model's input must also pass "
             "--max-png-pixels-per-byte (JPEGs are decoded DCT-scaled to what the model needs)",
             &o.max_image_pixel_ratio, 1, 1e9),
      number("max-png-pixels-per-byte",
             "Most pixels per encoded byte of a PNG far larger than the model's input (its decode cost per byte sent)",
             &o.max_png_pixels_per_byte, 1, 1e9),
  };
}

// What request bodies may cost: the HTTP body budget and the KServe JSON body limit.
std::vector<DaemonFlag> request_body_flags(DaemonOptions& o) {
  return {
      number("http-body-budget-mb",
             "HTTP: MiB of request bodies all connections may hold at once (at least one --max-image-bytes); a "
             "request past it is answered 503 without its body being read",
             &o.http_body_budget_mb, 1, 1 << 20),
      number("shm-max-regions", "KServe system shared memory: regions registered at once", &o.shm_max_regions, 1, 4096),
      number("shm-max-mb", "KServe system shared memory: MiB registered at once (all regions' byte_size)",
             &o.shm_max_mb, 1, 1 << 20),
      number("kserve-json-body-multiple",
             "KServe REST: a JSON infer body may be this many times its model's FP32 input written as JSON (24 bytes "
             "a number; bytes and values), else 413 / 400",
             &o.kserve_json_body_multiple, 1, 4096),
  };
}

// The HTTP connections' settings: timeouts, the connection bound, pipelining.
std::vector<DaemonFlag> http_flags(DaemonOptions& o) {
  return {
      number("http-read-timeout-s", "HTTP: seconds to read a request (and an idle keep-alive, a TLS handshake)",
             &o.http_read_timeout_s, 1, 3600),
      number("http-write-timeout-s", "HTTP: seconds to write a response, and each server-sent event",
             &o.http_write_timeout_s, 1, 3600),
      number("max-connections",
             "HTTP connections open at once; more are accepted and closed at once (tessera_http_connections_refused_"
             "total). 0 = the file-descriptor limit less a quarter of it (at least 64), kept for gRPC and files",
             &o.max_connections, 0, 1e9),
      number("http-max-in-flight", "HTTP: pipelined requests read but not yet answered, per connection",
             &o.http_max_in_flight, 1, 1024),
  };
}

}  // namespace

// How the batcher hands requests to the model beyond the batching policy.
std::vector<DaemonFlag> queue_flags(DaemonOptions& o) {
  return {
      {"inline-when-idle",
       "A request to a model with max-queue-delay-us 0 that finds the daemon idle (nothing queued, no batch "
       "running) runs on the thread that received it, not a worker: one thread hand-off less (true or false)",
       &o.inline_when_idle,
       0,
       0,
       {}},
      {"grow-batch-while-busy",
       "A batch that is not full when its oldest request has waited max-queue-delay-us keeps waiting, and "
       "growing, while every device instance of its model has a batch in its fabric stage (fp32: running); a full "
       "batch goes at once (true or false)",
       &o.grow_batch_while_busy,
       0,
       0,
       {}},
  };
}

std::vector<DaemonFlag> daemon_flags(DaemonOptions& o, std::string& log_level) {
  std::vector<DaemonFlag> flags = {
      path("models",
           "Model repository: one subfolder with a model.toml per model (its files there, or in numbered version "
           "subfolders)",
           &o.models_dir),
      text("model-control",
           "explicit: the repository's models at start, then what POST /v2/repository/models/NAME/load|unload (and "
           "tessera models load|unload) say; poll: also picks up added, changed and removed folders",
           &o.model_control, {"explicit", "poll"}),
      number("repository-poll-ms", "Poll mode: milliseconds between rescans of --models", &o.repository_poll_ms, 50,
             3'600'000),
      text("listen", "Address both servers listen on", &o.listen),
      number("grpc-port", "gRPC port (0 = pick a free one)", &o.grpc_port, 0, 65535),
      number("http-port", "HTTP port (0 = pick a free one)", &o.http_port, 0, 65535),
      text("log-level", "trace, debug, info, warn, error, critical or off", &log_level,
           {"trace", "debug", "info", "warn", "error", "critical", "off"}),
      text("log-format", "Log lines as text or as JSON objects", &o.log_format, {"text", "json"}),
      path("web-root",
           "Static files of the web UI (default: <binary>/../share/tessera/web when installed, else the source "
           "tree's web/, else ./web)",
           &o.web_root),
      number("workers", "Batches in flight at once per device instance (the int8 pipeline overlaps their stages)",
             &o.workers, 1, 256),
      number("http-threads", "HTTP I/O threads", &o.http_threads, 1, 256),
      text("precision",
           "int8: conv layers on the fabric (or its emulator), FC on the host; fp32: everything on the host's float "
           "path (a model.toml `precision` overrides it)",
           &o.precision, {"int8", "fp32"}),
      number("max-batch", "Images per batch and per device run (model.toml [batching] overrides)",
             &o.batching.max_batch, 1, 256),
      number("max-queue-delay-us", "How long a batch's first request waits for company (model.toml overrides)",
             &o.batching.max_queue_delay_us, 0, 10'000'000),
      number("max-queue", "Requests waiting per model before RESOURCE_EXHAUSTED / 503 (model.toml overrides)",
             &o.batching.max_queue, 1, double(1 << 20)),
      text("objective", "What the tile planner minimises per layer", &o.objective, {"time", "bytes", "energy"}),
      path("plan-cache", "Directory of cached tile plans ('' = keep them in memory only)", &o.plan_cache),
      number("drain-timeout", "Seconds queued and running requests get after SIGTERM/SIGINT", &o.drain_timeout_s, 0,
             3600),
      number("telemetry-interval-ms", "How often the power and temperature sources are sampled",
             &o.telemetry_interval_ms, 10, 3'600'000),
      path("sysfs-root", "Where sysfs is mounted: hwmon power rails and thermal zones are read below it",
           &o.sysfs_root),
      text("hwmon-rails",
           "Which hwmon power monitors are whose with several devices, I=MATCH[+MATCH...],... (a monitor's name or "
           "the sysfs path of its device, e.g. 0=0000:3b:00.0,1=0000:af:00.0); default: the first device reads all",
           &o.hwmon_rails),
      path("tls-cert", "PEM certificate (chain) of the server: with --tls-key, gRPC and HTTP speak TLS only",
           &o.tls_cert),
      path("tls-key", "PEM private key of --tls-cert", &o.tls_key),
      path("tls-client-ca", "PEM CA bundle: clients of both ports must present a certificate it signed (mutual TLS)",
           &o.tls_client_ca),
      path("auth-tokens",
           "File of bearer tokens, one per line (# comments): inference, models, telemetry and metrics then want "
           "'authorization: Bearer <token>'; health and the web page stay open",
           &o.auth_tokens),
      text("peers",
           "Other tesserad HTTP addresses, HOST:PORT,... : GET /v1/fleet (and the web UI's fleet tab) lists each "
           "with its health and figures",
           &o.peers),
      number("peer-timeout-ms", "How long each peer gets to answer for /v1/fleet", &o.peer_timeout_ms, 50, 60'000),
      {"allow-client-shm",
       "KServe: let clients register system shared-memory regions (Triton's extension; perf_analyzer "
       "--shared-memory system). The daemon then reads and writes the shm objects they name with its own rights",
       &o.allow_client_shm,
       0,
       0,
       {}},
      number("grpc-max-concurrent-streams", "gRPC: concurrent calls per connection (HTTP/2 streams)",
             &o.grpc_max_concurrent_streams, 1, 1'000'000),
  };
  auto append = [&flags](std::vector<DaemonFlag> more) {
    flags.insert(flags.end(), std::make_move_iterator(more.begin()), std::make_move_iterator(more.end()));
  };
  append(http_flags(o));
  append(image_flags(o));
  append(device_flags(o));
  append(request_body_flags(o));
  append(queue_flags(o));
  return flags;
}

void add_daemon_flags(CLI::App& app, std::vector<DaemonFlag>& flags) {
  for (DaemonFlag& f : flags) {
    CLI::Option* opt = std::visit(
        [&](auto* target) -> CLI::Option* { return app.add_option("--" + f.name, *target, f.help); }, f.target);
    opt->capture_default_str();
    if (!f.choices.empty()) opt->check(CLI::IsMember(f.choices));
    if (f.min != f.max) {
      // CLI11's Range would say "not in range 0.000000 to 65535.000000".
      opt->check(CLI::Validator(
          [min = f.min, max = f.max, range = range_text(f)](std::string& value) -> std::string {
            char* end = nullptr;
            const double v = std::strtod(value.c_str(), &end);
            if (end == value.c_str() || *end != '\0' || v < min || v > max)
              return "must be " + range + ", not " + value;
            return "";
          },
          range_text(f)));
    }
  }
}

Status apply_config_file(const std::filesystem::path& file, const std::vector<DaemonFlag>& flags) {
  TESSERA_ASSIGN_OR_RETURN(toml::table root, parse_toml_file(file));
  std::map<std::string, const DaemonFlag*> by_name;
  for (const DaemonFlag& f : flags) by_name[f.name] = &f;
  for (const auto& [key, node] : root) {
    const std::string name(key.str());
    auto it = by_name.find(name);
    if (it == by_name.end()) return key_error(file, name, "is not a tesserad setting (see tesserad --help)");
    TESSERA_RETURN_IF_ERROR(apply_value(file, *it->second, node));
  }
  return Status::ok();
}

std::filesystem::path find_config_flag(int argc, const char* const* argv) {
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--config") == 0 && i + 1 < argc) return argv[i + 1];
    if (std::strncmp(argv[i], "--config=", 9) == 0) return argv[i] + 9;
  }
  return {};
}

}  // namespace tessera
