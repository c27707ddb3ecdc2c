#include "accel/device/emu/emu_faults.h"

#include <charconv>
#include <string>

namespace tessera::emu {
namespace {

constexpr const char* kKeys = "fail-run, hang-run, wedge-run, corrupt-run, fail-load, reset-ms, instance";

Result<uint64_t> parse_count(std::string_view key, std::string_view text) {
  uint64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || text.empty()) {
    return Status::invalid_argument("emu faults: " + std::string(key) + " wants a number, not '" + std::string(text) +
                                    "'");
  }
  return value;
}

Result<FaultTrigger> parse_trigger(std::string_view key, std::string_view text) {
  FaultTrigger trigger;
  if (!text.empty() && text.back() == '+') {
    trigger.onwards = true;
    text.remove_suffix(1);
  }
  TESSERA_ASSIGN_OR_RETURN(trigger.at, parse_count(key, text));
  if (trigger.at == 0) return Status::invalid_argument("emu faults: " + std::string(key) + " counts from 1");
  return trigger;
}

Status apply_item(EmuFaultPlan& plan, std::string_view item) {
  const size_t eq = item.find('=');
  if (eq == std::string_view::npos) {
    return Status::invalid_argument("emu faults: '" + std::string(item) + "' is not KEY=VALUE (keys: " + kKeys + ")");
  }
  const std::string_view key = item.substr(0, eq);
  const std::string_view value = item.substr(eq + 1);
  if (key == "reset-ms") {
    TESSERA_ASSIGN_OR_RETURN(uint64_t ms, parse_count(key, value));
    plan.reset_delay = std::chrono::milliseconds(static_cast<int64_t>(ms));
    return Status::ok();
  }
  if (key == "instance") {
    TESSERA_ASSIGN_OR_RETURN(uint64_t index, parse_count(key, value));
    plan.instance = static_cast<unsigned>(index);
    return Status::ok();
  }
  FaultTrigger* trigger = key == "fail-run"      ? &plan.fail_run
                          : key == "hang-run"    ? &plan.hang_run
                          : key == "wedge-run"   ? &plan.wedge_run
                          : key == "corrupt-run" ? &plan.corrupt_run
                          : key == "fail-load"   ? &plan.fail_load
                                                 : nullptr;
  if (trigger == nullptr) {
    return Status::invalid_argument("emu faults: unknown key '" + std::string(key) + "' (keys: " + kKeys + ")");
  }
  TESSERA_ASSIGN_OR_RETURN(*trigger, parse_trigger(key, value));
  return Status::ok();
}

}  // namespace

Result<EmuFaultPlan> parse_emu_faults(std::string_view spec) {
  EmuFaultPlan plan;
  while (!spec.empty()) {
    const size_t comma = spec.find(',');
    const std::string_view item = spec.substr(0, comma);
    if (!item.empty()) TESSERA_RETURN_IF_ERROR(apply_item(plan, item));
    if (comma == std::string_view::npos) break;
    spec.remove_prefix(comma + 1);
  }
  return plan;
}

}  // namespace tessera::emu
