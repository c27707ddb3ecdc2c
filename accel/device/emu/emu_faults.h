// Fault injection for the emulator: makes it fail the way a board can, so tests can show what the
// daemon does then (a run that fails, hangs past its timeout or leaves a corrupt status word; a
// device that dies while a program is loaded). Off unless a fault spec is given
// (tesserad --emu-faults, EmuBackendOptions::faults).
//
// Spec: comma-separated KEY=VALUE, e.g. "fail-run=3,reset-ms=500" or "hang-run=2+":
//   fail-run=N      run N ends in an error (as ERT_CMD_STATE_ERROR on a board)
//   hang-run=N      run N does not finish: it blocks for its whole timeout and is aborted
//   wedge-run=N     run N does not come back at all (its timeout is not honoured, as on a shell
//                   whose wait(timeout) returns only at completion); it returns after 30 s
//   corrupt-run=N   run N leaves garbage in the outputs and a status word the kernel never writes
//   fail-load=N     loading a program for the Nth time fails (the device died at load)
//   reset-ms=MS     a reset takes MS milliseconds (so a test sees the daemon recovering)
//   instance=I      only emulator instance I (--devices) has these faults; without it, every one
// N counts runs (or loads) of the whole device from 1; "N+" means N and every one after it.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string_view>

#include "accel/common/status.h"

namespace tessera::emu {

// Which occurrences (1-based) of an event fire: none (at == 0), one, or all from `at` on.
struct FaultTrigger {
  uint64_t at = 0;
  bool onwards = false;
  bool fires(uint64_t n) const { return at != 0 && (n == at || (onwards && n > at)); }
};

struct EmuFaultPlan {
  FaultTrigger fail_run, hang_run, wedge_run, corrupt_run, fail_load;
  std::chrono::milliseconds reset_delay{0};
  std::optional<unsigned> instance;  // the one device instance the faults apply to; none: all
  bool any() const {
    return fail_run.at || hang_run.at || wedge_run.at || corrupt_run.at || fail_load.at || reset_delay.count();
  }
  // Whether device instance `index` gets these faults.
  bool applies_to(unsigned index) const { return !instance || *instance == index; }
};

// INVALID_ARGUMENT naming the bad item ("emu faults: unknown key 'x' (keys: ...)").
Result<EmuFaultPlan> parse_emu_faults(std::string_view spec);

// The counters one EmuDevice's programs share.
struct EmuFaultState {
  EmuFaultPlan plan;
  std::atomic<uint64_t> runs{0};
  std::atomic<uint64_t> loads{0};
  std::atomic<uint64_t> resets{0};
};

}  // namespace tessera::emu
