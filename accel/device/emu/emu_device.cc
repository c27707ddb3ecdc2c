#include "accel/device/emu/emu_device.h"

#include <algorithm>
#include <cstring>
#include <new>
#include <thread>

#include "accel/device/emu/emu_kernels.h"
#include "accel/device/emu/emu_ops.h"
#include "accel/device/emu/emu_profile.h"
#include "accel/device/emu/emu_program_check.h"
#include "accel/device/emu/emu_thread_pool.h"

namespace tessera {

EmuProgram::EmuProgram(const CompiledProgram& program, uint32_t max_batch, std::shared_ptr<emu::EmuThreadPool> pool,
                       const emu::EmuKernels& kernels, std::shared_ptr<emu::EmuFaultState> faults)
    : header_(program.header),
      layers_(program.layers),
      weights_(program.weights),
      quant_(program.quant),
      input_bytes_(program.input_bytes()),
      output_bytes_(program.output_bytes()),
      max_batch_(max_batch),
      pool_(std::move(pool)),
      kernels_(kernels),
      model_(program.model),
      faults_(std::move(faults)) {
  size_t scratch_per_image = 0;
  packed_.resize(layers_.size());
  for (size_t i = 0; i < layers_.size(); ++i) {
    const abi::LayerDesc& d = layers_[i];
    if (d.op != abi::kOpConv) continue;
    scratch_per_image = std::max(scratch_per_image, emu::conv_scratch_bytes(kernels_, d));
    if (kernels_.pack != nullptr) {
      packed_[i].resize(emu::packed_conv_words(kernels_, d));
      emu::pack_conv_weights(kernels_, d, weights_.data(), packed_[i].data());
    }
  }
  arena_.assign(static_cast<size_t>(max_batch) * header_.arena_image_bytes, 0);
  if (emu::profile_enabled()) profile_.assign(max_batch + 1, std::vector<emu::LayerTime>(layers_.size()));
  scratch_.resize(scratch_per_image * max_batch);
}

EmuProgram::~EmuProgram() {
  for (const std::vector<emu::LayerTime>& times : profile_) emu::print_profile(layers_, kernels_, times);
}

Status EmuProgram::execute(std::span<int8_t> arena, uint32_t batch, std::chrono::steady_clock::time_point deadline) {
  if (batch > max_batch_) {
    return Status::invalid_argument("emulator: batch " + std::to_string(batch) + " exceeds the program's max_batch " +
                                    std::to_string(max_batch_));
  }
  if (arena.size() < static_cast<size_t>(batch) * header_.arena_image_bytes) {
    return Status::invalid_argument("emulator: arena smaller than batch x arena_image_bytes");
  }
  if (batch == 0) return Status::ok();
  for (size_t i = 0; i < layers_.size(); ++i) {
    if (std::chrono::steady_clock::now() > deadline) {
      return Status::deadline_exceeded("emulator: run exceeded its deadline before layer " + std::to_string(i));
    }
    const abi::LayerDesc& d = layers_[i];
    const emu::LayerRun layer{d,
                              weights_.data(),
                              quant_.data(),
                              arena.data(),
                              header_.arena_image_bytes,
                              batch,
                              kernels_,
                              *pool_,
                              packed_[i].empty() ? nullptr : packed_[i].data(),
                              scratch_.data(),
                              deadline};
    const auto start = profile_.empty() ? std::chrono::steady_clock::time_point{} : std::chrono::steady_clock::now();
    const bool done = d.op == abi::kOpConv   ? emu::run_conv(layer)
                      : d.op == abi::kOpPool ? emu::run_pool(layer)
                                             : emu::run_add(layer);
    if (!profile_.empty()) {
      emu::LayerTime& t = profile_[batch][i];
      ++t.runs;
      t.images += batch;
      t.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    }
    if (!done) {
      // Checked per task, not only between layers: one huge layer overruns by one task at most.
      return Status::deadline_exceeded("emulator: run exceeded its deadline in layer " + std::to_string(i) +
                                       " (abandoned mid-layer)");
    }
  }
  last_run_cycles_ = model_.cycles(batch);
  return Status::ok();
}

Status EmuProgram::injected_fault(std::span<int8_t> outputs, uint32_t batch, std::chrono::milliseconds timeout) {
  if (!faults_) return Status::ok();
  const uint64_t n = ++faults_->runs;
  const emu::EmuFaultPlan& plan = faults_->plan;
  const std::string which = "emulator: run " + std::to_string(n);
  if (plan.fail_run.fires(n)) return Status::internal(which + " ended in ERT_CMD_STATE_ERROR (injected fault)");
  if (plan.hang_run.fires(n)) {
    // A hung kernel: nothing comes back before the timeout, then the run is aborted. Without a
    // timeout a board would hang for good; the emulator gives up after a minute.
    const auto wait = timeout.count() > 0 ? timeout : std::chrono::milliseconds(60000);
    std::this_thread::sleep_for(wait);
    return Status::deadline_exceeded(which + " did not finish within " + std::to_string(wait.count()) +
                                     " ms (injected hang; aborted: ERT_CMD_STATE_ABORT)");
  }
  if (plan.wedge_run.fires(n)) {
    std::this_thread::sleep_for(std::chrono::seconds(30));
    return Status::deadline_exceeded(which + " came back after 30 s (injected wedge; timeout not honoured)");
  }
  if (plan.corrupt_run.fires(n)) {
    // What a broken device leaves behind: garbage where the outputs go, a status word no kernel writes.
    std::fill_n(outputs.begin(), std::min(outputs.size(), static_cast<size_t>(batch) * output_bytes_), int8_t{0x5a});
    return Status::internal(which + ": kernel refused the program: RunStatus 3735928559 = unknown RunStatus " +
                            "(corrupt status word; injected fault)");
  }
  return Status::ok();
}

Status EmuProgram::run(std::span<const int8_t> inputs, uint32_t batch, std::span<int8_t> outputs,
                       std::chrono::milliseconds timeout) {
  if (batch == 0 || batch > max_batch_) {
    return Status::invalid_argument("emulator: batch " + std::to_string(batch) + " is outside [1, max_batch " +
                                    std::to_string(max_batch_) + "]");
  }
  if (inputs.size() < static_cast<size_t>(batch) * input_bytes_ ||
      outputs.size() < static_cast<size_t>(batch) * output_bytes_) {
    return Status::invalid_argument("emulator: input/output buffers smaller than batch x tensor bytes");
  }
  TESSERA_RETURN_IF_ERROR(injected_fault(outputs, batch, timeout));
  const auto deadline =
      timeout.count() > 0 ? std::chrono::steady_clock::now() + timeout : std::chrono::steady_clock::time_point::max();
  const size_t image_bytes = header_.arena_image_bytes;
  // A program without an input (or output) tensor copies nothing: memcpy must not see the null
  // data() of an empty buffer (fuzz_emu_program).
  for (uint32_t n = 0; n < batch && input_bytes_ > 0; ++n) {
    std::memcpy(arena_.data() + n * image_bytes + header_.input_offset, inputs.data() + n * input_bytes_, input_bytes_);
  }
  TESSERA_RETURN_IF_ERROR(execute(arena_, batch, deadline));
  for (uint32_t n = 0; n < batch && output_bytes_ > 0; ++n) {
    std::memcpy(outputs.data() + n * output_bytes_, arena_.data() + n * image_bytes + header_.output_offset,
                output_bytes_);
  }
  return Status::ok();
}

EmuDevice::EmuDevice(std::string board, EmuDeviceOptions options)
    : board_(std::move(board)),
      pool_(std::make_shared<emu::EmuThreadPool>(options.threads)),
      kernels_(options.kernels != nullptr ? *options.kernels
               : options.portable         ? emu::scalar_kernels()
                                          : emu::emu_kernels()) {
  if (options.kernels == nullptr && !options.portable) kernels_status_ = emu::select_kernels().status();
  if (options.faults.any()) {
    faults_ = std::make_shared<emu::EmuFaultState>();
    faults_->plan = options.faults;
  }
}

EmuDevice::~EmuDevice() = default;

DeviceInfo EmuDevice::info() const {
  DeviceInfo info;
  info.kind = "emu";
  info.name = "emulator (" + std::to_string(pool_->size()) + " threads, " + kernels_.name + ")";
  info.board = board_;
  // clock_mhz stays 0: cycles are modelled per program, at the clock of its plan's profile.
  info.detail = "fabric time modelled by the plan for board profile '" + board_ + "'";
  if (faults_) info.detail += "; fault injection on (--emu-faults)";
  return info;
}

Result<std::unique_ptr<EmuProgram>> EmuDevice::load_program(const CompiledProgram& program, uint32_t max_batch) {
  if (max_batch == 0) return Status::invalid_argument("emulator: max_batch must be >= 1");
  if (!kernels_status_.is_ok()) return Status(kernels_status_.code(), "emulator: " + kernels_status_.message());
  TESSERA_RETURN_IF_ERROR(emu::check_program(program));
  if (faults_) {
    const uint64_t n = ++faults_->loads;
    if (faults_->plan.fail_load.fires(n)) {
      return Status::unavailable("emulator: the device died while loading program " + std::to_string(n) +
                                 " (injected fault)");
    }
  }
  try {
    return std::make_unique<EmuProgram>(program, max_batch, pool_, kernels_, faults_);
  } catch (const std::bad_alloc&) {
    return Status::resource_exhausted("emulator: cannot allocate the arena for " + std::to_string(max_batch) +
                                      " images of " + std::to_string(program.header.arena_image_bytes) + " bytes");
  }
}

Status EmuDevice::reset() {
  if (faults_) {
    ++faults_->resets;
    std::this_thread::sleep_for(faults_->plan.reset_delay);
  }
  return Status::ok();
}

Result<std::unique_ptr<DeviceProgram>> EmuDevice::load(const CompiledProgram& program, uint32_t max_batch) {
  TESSERA_ASSIGN_OR_RETURN(std::unique_ptr<EmuProgram> loaded, load_program(program, max_batch));
  return std::unique_ptr<DeviceProgram>(std::move(loaded));
}

}  // namespace tessera
