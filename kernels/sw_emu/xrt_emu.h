// Internal to kernels/sw_emu/: the software-emulated XRT device behind XRT's native C++ API.
//
// libxrt_coreutil.so.2 (this folder's xrt_emu_*.cc) defines the member functions and the impl
// classes that Debian's public XRT headers (libxrt-dev 2.13) declare, for the subset of the API
// accel/device/xrt/ calls. Put on LD_LIBRARY_PATH, it is loaded by the unchanged tesserad and test
// binaries in place of Debian's libxrt_coreutil.so.2 (same SONAME, neither has symbol versions).
// Like the real library it needs $XILINX_XRT/lib/libxrt_core.so.2, the device side: here
// xrt_emu_shim.cc with the HLS kernel (kernels/tessera_accel.cpp, the text the C simulation
// compiles), whose tessera_accel() each run calls on the buffers' device-side copies.
//
// The environment (read when the first card is made and by tessera_xrt_emu_reset()):
//   TESSERA_XRT_EMU_DEVICES=N   cards xrt::system::enumerate_devices() reports (default 1)
//   TESSERA_XRT_EMU_FAULTS=SPEC faults, comma-separated KEY=N ("N+": N and every later one):
//     hang-run=N          run N never completes: wait(timeout) answers ERT_CMD_STATE_TIMEOUT until
//                         abort() (which answers ERT_CMD_STATE_ABORT)
//     error-run=N         run N ends in ERT_CMD_STATE_ERROR without running the kernel
//     fail-alloc=N        the Nth buffer allocation throws (as XRT does when the bank is full)
//     vanish-after-run=N  the card disappears once run N completed: later starts, opens and
//                         enumerate_devices() fail or no longer count it
//     card=I              only card I gets the faults (default: every card)
//   N counts per card from 1, from the process start or the last tessera_xrt_emu_reset().
#pragma once

#include <experimental/xrt_xclbin.h>
#include <xrt/xclbin.h>
#include <xrt/xrt_bo.h>
#include <xrt/xrt_device.h>
#include <xrt/xrt_kernel.h>

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace tessera_xrt_emu {

// What the xclbin file says, parsed from its axlf sections.
struct KernelArg {
  std::string name;
  int id = 0;
  bool global = false;  // a buffer (addressQualifier 1), connected to a memory bank
};
struct KernelInfo {
  std::string name;
  std::vector<KernelArg> args;
};
struct CuInfo {
  std::string kernel;         // "tessera_accel"
  std::string instance;       // "tessera_accel_1"
  std::vector<int> arg_bank;  // mem_topology index per argument index; -1 when not connected
};
struct XclbinData {
  std::vector<uint64_t> storage;  // the file, 8-byte aligned (get_axlf() points into it)
  size_t bytes = 0;
  unsigned char uuid[16] = {};
  std::string platform;
  std::vector<std::string> banks;  // mem_topology tags; the index is the memory group
  std::vector<CuInfo> cus;
  std::vector<KernelInfo> kernels;
  const axlf* top() const { return reinterpret_cast<const axlf*>(storage.data()); }
};
// Throws std::runtime_error naming what is wrong.
std::shared_ptr<const XclbinData> parse_xclbin_file(const std::string& path);
// The data behind an xrt::xclbin (xrt_emu_xclbin.cc); throws for an empty object.
std::shared_ptr<const XclbinData> data_of(const xrt::xclbin& xclbin);

// The faults of TESSERA_XRT_EMU_FAULTS.
struct Trigger {
  uint64_t at = 0;
  bool onwards = false;
  bool fires(uint64_t n) const { return at != 0 && (n == at || (onwards && n > at)); }
};
struct FaultPlan {
  Trigger hang_run, error_run, fail_alloc, vanish_after_run;
  int card = -1;
};
FaultPlan parse_faults(const std::string& spec);  // throws std::invalid_argument

using KernelFn = void (*)(const uint32_t*, const int8_t*, const int32_t*, int8_t*, uint32_t*);

// Checks XRT's environment contract and loads the device side; throws as libxrt_coreutil does.
KernelFn device_side();
// The kernel for compute unit slot `slot` (card x 8 + unit): its own copy of the device side when
// possible; else the shared one, with `*serialise` the mutex its callers must hold.
KernelFn compute_unit_kernel(unsigned slot, std::mutex** serialise);

}  // namespace tessera_xrt_emu

namespace xrt {

// A buffer: separate host and device copies; sync() copies between them.
class bo_impl {
 public:
  std::shared_ptr<xrt_core::device> device;
  int bank = 0;
  size_t size = 0;
  std::vector<uint64_t> host, dev;  // 8-byte aligned storage of `size` bytes each
  uint8_t* host_bytes() { return reinterpret_cast<uint8_t*>(host.data()); }
  uint8_t* dev_bytes() { return reinterpret_cast<uint8_t*>(dev.data()); }
};

class run_impl;

}  // namespace xrt

namespace tessera_xrt_emu {

struct Card;

// One compute unit: a worker thread runs its commands in order, as the CU would.
class ComputeUnit {
 public:
  ComputeUnit(Card* card, CuInfo info, KernelFn kernel, std::mutex* serialise);
  ~ComputeUnit();
  void submit(std::shared_ptr<xrt::run_impl> run);
  const CuInfo& info() const { return info_; }
  uint64_t runs_done() const;
  void clear_count();

 private:
  void loop();
  Card* card_;
  const CuInfo info_;
  const KernelFn kernel_;
  std::mutex* const serialise_;  // held around kernel_ calls when the copy is shared; else null
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<xrt::run_impl>> queue_;
  uint64_t done_ = 0;
  bool stop_ = false;
  std::thread thread_;
};

// One emulated card. Cards live for the whole process (like the hardware).
struct Card {
  unsigned index = 0;
  std::mutex mu;
  bool vanished = false;
  FaultPlan faults;
  uint64_t runs = 0, allocs = 0;
  std::shared_ptr<const XclbinData> xclbin;
  std::vector<std::shared_ptr<ComputeUnit>> cus;                // of the loaded xclbin
  std::map<std::string, std::shared_ptr<ComputeUnit>> all_cus;  // "uuid:instance", never dropped
  bool has_faults() const { return faults.card < 0 || faults.card == static_cast<int>(index); }
};

// The card of index `index`, or throws as XRT does for a missing device.
std::shared_ptr<Card> card(unsigned index);
unsigned card_count();

}  // namespace tessera_xrt_emu

// Test hooks of the emulation (also how a test proves it runs on it: dlsym(RTLD_DEFAULT, ...)).
extern "C" {
// Re-reads TESSERA_XRT_EMU_DEVICES and TESSERA_XRT_EMU_FAULTS and restarts the fault counts.
__attribute__((visibility("default"))) int tessera_xrt_emu_reset();
// Completed runs of compute unit `instance` ("tessera_accel_2") of card `card`; -1 if unknown.
__attribute__((visibility("default"))) long tessera_xrt_emu_cu_runs(unsigned card, const char* instance);
}
