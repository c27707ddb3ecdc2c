// xrt::system, xrt::device, xrt::bo, xrt::kernel and xrt::run of the emulated XRT library
// (xrt_emu.h): cards from TESSERA_XRT_EMU_DEVICES, faults from TESSERA_XRT_EMU_FAULTS, runs on
// a worker thread per compute unit calling the device side's tessera_accel().
#include <dlfcn.h>
#include <experimental/xrt_system.h>

#include <any>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include "xrt_emu.h"

namespace xrt_core {
// What xrt::device holds: one open of a card.
class device : public std::enable_shared_from_this<device> {
 public:
  explicit device(std::shared_ptr<tessera_xrt_emu::Card> card) : card(std::move(card)) {}
  std::shared_ptr<tessera_xrt_emu::Card> card;
};
}  // namespace xrt_core

namespace tessera_xrt_emu {
namespace {

std::string env_text(const char* name) {
  const char* v = std::getenv(name);
  return v == nullptr ? "" : v;
}

struct Cards {
  std::mutex mu;
  std::vector<std::shared_ptr<Card>> cards;
  unsigned count = 0;
  bool configured = false;
};
Cards& cards() {
  static auto* all = new Cards;  // never destroyed: worker threads may outlive main()
  return *all;
}

// Reads the environment into the cards (under cards().mu).
void configure(Cards& c) {
  const std::string devices = env_text("TESSERA_XRT_EMU_DEVICES");
  c.count = devices.empty() ? 1 : static_cast<unsigned>(std::stoul(devices));
  const FaultPlan faults = parse_faults(env_text("TESSERA_XRT_EMU_FAULTS"));
  while (c.cards.size() < c.count) {
    c.cards.push_back(std::make_shared<Card>());
    c.cards.back()->index = static_cast<unsigned>(c.cards.size() - 1);
  }
  for (auto& card : c.cards) {
    std::lock_guard lock(card->mu);
    for (auto& [name, cu] : card->all_cus) cu->clear_count();
    card->faults = faults;
    card->vanished = false;
    card->runs = card->allocs = 0;
  }
  c.configured = true;
}

Trigger parse_trigger(const std::string& key, const std::string& value) {
  Trigger t;
  std::string digits = value;
  if (!digits.empty() && digits.back() == '+') {
    t.onwards = true;
    digits.pop_back();
  }
  if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos || std::stoull(digits) == 0) {
    throw std::invalid_argument("TESSERA_XRT_EMU_FAULTS: " + key + "=" + value + " is not N or N+ (N >= 1)");
  }
  t.at = std::stoull(digits);
  return t;
}

bool is_final(ert_cmd_state s) {
  return s == ERT_CMD_STATE_COMPLETED || s == ERT_CMD_STATE_ERROR || s == ERT_CMD_STATE_ABORT;
}

}  // namespace

FaultPlan parse_faults(const std::string& spec) {
  FaultPlan plan;
  size_t at = 0;
  while (at < spec.size()) {
    size_t end = spec.find(',', at);
    if (end == std::string::npos) end = spec.size();
    const std::string item = spec.substr(at, end - at);
    at = end + 1;
    if (item.empty()) continue;
    const size_t eq = item.find('=');
    const std::string key = item.substr(0, eq), value = eq == std::string::npos ? "" : item.substr(eq + 1);
    if (key == "hang-run")
      plan.hang_run = parse_trigger(key, value);
    else if (key == "error-run")
      plan.error_run = parse_trigger(key, value);
    else if (key == "fail-alloc")
      plan.fail_alloc = parse_trigger(key, value);
    else if (key == "vanish-after-run")
      plan.vanish_after_run = parse_trigger(key, value);
    else if (key == "card" && !value.empty() && value.find_first_not_of("0123456789") == std::string::npos) {
      plan.card = std::stoi(value);
    } else {
      throw std::invalid_argument("TESSERA_XRT_EMU_FAULTS: unknown key '" + key +
                                  "' (keys: hang-run, error-run, fail-alloc, vanish-after-run, card)");
    }
  }
  return plan;
}

namespace {
std::string shim_path() {
  // libxrt_coreutil's contract: the shim comes from $XILINX_XRT/lib, nowhere else.
  const std::string root = env_text("XILINX_XRT");
  if (root.empty()) throw std::runtime_error("XILINX_XRT not set");
  return root + "/lib/libxrt_core.so.2";
}

KernelFn kernel_of(void* handle, const std::string& shim) {
  auto kernel = reinterpret_cast<KernelFn>(dlsym(handle, "tessera_xrt_emu_kernel"));
  if (kernel == nullptr)
    throw std::runtime_error(shim + " is not the emulated device side (no tessera_xrt_emu_kernel)");
  return kernel;
}
}  // namespace

KernelFn device_side() {
  static std::mutex mu;
  static KernelFn kernel = nullptr;
  std::lock_guard lock(mu);
  if (kernel != nullptr) return kernel;
  const std::string shim = shim_path();
  void* handle = dlopen(shim.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) throw std::runtime_error("Failed to open library '" + shim + "': " + dlerror());
  kernel = kernel_of(handle, shim);
  return kernel;
}

KernelFn compute_unit_kernel(unsigned slot, std::mutex** serialise) {
  // The kernel keeps its on-chip buffers in static storage, one set per instance on the fabric:
  // each compute unit gets its own copy of the device side in a separate link-map namespace.
  // Should the namespaces run out (glibc has 16), the shared copy serialises its compute units.
  static std::mutex mu;
  static std::mutex shared_copy;
  static std::vector<KernelFn> kernels;
  const KernelFn shared = device_side();
  std::lock_guard lock(mu);
  if (slot < kernels.size() && kernels[slot] != nullptr) {
    *serialise = nullptr;
    return kernels[slot];
  }
  const std::string shim = shim_path();
  void* handle = dlmopen(LM_ID_NEWLM, shim.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    *serialise = &shared_copy;
    return shared;
  }
  if (kernels.size() <= slot) kernels.resize(slot + 1);
  kernels[slot] = kernel_of(handle, shim);
  *serialise = nullptr;
  return kernels[slot];
}

unsigned card_count() {
  device_side();
  Cards& c = cards();
  std::lock_guard lock(c.mu);
  if (!c.configured) configure(c);
  unsigned present = 0;
  for (unsigned i = 0; i < c.count; ++i) {
    std::lock_guard card_lock(c.cards[i]->mu);
    present += c.cards[i]->vanished ? 0 : 1;
  }
  return present;
}

std::shared_ptr<Card> card(unsigned index) {
  device_side();
  Cards& c = cards();
  std::lock_guard lock(c.mu);
  if (!c.configured) configure(c);
  if (index >= c.count) throw std::runtime_error("Could not open device with index '" + std::to_string(index) + "'");
  std::shared_ptr<Card> found = c.cards[index];
  std::lock_guard card_lock(found->mu);
  if (found->vanished) {
    throw std::runtime_error("Could not open device with index '" + std::to_string(index) +
                             "' (the emulated card is gone: TESSERA_XRT_EMU_FAULTS vanish-after-run)");
  }
  return found;
}

}  // namespace tessera_xrt_emu

namespace xrt {

// One started command: the bos it was given, the compute units it may run on, its state.
class run_impl : public std::enable_shared_from_this<run_impl> {
 public:
  std::shared_ptr<kernel_impl> kernel;
  std::vector<std::shared_ptr<bo_impl>> args;
  std::vector<std::shared_ptr<tessera_xrt_emu::ComputeUnit>> candidates;
  std::mutex mu;
  std::condition_variable cv;
  ert_cmd_state state = ERT_CMD_STATE_NEW;
  bool abort_requested = false;
  bool hang = false, error = false, vanish_after = false;
};

class kernel_impl {
 public:
  std::shared_ptr<xrt_core::device> device;
  std::shared_ptr<const tessera_xrt_emu::XclbinData> xclbin;
  std::string name;
  size_t num_args = 0;
  std::vector<std::shared_ptr<tessera_xrt_emu::ComputeUnit>> cus;
};

}  // namespace xrt

namespace tessera_xrt_emu {

ComputeUnit::ComputeUnit(Card* card, CuInfo info, KernelFn kernel, std::mutex* serialise)
    : card_(card), info_(std::move(info)), kernel_(kernel), serialise_(serialise), thread_([this] { loop(); }) {}

ComputeUnit::~ComputeUnit() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void ComputeUnit::submit(std::shared_ptr<xrt::run_impl> run) {
  {
    std::lock_guard lock(mu_);
    queue_.push_back(std::move(run));
  }
  cv_.notify_all();
}

void ComputeUnit::clear_count() {
  std::lock_guard lock(mu_);
  done_ = 0;
}

uint64_t ComputeUnit::runs_done() const {
  std::lock_guard lock(mu_);
  return done_;
}

void ComputeUnit::loop() {
  for (;;) {
    std::shared_ptr<xrt::run_impl> run;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      if (stop_) return;
      run = std::move(queue_.front());
      queue_.pop_front();
    }
    // Decide under the run's lock, work without it, and mark a vanishing card gone before the run's
    // final state is visible (the card disappears between this run and the next).
    std::unique_lock lock(run->mu);
    ert_cmd_state end_state = ERT_CMD_STATE_COMPLETED;
    if (run->abort_requested) {
      end_state = ERT_CMD_STATE_ABORT;
    } else if (run->hang) {  // a command the CU never finishes: only abort() ends it
      run->state = ERT_CMD_STATE_RUNNING;
      run->cv.wait(lock, [&] { return run->abort_requested; });
      end_state = ERT_CMD_STATE_ABORT;
    } else if (run->error) {
      end_state = ERT_CMD_STATE_ERROR;
    } else {
      run->state = ERT_CMD_STATE_RUNNING;
      lock.unlock();
      auto& a = run->args;
      std::unique_lock shared_copy = serialise_ ? std::unique_lock(*serialise_) : std::unique_lock<std::mutex>();
      kernel_(reinterpret_cast<const uint32_t*>(a[0]->dev.data()), reinterpret_cast<const int8_t*>(a[1]->dev.data()),
              reinterpret_cast<const int32_t*>(a[2]->dev.data()), reinterpret_cast<int8_t*>(a[3]->dev.data()),
              reinterpret_cast<uint32_t*>(a[4]->dev.data()));
      shared_copy = {};
      std::lock_guard done_lock(mu_);
      ++done_;
    }
    if (lock.owns_lock()) lock.unlock();
    if (run->vanish_after) {
      std::lock_guard card_lock(card_->mu);
      card_->vanished = true;
    }
    lock.lock();
    run->state = end_state;
    lock.unlock();
    run->cv.notify_all();
  }
}

}  // namespace tessera_xrt_emu

namespace xrt {
namespace system {
unsigned int enumerate_devices() { return tessera_xrt_emu::card_count(); }
}  // namespace system

device::device(unsigned int didx) : handle(std::make_shared<xrt_core::device>(tessera_xrt_emu::card(didx))) {}

device::operator xclDeviceHandle() const { return handle.get(); }

uuid device::load_xclbin(const xrt::xclbin& xclbin) {
  auto data = tessera_xrt_emu::data_of(xclbin);
  tessera_xrt_emu::Card& card = *handle->card;
  std::lock_guard lock(card.mu);
  if (card.vanished) throw std::runtime_error("load_xclbin: the emulated card is gone");
  // The same uuid is not downloaded again (as XRT does): its compute units and their state stay.
  // Compute units are kept for the process's lifetime (a run may hold the last other reference to
  // one, on that unit's own thread), and found again when an xclbin is loaded a second time.
  if (!card.xclbin || std::memcmp(card.xclbin->uuid, data->uuid, sizeof(data->uuid)) != 0) {
    card.cus.clear();
    const std::string id = xrt::uuid(data->uuid).to_string();
    for (const auto& cu : data->cus) {
      auto& kept = card.all_cus[id + ":" + cu.instance];
      if (!kept) {
        std::mutex* serialise = nullptr;
        const auto slot = static_cast<unsigned>(card.index * 8 + card.cus.size());
        const tessera_xrt_emu::KernelFn own = tessera_xrt_emu::compute_unit_kernel(slot, &serialise);
        kept = std::make_shared<tessera_xrt_emu::ComputeUnit>(&card, cu, own, serialise);
      }
      card.cus.push_back(kept);
    }
    card.xclbin = data;
  }
  return uuid(data->uuid);
}

std::any device::get_info_std(info::device param, const xrt::detail::abi&) const {
  tessera_xrt_emu::Card& card = *handle->card;
  std::lock_guard lock(card.mu);
  switch (param) {
    case info::device::name:
      return std::string(card.xclbin ? card.xclbin->platform : "tessera_xrt_emu") + " (software-emulated)";
    case info::device::bdf: {
      char bdf[32];
      std::snprintf(bdf, sizeof(bdf), "0000:%02x:00.1", 0x10 + card.index);
      return std::string(bdf);
    }
    default: throw std::runtime_error("device::get_info: not reported by the software-emulated device (no sensors)");
  }
}

bo::bo(xclDeviceHandle dhdl, size_t size, bo::flags, memory_group grp) {
  auto* dev = static_cast<xrt_core::device*>(dhdl);
  if (dev == nullptr) throw std::runtime_error("bo: no device");
  tessera_xrt_emu::Card& card = *dev->card;
  std::lock_guard lock(card.mu);
  if (card.vanished) throw std::runtime_error("bo: the emulated card is gone");
  if (!card.xclbin || grp >= card.xclbin->banks.size()) throw std::runtime_error("invalid memory bank index");
  if (size == 0) throw std::runtime_error("bo: size must be greater than 0");
  ++card.allocs;
  if (card.has_faults() && card.faults.fail_alloc.fires(card.allocs)) {
    throw std::runtime_error("failed to allocate " + std::to_string(size) + " bytes in bank " +
                             card.xclbin->banks[grp] + " (TESSERA_XRT_EMU_FAULTS fail-alloc)");
  }
  auto impl = std::make_shared<bo_impl>();
  impl->device = dev->shared_from_this();
  impl->bank = static_cast<int>(grp);
  impl->size = size;
  impl->host.assign((size + 7) / 8, 0);
  impl->dev.assign((size + 7) / 8, 0x5a5a5a5a5a5a5a5aULL);  // device memory is not zeroed
  handle = std::move(impl);
}

namespace {
void check_range(const char* what, const std::shared_ptr<bo_impl>& bo, size_t size, size_t offset) {
  if (!bo) throw std::runtime_error(std::string(what) + ": empty bo");
  if (offset > bo->size || size > bo->size - offset) {
    throw std::runtime_error(std::string(what) + ": size (" + std::to_string(size) + ") + offset (" +
                             std::to_string(offset) + ") exceeds the buffer size (" + std::to_string(bo->size) + ")");
  }
}
}  // namespace

void bo::write(const void* src, size_t size, size_t seek) {
  check_range("bo::write", handle, size, seek);
  std::memcpy(handle->host_bytes() + seek, src, size);
}

void bo::read(void* dst, size_t size, size_t skip) {
  check_range("bo::read", handle, size, skip);
  std::memcpy(dst, handle->host_bytes() + skip, size);
}

void bo::sync(xclBOSyncDirection dir, size_t size, size_t offset) {
  check_range("bo::sync", handle, size, offset);
  if (dir == XCL_BO_SYNC_BO_TO_DEVICE) {
    std::memcpy(handle->dev_bytes() + offset, handle->host_bytes() + offset, size);
  } else if (dir == XCL_BO_SYNC_BO_FROM_DEVICE) {
    std::memcpy(handle->host_bytes() + offset, handle->dev_bytes() + offset, size);
  } else {
    throw std::runtime_error("bo::sync: unsupported direction");
  }
}

kernel::kernel(const xrt::device& device, const xrt::uuid& xclbin_id, const std::string& name, cu_access_mode) {
  auto dev = device.get_handle();
  if (!dev) throw std::runtime_error("kernel: empty device");
  tessera_xrt_emu::Card& card = *dev->card;
  std::lock_guard lock(card.mu);
  if (!card.xclbin || xclbin_id != card.xclbin->uuid) {
    throw std::runtime_error("kernel: xclbin " + xclbin_id.to_string() + " is not loaded on the device");
  }
  // "kernel" or "kernel:{cu1,cu2}", as XRT names compute units.
  std::string kname = name, wanted;
  if (const size_t colon = name.find(':'); colon != std::string::npos) {
    kname = name.substr(0, colon);
    wanted = name.substr(colon + 1);
    if (wanted.size() < 2 || wanted.front() != '{' || wanted.back() != '}') {
      throw std::runtime_error("kernel: bad compute unit list in '" + name + "'");
    }
    wanted = "," + wanted.substr(1, wanted.size() - 2) + ",";
  }
  auto impl = std::make_shared<kernel_impl>();
  impl->device = dev;
  impl->xclbin = card.xclbin;
  impl->name = kname;
  for (const auto& k : card.xclbin->kernels) {
    if (k.name == kname) impl->num_args = k.args.size();
  }
  for (const auto& cu : card.cus) {
    if (cu->info().kernel != kname) continue;
    if (!wanted.empty() && wanted.find("," + cu->info().instance + ",") == std::string::npos) continue;
    impl->cus.push_back(cu);
  }
  if (impl->cus.empty()) throw std::runtime_error("No compute units matching '" + name + "'");
  handle = std::move(impl);
}

namespace {
// The bank every compute unit of the kernel shares for the argument; else the first one's.
int arg_group(const kernel_impl& k, int argno) {
  if (argno < 0 || static_cast<size_t>(argno) >= k.num_args) {
    throw std::runtime_error("kernel::group_id: invalid argument index " + std::to_string(argno));
  }
  const int first = k.cus.front()->info().arg_bank[argno];
  if (first < 0)
    throw std::runtime_error("kernel::group_id: argument " + std::to_string(argno) + " has no memory bank");
  return first;
}
}  // namespace

int kernel::group_id(int argno) const { return arg_group(*handle, argno); }

run::run(const kernel& krnl) {
  if (!krnl.get_handle()) throw std::runtime_error("run: empty kernel");
  auto impl = std::make_shared<run_impl>();
  impl->kernel = krnl.get_handle();
  impl->args.resize(impl->kernel->num_args);
  impl->candidates = impl->kernel->cus;
  handle = std::move(impl);
}

void run::set_arg_at_index(int index, const xrt::bo& bo) {
  run_impl& r = *handle;
  if (index < 0 || static_cast<size_t>(index) >= r.args.size()) {
    throw std::runtime_error("run::set_arg: invalid argument index " + std::to_string(index));
  }
  std::shared_ptr<bo_impl> b = bo.get_handle();
  if (!b) throw std::runtime_error("run::set_arg: empty bo");
  // As XRT's run_impl::validate_bo_at_index: keep the compute units connected to the bo's bank;
  // when none is, warn and bind a copy of the bo in the connected bank.
  std::vector<std::shared_ptr<tessera_xrt_emu::ComputeUnit>> keep;
  for (const auto& cu : r.candidates) {
    if (cu->info().arg_bank[index] == b->bank) keep.push_back(cu);
  }
  if (keep.empty()) {
    const int connected = arg_group(*r.kernel, index);
    std::fprintf(stderr,
                 "[XRT] WARNING: Kernel %s has no compute units with connectivity required for global argument at "
                 "index %d. The argument is allocated in bank %d, the compute unit is connected to bank %d. "
                 "Allocating local copy of argument buffer in connected bank.\n",
                 r.kernel->name.c_str(), index, b->bank, connected);
    auto copy = std::make_shared<bo_impl>(*b);
    copy->bank = connected;
    b = std::move(copy);
  } else {
    r.candidates = std::move(keep);
  }
  r.args[index] = std::move(b);
}

void run::start() {
  run_impl& r = *handle;
  {
    std::lock_guard lock(r.mu);
    if (r.state == ERT_CMD_STATE_QUEUED || r.state == ERT_CMD_STATE_RUNNING) {
      throw std::runtime_error("run::start: the run is still in progress");
    }
    for (size_t i = 0; i < r.args.size(); ++i) {
      if (!r.args[i]) throw std::runtime_error("run::start: argument " + std::to_string(i) + " is not set");
    }
    r.state = ERT_CMD_STATE_QUEUED;
    r.abort_requested = false;
  }
  tessera_xrt_emu::Card& card = *r.kernel->device->card;
  {
    std::lock_guard lock(card.mu);
    if (card.vanished) {
      std::lock_guard run_lock(r.mu);
      r.state = ERT_CMD_STATE_NEW;
      throw std::runtime_error("run::start: the emulated card is gone (device lost)");
    }
    const uint64_t n = ++card.runs;
    const bool faulty = card.has_faults();
    r.hang = faulty && card.faults.hang_run.fires(n);
    r.error = faulty && card.faults.error_run.fires(n);
    r.vanish_after = faulty && card.faults.vanish_after_run.fires(n);
  }
  // The scheduler's choice: the first idle compute unit the arguments allow, else the least busy.
  auto chosen = r.candidates.front();
  for (const auto& cu : r.candidates) {
    if (cu->runs_done() < chosen->runs_done()) chosen = cu;
  }
  chosen->submit(handle);
}

ert_cmd_state run::wait(const std::chrono::milliseconds& timeout) const {
  run_impl& r = *handle;
  std::unique_lock lock(r.mu);
  if (r.state == ERT_CMD_STATE_NEW) return r.state;
  const auto done = [&] { return tessera_xrt_emu::is_final(r.state); };
  if (timeout.count() <= 0) {
    r.cv.wait(lock, done);
  } else if (!r.cv.wait_for(lock, timeout, done)) {
    return ERT_CMD_STATE_TIMEOUT;
  }
  return r.state;
}

ert_cmd_state run::abort() {
  run_impl& r = *handle;
  std::unique_lock lock(r.mu);
  if (tessera_xrt_emu::is_final(r.state) || r.state == ERT_CMD_STATE_NEW) return r.state;
  r.abort_requested = true;
  r.cv.notify_all();
  r.cv.wait(lock, [&] { return tessera_xrt_emu::is_final(r.state); });
  return r.state;
}

}  // namespace xrt

extern "C" int tessera_xrt_emu_reset() {
  auto& c = tessera_xrt_emu::cards();
  std::lock_guard lock(c.mu);
  tessera_xrt_emu::configure(c);
  return static_cast<int>(c.count);
}

extern "C" long tessera_xrt_emu_cu_runs(unsigned card, const char* instance) {
  auto& c = tessera_xrt_emu::cards();
  std::lock_guard lock(c.mu);
  if (card >= c.cards.size()) return -1;
  std::lock_guard card_lock(c.cards[card]->mu);
  for (const auto& cu : c.cards[card]->cus) {
    if (cu->info().instance == instance) return static_cast<long>(cu->runs_done());
  }
  return -1;
}
