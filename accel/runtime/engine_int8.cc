#include "accel/runtime/engine_int8.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "accel/graph/passes.h"
#include "accel/host/reference_executor.h"
#include "accel/quant/calibration.h"
#include "accel/quant/quantize.h"
#include "accel/runtime/calibration_set.h"

namespace tessera {
namespace {

uint64_t micros_since(std::chrono::steady_clock::time_point start) {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - start).count());
}

}  // namespace

Result<std::unique_ptr<Engine::Int8Path>> Engine::Int8Path::create(const ModelConfig& config, const Graph& graph,
                                                                   const EngineOptions& options) {
  if (!options.device) return Status::invalid_argument("int8 needs a device (emu or xrt)");
  std::unique_ptr<Int8Path> path(new Int8Path());
  path->options_ = options;
  path->options_.calibration_samples.clear();
  path->supervisor_ = options.supervisor ? options.supervisor : std::make_shared<DeviceSupervisor>(options.device);
  path->device_kind_ = options.device->info().kind;
  path->clock_mhz_ = options.device->info().clock_mhz;
  path->output_name_ = graph.outputs[0].name;

  Graph folded = graph;
  fold_constant_identities(folded);
  TESSERA_RETURN_IF_ERROR(fold_batch_norm(folded).status());
  TESSERA_ASSIGN_OR_RETURN(auto shapes, infer_shapes(folded, 1));
  path->num_classes_ = static_cast<int>(shapes.at(path->output_name_)[1]);

  std::vector<Tensor> samples = options.calibration_samples;
  if (samples.empty()) {
    TESSERA_ASSIGN_OR_RETURN(samples, load_calibration_set(config));
  }
  TESSERA_ASSIGN_OR_RETURN(auto ranges, quant::calibrate_ranges(folded, samples, config.quantization.calibration));
  const std::string board_name = options.device->info().board;
  auto board = plan::load_board_profile(board_name);
  if (!board) return Status(board.status().code(), "board '" + board_name + "': " + board.status().message());
  plan::CompileOptions compile{*board, options.plan, options.plan_cache.get(), config.name};
  compile.plan.space = plan::SearchSpace::kKernel;
  TESSERA_ASSIGN_OR_RETURN(path->compiled_, plan::compile_model(folded, ranges, compile));
  TESSERA_RETURN_IF_ERROR(path->start());
  return path;
}

Result<std::unique_ptr<Engine::Int8Path>> Engine::Int8Path::create_instance(
    const Int8Path& first, std::shared_ptr<DeviceSupervisor> supervisor) {
  std::unique_ptr<Int8Path> path(new Int8Path());
  path->options_ = first.options_;
  path->options_.device = supervisor->shared_device();
  path->options_.supervisor = supervisor;
  path->supervisor_ = std::move(supervisor);
  const DeviceInfo info = path->supervisor_->device().info();
  path->device_kind_ = info.kind;
  path->clock_mhz_ = info.clock_mhz;
  path->num_classes_ = first.num_classes_;
  path->output_name_ = first.output_name_;
  path->compiled_ = first.compiled_;
  TESSERA_RETURN_IF_ERROR(path->start());
  return path;
}

Status Engine::Int8Path::start() {
  if (compiled_.has_fabric) {
    if (Status loaded = load_program(); !loaded.is_ok()) {
      return Status(loaded.code(), "device " + std::to_string(supervisor_->index()) + ": " + loaded.message());
    }
  }
  if (options_.pipelined) {
    fabric_thread_ = std::thread([this] { fabric_loop(); });
  }
  return Status::ok();
}

Engine::Int8Path::~Int8Path() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  fabric_cv_.notify_all();
  space_cv_.notify_all();
  if (fabric_thread_.joinable()) fabric_thread_.join();
}

std::string Engine::Int8Path::summary() const {
  if (!compiled_.has_fabric) return compiled_.fabric_summary;
  const plan::ModelPlan& p = compiled_.plan;
  char modeled[160];
  std::snprintf(modeled, sizeof modeled, "%.0f images/s, %.3f mJ/image modeled", p.images_per_second(),
                p.energy_uj() * 1e-3);
  return compiled_.fabric_summary + " [device " + device_kind_ + ", board " + p.board.name + ": " + modeled +
         (compiled_.plan_from_cache ? ", plan from cache" : ", plan searched") + "]";
}

Status Engine::Int8Path::load_program() {
  program_.reset();
  loaded_generation_ = supervisor_->generation();
  auto program = supervisor_->device().load(compiled_.program, options_.max_batch);
  if (!program) return Status(program.status().code(), "loading the fabric program: " + program.status().message());
  program_ = std::move(program).value();
  return Status::ok();
}

Status Engine::Int8Path::run_chunk(Job& job, std::span<const int8_t> in, uint32_t count, std::span<int8_t> out) {
  if (!program_ || loaded_generation_ != supervisor_->generation()) {
    if (Status loaded = load_program(); !loaded.is_ok()) return job.device_error = loaded;
  }
  Status ran = program_->run(in, count, out, options_.device_timeout);
  // A batch the device cannot take is the caller's mistake; everything else is the device's.
  if (!ran.is_ok() && ran.code() != StatusCode::kInvalidArgument) job.device_error = ran;
  if (ran.is_ok()) {
    supervisor_->run_ok();
    job.result.fabric_cycles += program_->last_run_cycles();
  }
  return ran;
}

bool Engine::Int8Path::handle_device_error(Job& job) {
  if (job.device_error.is_ok()) return false;
  job.status = supervisor_->failed(job.device_error);
  job.fabric_done.set_value();  // the caller is answered before the reset, which may take long
  recover();
  return true;
}

void Engine::Int8Path::recover() {
  program_.reset();
  uint64_t seen = loaded_generation_;  // skip the reset when another engine did it since
  while (supervisor_->usable().is_ok()) {
    Status status = supervisor_->reset(seen);
    if (status.is_ok()) status = load_program();
    if (status.is_ok()) return supervisor_->recovered();
    (void)supervisor_->failed(status);  // counted; out of service after too many in a row
    seen = supervisor_->generation();
  }
}

// Quantises the input, runs the fabric program in chunks of max_batch, dequantises the output.
Status Engine::Int8Path::fabric_stage(Job& job) {
  const auto start = std::chrono::steady_clock::now();
  const Tensor& in = job.input;
  if (!compiled_.has_fabric) {
    job.boundary = in;
    return Status::ok();
  }
  TESSERA_RETURN_IF_ERROR(supervisor_->usable());
  const CompiledProgram& prog = compiled_.program;
  const auto n = static_cast<uint32_t>(in.dim(0));
  std::vector<int8_t> q_in(in.data.size());
  quant::quantize_values(in.data.data(), in.data.size(), prog.input_scale, q_in.data());
  std::vector<int8_t> q_out(static_cast<size_t>(n) * prog.output_bytes());
  for (uint32_t first = 0; first < n; first += options_.max_batch) {
    const uint32_t count = std::min(options_.max_batch, n - first);
    TESSERA_RETURN_IF_ERROR(
        run_chunk(job,
                  std::span<const int8_t>(q_in.data() + static_cast<size_t>(first) * prog.input_bytes(),
                                          static_cast<size_t>(count) * prog.input_bytes()),
                  count,
                  std::span<int8_t>(q_out.data() + static_cast<size_t>(first) * prog.output_bytes(),
                                    static_cast<size_t>(count) * prog.output_bytes())));
  }
  job.boundary = Tensor({static_cast<int64_t>(n), prog.output_c, prog.output_h, prog.output_w});
  for (size_t i = 0; i < q_out.size(); ++i) job.boundary.data[i] = q_out[i] * prog.output_scale;
  job.result.fabric_us = micros_since(start);
  // A board reports cycles at its kernel clock; the emulator models them at the plan's.
  const double clock = clock_mhz_ > 0 ? clock_mhz_ : prog.model.clock_mhz;
  if (clock > 0) {
    job.result.modeled_fabric_us = static_cast<uint64_t>(static_cast<double>(job.result.fabric_cycles) / clock);
  }
  job.result.modeled_fabric_uj = prog.model.energy_uj(static_cast<uint32_t>(n));
  job.result.device = static_cast<int>(supervisor_->index());
  return Status::ok();
}

// The host part (FC, softmax, ...) in float on the fabric's output.
Status Engine::Int8Path::host_stage(Job& job) {
  const auto start = std::chrono::steady_clock::now();
  const int64_t n = job.boundary.dim(0);
  const Graph& host = compiled_.host_graph;
  if (host.nodes.empty()) {
    TESSERA_ASSIGN_OR_RETURN(job.result.scores, split_rows(job.boundary, n, num_classes_));
  } else {
    TESSERA_ASSIGN_OR_RETURN(auto outputs, host::run_reference(host, {{host.inputs[0].name, std::move(job.boundary)}}));
    TESSERA_ASSIGN_OR_RETURN(job.result.scores, split_rows(outputs.at(output_name_), n, num_classes_));
  }
  job.result.host_us = micros_since(start);
  return Status::ok();
}

void Engine::Int8Path::run_fabric(Job& job) {
  job.status = fabric_stage(job);
  if (handle_device_error(job)) return;
  job.fabric_done.set_value();
}

void Engine::Int8Path::fabric_loop() {
  for (;;) {
    std::shared_ptr<Job> job;
    {
      std::unique_lock<std::mutex> lock(mu_);
      fabric_cv_.wait(lock, [&] { return stopping_ || !fabric_queue_.empty(); });
      if (fabric_queue_.empty()) return;
      job = std::move(fabric_queue_.front());
      fabric_queue_.pop_front();
    }
    space_cv_.notify_all();
    run_fabric(*job);
  }
}

std::chrono::milliseconds Engine::Int8Path::watchdog(int64_t images) const {
  const std::chrono::milliseconds timeout = options_.device_timeout;
  if (timeout.count() <= 0 || !compiled_.has_fabric) return std::chrono::milliseconds(0);
  const int64_t runs = (images + options_.max_batch - 1) / options_.max_batch;
  const auto reset = std::clamp(10 * timeout, std::chrono::milliseconds(1000), std::chrono::milliseconds(30000));
  return static_cast<int64_t>(kQueueDepth + 2) * runs * timeout + reset;
}

Result<Inference> Engine::Int8Path::host_part(Job& job) {
  if (job.status.is_ok()) job.status = host_stage(job);
  if (!job.status.is_ok()) return job.status;
  return std::move(job.result);
}

Result<Inference> Engine::Int8Path::infer(const Tensor& batch, const std::function<void()>& fabric_done_callback) {
  if (compiled_.has_fabric) TESSERA_RETURN_IF_ERROR(supervisor_->usable());
  auto job = std::make_shared<Job>();
  job->input = batch;
  auto fabric_done = job->fabric_done.get_future();
  if (!options_.pipelined) {
    // Unpipelined: one batch at a time through both stages, nothing overlaps.
    std::lock_guard<std::mutex> lock(sequential_mu_);
    run_fabric(*job);
    fabric_done.get();
    if (fabric_done_callback) fabric_done_callback();
    return host_part(*job);
  }
  // A device whose run never returns must not hang its callers: past the watchdog the device is
  // taken for wedged (out of service) and the caller answered; the job stays the fabric thread's.
  const std::chrono::milliseconds limit = watchdog(batch.dim(0));
  const auto until =
      limit.count() > 0 ? std::chrono::steady_clock::now() + limit : std::chrono::steady_clock::time_point::max();
  {
    std::unique_lock<std::mutex> lock(mu_);
    if (!space_cv_.wait_until(lock, until, [&] { return stopping_ || fabric_queue_.size() < kQueueDepth; })) {
      return supervisor_->wedged(limit);
    }
    if (stopping_) return Status::unavailable("the engine is shutting down");
    fabric_queue_.push_back(job);
  }
  fabric_cv_.notify_one();
  if (fabric_done.wait_until(until) == std::future_status::timeout) return supervisor_->wedged(limit);
  fabric_done.get();
  if (fabric_done_callback) fabric_done_callback();
  // The host stage on this thread, while the fabric thread runs the next caller's batch.
  return host_part(*job);
}

}  // namespace tessera
