#include "accel/device/xrt/xrt_program.h"

#include <algorithm>
#include <array>
#include <cstddef>
#include <string>
#include <vector>

#include "accel/device/xrt/xrt_handles.h"

namespace tessera {

// One ping-pong buffer set and the xrt::run whose five arguments are bound to it once. Not in the
// anonymous namespace: XrtProgram::State holds two (GCC's -Wsubobject-linkage in a unity unit).
struct XrtBufferSet {
  xrt::bo program;
  xrt::bo arena;
  xrt::bo status;
  xrt::run run;
  uint32_t batch = 0;  // header.batch currently in `program` on the device
};

namespace {

const char* run_status_name(uint32_t status) {
  switch (status) {
    case abi::kRunBadProgram: return "kRunBadProgram (magic, version or layer count)";
    case abi::kRunBadLayer: return "kRunBadLayer (descriptor exceeds the synthesised limits)";
    default: return "unknown RunStatus";
  }
}

// A BO of at least `bytes` (XRT refuses empty buffers) in the bank of kernel argument `arg`,
// rounded up to whole 512-bit beats: the kernel reads and writes its weight, quant and arena
// ports in aligned 64-byte words (kernel_abi.h kBeatBytes), the last one possibly past the data.
xrt::bo make_bo(const XrtHandles& h, size_t bytes, XrtKernelArg arg) {
  const size_t beats = (std::max<size_t>(bytes, abi::kParamAlignBytes) + abi::kBeatBytes - 1) / abi::kBeatBytes;
  return xrt::bo(h.device, beats * abi::kBeatBytes, h.kernel.group_id(arg));
}

void upload(xrt::bo& bo, const void* data, size_t bytes) {
  if (bytes == 0) return;
  bo.write(data, bytes, 0);
  bo.sync(XCL_BO_SYNC_BO_TO_DEVICE, bytes, 0);
}

// Puts a batch into `set` for the next run: the header's batch when it changed, a cleared status
// and each image's input at its place in the arena. Throws what XRT throws.
void stage_batch(XrtBufferSet& set, const abi::ProgramHeader& header, std::span<const int8_t> inputs, uint32_t batch,
                 uint32_t input_bytes) {
  if (set.batch != batch) {  // only header.batch changes; re-sync the 64-byte header
    set.program.write(&batch, sizeof(batch), offsetof(abi::ProgramHeader, batch));
    set.program.sync(XCL_BO_SYNC_BO_TO_DEVICE, sizeof(abi::ProgramHeader), 0);
    set.batch = batch;
  }
  const std::array<uint32_t, abi::kStatusWords> clear{};
  upload(set.status, clear.data(), sizeof(clear));
  for (uint32_t n = 0; n < batch; ++n) {
    const size_t at = size_t{n} * header.arena_image_bytes + header.input_offset;
    set.arena.write(inputs.data() + size_t{n} * input_bytes, input_bytes, at);
    set.arena.sync(XCL_BO_SYNC_BO_TO_DEVICE, input_bytes, at);
  }
}

// The error of a run that did not complete: a timed-out run is aborted (a device that does not
// confirm the abort, or stopped responding, sets `broken`).
Status unfinished_run(xrt::run& run, ert_cmd_state state, uint32_t batch, std::chrono::milliseconds timeout,
                      std::string& broken) {
  const bool timed_out = state == ERT_CMD_STATE_TIMEOUT || state == ERT_CMD_STATE_NEW ||
                         state == ERT_CMD_STATE_QUEUED || state == ERT_CMD_STATE_SUBMITTED ||
                         state == ERT_CMD_STATE_RUNNING;
  std::string aborted = "not aborted";
  if (timed_out) {
    try {
      const ert_cmd_state after = run.abort();
      aborted = std::string("aborted: ") + ert_state_name(after);
      if (after == ERT_CMD_STATE_NORESPONSE) broken = "Xilinx device did not respond to abort; reload it";
    } catch (const std::exception& e) {
      aborted = std::string("abort failed: ") + e.what();
      broken = "Xilinx device did not confirm the abort of a timed-out run (" + aborted + ")";
    }
    return Status::deadline_exceeded("fabric run of batch " + std::to_string(batch) + " did not finish within " +
                                     std::to_string(timeout.count()) + " ms (" + aborted + ")");
  }
  // A finished command needs no abort; one the device no longer answers poisons the program.
  if (state == ERT_CMD_STATE_NORESPONSE) broken = "Xilinx device stopped responding; reload it";
  return Status::internal(std::string("fabric run ended in ") + ert_state_name(state));
}

// The kernel's verdict on a completed run and, when it ran the program, each image's output.
Status read_results(XrtBufferSet& set, const abi::ProgramHeader& header, std::span<int8_t> outputs, uint32_t batch,
                    uint32_t output_bytes) {
  std::array<uint32_t, abi::kStatusWords> verdict{};
  try {
    set.status.sync(XCL_BO_SYNC_BO_FROM_DEVICE, sizeof(verdict), 0);
    set.status.read(verdict.data(), sizeof(verdict), 0);
    if (verdict[0] == abi::kRunOk) {
      for (uint32_t n = 0; n < batch; ++n) {
        const size_t at = size_t{n} * header.arena_image_bytes + header.output_offset;
        set.arena.sync(XCL_BO_SYNC_BO_FROM_DEVICE, output_bytes, at);
        set.arena.read(outputs.data() + size_t{n} * output_bytes, output_bytes, at);
      }
    }
  } catch (const std::exception& e) {
    return status_from_exception(StatusCode::kInternal, "XRT: reading results", e);
  }
  if (verdict[0] != abi::kRunOk) {
    std::string where = verdict[0] == abi::kRunBadLayer ? " at layer " + std::to_string(verdict[1]) : "";
    return Status::internal("kernel refused the program: RunStatus " + std::to_string(verdict[0]) + " = " +
                            run_status_name(verdict[0]) + where);
  }
  return Status::ok();
}

}  // namespace

struct XrtProgram::State {
  XrtHandles handles;
  abi::ProgramHeader header{};
  uint32_t input_bytes = 0;
  uint32_t output_bytes = 0;
  uint32_t max_batch = 0;
  xrt::bo weights;
  xrt::bo quant;
  std::array<XrtBufferSet, 2> sets;
  unsigned next_set = 0;
  uint64_t last_cycles = 0;
  std::string broken;  // why the device is unusable after an unconfirmed abort; "" when fine
};

Status check_program_for_device(const CompiledProgram& program, uint32_t max_batch) {
  if (max_batch < 1) return Status::invalid_argument("max_batch must be at least 1");
  if (program.layers.empty()) return Status::invalid_argument("program has no fabric layers");
  if (program.layers.size() > abi::kMaxLayers) {
    return Status::invalid_argument("program has " + std::to_string(program.layers.size()) + " layers, limit " +
                                    std::to_string(abi::kMaxLayers));
  }
  for (size_t i = 0; i < program.layers.size(); ++i) {
    if (!abi::layer_fits(program.layers[i])) {
      return Status::invalid_argument("layer " + std::to_string(i) + " (op " + std::to_string(program.layers[i].op) +
                                      ") exceeds the synthesised limits of kernel_abi.h");
    }
  }
  const abi::ProgramHeader& h = program.header;
  if (h.arena_image_bytes == 0) return Status::invalid_argument("program header: arena_image_bytes is 0");
  if (uint64_t{h.input_offset} + program.input_bytes() > h.arena_image_bytes ||
      uint64_t{h.output_offset} + program.output_bytes() > h.arena_image_bytes) {
    return Status::invalid_argument("program header: input or output tensor outside the per-image arena");
  }
  return Status::ok();
}

XrtProgram::XrtProgram(std::unique_ptr<State> state) : state_(std::move(state)) {}
XrtProgram::~XrtProgram() = default;

Result<std::unique_ptr<DeviceProgram>> XrtProgram::create(const XrtHandles& handles, const CompiledProgram& program,
                                                          uint32_t max_batch) {
  TESSERA_RETURN_IF_ERROR(check_program_for_device(program, max_batch));
  auto state = std::make_unique<State>();
  state->handles = handles;
  state->header = program.header;
  state->input_bytes = program.input_bytes();
  state->output_bytes = program.output_bytes();
  state->max_batch = max_batch;
  const uint64_t arena_bytes = uint64_t{max_batch} * program.header.arena_image_bytes;
  const std::vector<uint32_t> words = program.program_words(max_batch);
  try {
    state->weights = make_bo(handles, program.weights.size(), kArgWeights);
    upload(state->weights, program.weights.data(), program.weights.size());
    state->quant = make_bo(handles, program.quant.size() * sizeof(int32_t), kArgQuant);
    upload(state->quant, program.quant.data(), program.quant.size() * sizeof(int32_t));
    for (XrtBufferSet& set : state->sets) {
      set.program = make_bo(handles, words.size() * sizeof(uint32_t), kArgProgram);
      upload(set.program, words.data(), words.size() * sizeof(uint32_t));
      set.batch = max_batch;
      set.arena = make_bo(handles, arena_bytes, kArgArena);
      set.status = make_bo(handles, abi::kStatusWords * sizeof(uint32_t), kArgStatus);
      set.run = xrt::run(handles.kernel);
      set.run.set_arg(kArgProgram, set.program);
      set.run.set_arg(kArgWeights, state->weights);
      set.run.set_arg(kArgQuant, state->quant);
      set.run.set_arg(kArgArena, set.arena);
      set.run.set_arg(kArgStatus, set.status);
    }
  } catch (const std::exception& e) {
    return status_from_exception(StatusCode::kResourceExhausted,
                                 "XRT: allocating buffers (arena " + std::to_string(arena_bytes) + " bytes x 2)", e);
  }
  return std::unique_ptr<DeviceProgram>(new XrtProgram(std::move(state)));
}

Status XrtProgram::run(std::span<const int8_t> inputs, uint32_t batch, std::span<int8_t> outputs,
                       std::chrono::milliseconds timeout) {
  State& s = *state_;
  if (!s.broken.empty()) return Status::unavailable(s.broken);
  if (batch < 1 || batch > s.max_batch) {
    return Status::invalid_argument("xrt: batch " + std::to_string(batch) + " outside [1, max_batch " +
                                    std::to_string(s.max_batch) + "]");
  }
  if (inputs.size() < size_t{batch} * s.input_bytes || outputs.size() < size_t{batch} * s.output_bytes) {
    return Status::invalid_argument("xrt: inputs must hold batch x " + std::to_string(s.input_bytes) +
                                    " bytes and outputs batch x " + std::to_string(s.output_bytes));
  }
  s.last_cycles = 0;
  XrtBufferSet& set = s.sets[s.next_set];
  s.next_set ^= 1u;
  ert_cmd_state state = ERT_CMD_STATE_NEW;
  std::chrono::steady_clock::duration elapsed{};
  try {
    stage_batch(set, s.header, inputs, batch, s.input_bytes);
    const auto start = std::chrono::steady_clock::now();
    set.run.start();
    state = set.run.wait(std::max(timeout, std::chrono::milliseconds(0)));  // 0: no limit
    elapsed = std::chrono::steady_clock::now() - start;
  } catch (const std::exception& e) {
    return status_from_exception(StatusCode::kInternal, "XRT run", e);
  }
  if (state != ERT_CMD_STATE_COMPLETED) return unfinished_run(set.run, state, batch, timeout, s.broken);
  TESSERA_RETURN_IF_ERROR(read_results(set, s.header, outputs, batch, s.output_bytes));
  const auto nanoseconds = std::chrono::duration_cast<std::chrono::nanoseconds>(elapsed).count();
  s.last_cycles = static_cast<uint64_t>(nanoseconds) * s.handles.kernel_clock_mhz / 1000u;
  return Status::ok();
}

uint64_t XrtProgram::last_run_cycles() const { return state_->last_cycles; }

}  // namespace tessera
