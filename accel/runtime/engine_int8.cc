#include "accel/runtime/engine_int8.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "accel/graph/passes.h"
#include "accel/host/reference_executor.h"
#include "accel/quant/calibration.h"
#include "accel/quant/quantize.h"
#include "accel/runtime/calibration_set.h"
#include "accel/runtime/host_op_timing.h"

namespace tessera {
namespace {

uint64_t micros_since(std::chrono::steady_clock::time_point start) {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - start).count());
}

// The last segment that reads each tensor (host inputs, fabric inputs), so a host segment may
// take a tensor no later segment needs instead of copying it.
std::map<std::string, size_t> last_reads(const plan::CompiledModel& compiled) {
  std::map<std::string, size_t> last;
  for (size_t k = 0; k < compiled.segments.size(); ++k) {
    const plan::CompiledSegment& cs = compiled.segments[k];
    if (cs.fabric) {
      last[cs.input] = k;
    } else {
      for (const auto& in : cs.graph.inputs) last[in.name] = k;
    }
  }
  return last;
}

}  // namespace

Result<std::unique_ptr<Int8Path>> Int8Path::create(const ModelConfig& config, const Graph& graph,
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
  plan::CompileOptions compile{*board, options.plan, options.plan_cache.get(), config.name, options.partition};
  compile.plan.space = plan::SearchSpace::kKernel;
  TESSERA_ASSIGN_OR_RETURN(path->compiled_, plan::compile_model(folded, ranges, compile));
  TESSERA_RETURN_IF_ERROR(measure_host_ops(folded, samples.front(), path->compiled_.placement));
  path->last_read_ = last_reads(path->compiled_);
  TESSERA_RETURN_IF_ERROR(path->start());
  return path;
}

Result<std::unique_ptr<Int8Path>> Int8Path::create_instance(const Int8Path& first,
                                                            std::shared_ptr<DeviceSupervisor> supervisor) {
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
  path->last_read_ = first.last_read_;
  TESSERA_RETURN_IF_ERROR(path->start());
  return path;
}

Status Int8Path::start() {
  if (compiled_.has_fabric) {
    if (Status loaded = load_programs(); !loaded.is_ok()) {
      return Status(loaded.code(), "device " + std::to_string(supervisor_->index()) + ": " + loaded.message());
    }
  }
  if (options_.pipelined) {
    fabric_thread_ = std::thread([this] { fabric_loop(); });
  }
  return Status::ok();
}

Int8Path::~Int8Path() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  fabric_cv_.notify_all();
  space_cv_.notify_all();
  if (fabric_thread_.joinable()) fabric_thread_.join();
}

std::string Int8Path::summary() const {
  if (!compiled_.has_fabric) return compiled_.fabric_summary + " (" + compiled_.placement.line() + ")";
  const plan::ModelPlan& p = compiled_.plan;
  char modeled[160];
  std::snprintf(modeled, sizeof modeled, "%.0f images/s, %.3f mJ/image modeled", p.images_per_second(),
                p.energy_uj() * 1e-3);
  return compiled_.fabric_summary + " [device " + device_kind_ + ", board " + p.board.name + ": " + modeled +
         (compiled_.plan_from_cache ? ", plan from cache" : ", plan searched") + "; " + compiled_.placement.line() +
         "]";
}

Status Int8Path::load_programs() {
  programs_.clear();
  loaded_generation_ = supervisor_->generation();
  for (size_t k = 0; k < compiled_.segments.size(); ++k) {
    if (!compiled_.segments[k].fabric) continue;
    auto program = supervisor_->device().load(compiled_.segments[k].program, options_.max_batch);
    if (!program) {
      programs_.clear();
      return Status(program.status().code(),
                    "loading the fabric program of segment " + std::to_string(k) + ": " + program.status().message());
    }
    programs_[k] = std::move(program).value();
  }
  return Status::ok();
}

Status Int8Path::run_chunk(Job& job, size_t k, std::span<const int8_t> in, uint32_t count, std::span<int8_t> out) {
  if (programs_.empty() || loaded_generation_ != supervisor_->generation()) {
    if (Status loaded = load_programs(); !loaded.is_ok()) return job.device_error = loaded;
  }
  DeviceProgram& program = *programs_.at(k);
  Status ran = program.run(in, count, out, options_.device_timeout);
  // A batch the device cannot take is the caller's mistake; everything else is the device's.
  if (!ran.is_ok() && ran.code() != StatusCode::kInvalidArgument) job.device_error = ran;
  if (ran.is_ok()) {
    supervisor_->run_ok();
    job.result.fabric_cycles += program.last_run_cycles();
  }
  return ran;
}

bool Int8Path::handle_device_error(Job& job) {
  if (job.device_error.is_ok()) return false;
  job.status = supervisor_->failed(job.device_error);
  job.fabric_done.set_value();  // the caller is answered before the reset, which may take long
  recover();
  return true;
}

void Int8Path::recover() {
  programs_.clear();
  uint64_t seen = loaded_generation_;  // skip the reset when another engine did it since
  while (supervisor_->usable().is_ok()) {
    Status status = supervisor_->reset(seen);
    if (status.is_ok()) status = load_programs();
    if (status.is_ok()) return supervisor_->recovered();
    (void)supervisor_->failed(status);  // counted; out of service after too many in a row
    seen = supervisor_->generation();
  }
}

// Fabric segment job.segment: quantises its input, runs its program in chunks of max_batch,
// dequantises its output under every name later segments read it by.
Status Int8Path::fabric_stage(Job& job) {
  const auto start = std::chrono::steady_clock::now();
  const size_t k = job.segment;
  const plan::CompiledSegment& cs = compiled_.segments[k];
  TESSERA_RETURN_IF_ERROR(supervisor_->usable());
  const CompiledProgram& prog = cs.program;
  auto input = job.values.find(cs.input);
  if (input == job.values.end())
    return Status::internal("segment " + std::to_string(k) + ": no tensor '" + cs.input + "'");
  const Tensor& in = input->second;
  const auto n = static_cast<uint32_t>(job.images);
  if (in.data.size() != static_cast<size_t>(n) * prog.input_bytes()) {
    return Status::internal("segment " + std::to_string(k) + ": input '" + cs.input + "' is " +
                            shape_to_string(in.shape) + ", the program takes " + std::to_string(prog.input_bytes()) +
                            " values an image");
  }
  std::vector<int8_t> q_in(in.data.size());
  quant::quantize_values(in.data.data(), in.data.size(), prog.input_scale, q_in.data());
  if (last_read_.at(cs.input) == k) job.values.erase(input);
  std::vector<int8_t> q_out(static_cast<size_t>(n) * prog.output_bytes());
  for (uint32_t first = 0; first < n; first += options_.max_batch) {
    const uint32_t count = std::min(options_.max_batch, n - first);
    TESSERA_RETURN_IF_ERROR(
        run_chunk(job, k,
                  std::span<const int8_t>(q_in.data() + static_cast<size_t>(first) * prog.input_bytes(),
                                          static_cast<size_t>(count) * prog.input_bytes()),
                  count,
                  std::span<int8_t>(q_out.data() + static_cast<size_t>(first) * prog.output_bytes(),
                                    static_cast<size_t>(count) * prog.output_bytes())));
  }
  Tensor out({static_cast<int64_t>(n), prog.output_c, prog.output_h, prog.output_w});
  for (size_t i = 0; i < q_out.size(); ++i) out.data[i] = q_out[i] * prog.output_scale;
  for (size_t i = 1; i < cs.output_names.size(); ++i) job.values[cs.output_names[i]] = out;
  job.values[cs.output_names.front()] = std::move(out);
  job.result.fabric_us += micros_since(start);
  // A board reports cycles at its kernel clock; the emulator models them at the plan's.
  const double clock = clock_mhz_ > 0 ? clock_mhz_ : prog.model.clock_mhz;
  if (clock > 0) {
    job.result.modeled_fabric_us = static_cast<uint64_t>(static_cast<double>(job.result.fabric_cycles) / clock);
  }
  job.result.modeled_fabric_uj += prog.model.energy_uj(n);
  job.result.device = static_cast<int>(supervisor_->index());
  return Status::ok();
}

// Host segment k in float on the tensors earlier segments made.
Status Int8Path::host_stage(Job& job, size_t k) {
  const auto start = std::chrono::steady_clock::now();
  const Graph& host = compiled_.segments[k].graph;
  std::map<std::string, Tensor> inputs;
  for (const auto& in : host.inputs) {
    auto it = job.values.find(in.name);
    if (it == job.values.end())
      return Status::internal("host segment " + std::to_string(k) + ": no tensor '" + in.name + "'");
    if (last_read_.at(in.name) == k) {
      inputs[in.name] = std::move(it->second);
      job.values.erase(it);
    } else {
      inputs[in.name] = it->second;
    }
  }
  TESSERA_ASSIGN_OR_RETURN(auto outputs, host::run_reference(host, inputs));
  for (auto& [name, value] : outputs) job.values[name] = std::move(value);
  job.result.host_us += micros_since(start);
  return Status::ok();
}

void Int8Path::run_fabric(Job& job) {
  job.status = fabric_stage(job);
  if (handle_device_error(job)) return;
  job.fabric_done.set_value();
}

void Int8Path::fabric_loop() {
  for (;;) {
    std::shared_ptr<Job> job;
    {
      std::unique_lock<std::mutex> lock(mu_);
      fabric_cv_.wait(lock, [&] { return stopping_ || !fabric_queue_.empty(); });
      if (fabric_queue_.empty()) return;
      job = std::move(fabric_queue_.front());
      fabric_queue_.pop_front();
      if (job->new_batch) --new_batches_queued_;
    }
    space_cv_.notify_all();
    run_fabric(*job);
  }
}

std::chrono::milliseconds Int8Path::watchdog(int64_t images) const {
  const std::chrono::milliseconds timeout = options_.device_timeout;
  if (timeout.count() <= 0 || !compiled_.has_fabric) return std::chrono::milliseconds(0);
  const int64_t runs = (images + options_.max_batch - 1) / options_.max_batch;
  const auto reset = std::clamp(10 * timeout, std::chrono::milliseconds(1000), std::chrono::milliseconds(30000));
  return static_cast<int64_t>(kQueueDepth + 2) * runs * timeout + reset;
}

Status Int8Path::fabric_segment(const std::shared_ptr<Job>& job, size_t k, bool first) {
  job->segment = k;
  job->new_batch = first;
  job->fabric_done = std::promise<void>();
  auto done = job->fabric_done.get_future();
  if (!options_.pipelined) {
    run_fabric(*job);
    done.get();
    return job->status;
  }
  // A device whose run never returns must not hang its callers: past the watchdog the device is
  // taken for wedged (out of service) and the caller answered; the job stays the fabric thread's.
  const std::chrono::milliseconds limit = watchdog(job->images);
  const auto until =
      limit.count() > 0 ? std::chrono::steady_clock::now() + limit : std::chrono::steady_clock::time_point::max();
  {
    std::unique_lock<std::mutex> lock(mu_);
    if (first) {
      if (!space_cv_.wait_until(lock, until, [&] { return stopping_ || new_batches_queued_ < kQueueDepth; })) {
        return supervisor_->wedged(limit);
      }
      if (stopping_) return Status::unavailable("the engine is shutting down");
      fabric_queue_.push_back(job);
      ++new_batches_queued_;
    } else {
      if (stopping_) return Status::unavailable("the engine is shutting down");
      fabric_queue_.push_front(job);  // a batch in flight goes ahead of new ones
    }
  }
  fabric_cv_.notify_one();
  if (done.wait_until(until) == std::future_status::timeout) return supervisor_->wedged(limit);
  done.get();
  return job->status;
}

Result<Inference> Int8Path::finish(Job& job) {
  auto out = job.values.find(output_name_);
  if (out == job.values.end()) return Status::internal("no model output '" + output_name_ + "' after the last segment");
  TESSERA_ASSIGN_OR_RETURN(job.result.scores, split_rows(out->second, job.images, num_classes_));
  for (const plan::HandoverPlan& h : compiled_.plan.handovers) {
    job.result.modeled_fabric_uj += h.cost.energy_uj * static_cast<double>(job.images);
  }
  return std::move(job.result);
}

Result<Inference> Int8Path::infer(const Tensor& batch, const std::function<void()>& first_fabric_done) {
  if (compiled_.has_fabric) TESSERA_RETURN_IF_ERROR(supervisor_->usable());
  auto job = std::make_shared<Job>();
  job->images = batch.dim(0);
  job->values[compiled_.input] = batch;
  std::unique_lock<std::mutex> sequential(sequential_mu_, std::defer_lock);
  if (!options_.pipelined) sequential.lock();  // unpipelined: one batch at a time, nothing overlaps
  bool first = true;
  for (size_t k = 0; k < compiled_.segments.size(); ++k) {
    if (compiled_.segments[k].fabric) {
      TESSERA_RETURN_IF_ERROR(fabric_segment(job, k, first));
      if (first && first_fabric_done) first_fabric_done();
      first = false;
    } else {
      TESSERA_RETURN_IF_ERROR(host_stage(*job, k));
    }
  }
  return finish(*job);
}

}  // namespace tessera
