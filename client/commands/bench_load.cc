#include "client/commands/bench_load.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <optional>
#include <random>
#include <thread>
#include <utility>

#include "client/commands/common.h"

namespace tessera::client {

using Clock = std::chrono::steady_clock;

// What the driver and the answer callbacks share.
struct BenchLoadState {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<BenchSample> samples;  // measured answers
  std::map<grpc::StatusCode, uint64_t> errors;
  std::map<grpc::StatusCode, std::string> error_examples;
  std::vector<unsigned> free_slots;  // closed loop
  uint64_t outstanding = 0;
  uint64_t measured_sent = 0;
  uint64_t warmup_sent = 0;
  uint64_t warmup_done = 0;
  uint64_t dropped = 0;   // open loop arrivals over the in-flight bound
  uint64_t not_sent = 0;  // sends refused: the slot's stream had ended
  Clock::time_point measure_start;
};

namespace {

double seconds_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

Clock::duration to_duration(double s) {
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
}

// The answer to a request sent on `slot` at `sent`: recorded when `measured`, counted as
// warm-up otherwise; the slot is free again.
void record_answer(BenchLoadState& state, unsigned slot, size_t image, Clock::time_point sent, bool measured,
                   const grpc::Status& status, const v1::ClassifyResponse* response) {
  const Clock::time_point done = Clock::now();
  // Notified after the lock is let go: the woken sender does not wake only to wait for it.
  std::unique_lock lock(state.mu);
  --state.outstanding;
  state.free_slots.push_back(slot);
  if (measured) {
    BenchSample sample;
    sample.sent_s = seconds_between(state.measure_start, sent);
    sample.done_s = seconds_between(state.measure_start, done);
    sample.latency_us = std::chrono::duration<double, std::micro>(done - sent).count();
    sample.code = status.error_code();
    sample.image = image;
    if (response) sample.timing = response->timing();
    if (response && response->classes_size() > 0) sample.top1 = response->classes(0).label();
    if (!status.ok()) {
      ++state.errors[status.error_code()];
      state.error_examples.emplace(status.error_code(), status.error_message());
    }
    state.samples.push_back(std::move(sample));
  } else {
    ++state.warmup_done;
  }
  lock.unlock();
  state.cv.notify_all();
}

// The live line: cumulative requests and errors, rate and percentiles of the last second.
std::string progress_line(BenchLoadState& state, Clock::time_point now) {
  std::vector<double> recent;
  uint64_t done = 0, errors = 0, recent_count = 0;
  bool warming;
  uint64_t warmup_done;
  {
    std::lock_guard lock(state.mu);
    warming = now < state.measure_start;
    warmup_done = state.warmup_done;
    const double t = seconds_between(state.measure_start, now);
    done = state.samples.size();
    for (auto it = state.samples.rbegin(); it != state.samples.rend() && it->done_s >= t - 1.0; ++it) {
      ++recent_count;
      if (it->code == grpc::StatusCode::OK) recent.push_back(it->latency_us);
    }
    for (const auto& [code, n] : state.errors) errors += n;
  }
  std::sort(recent.begin(), recent.end());
  char line[256];
  if (warming) {
    std::snprintf(line, sizeof line, "warmup: %llu requests", static_cast<unsigned long long>(warmup_done));
  } else {
    std::snprintf(line, sizeof line, "requests %llu  rps %.1f  p50 %.2f ms  p99 %.2f ms  errors %llu",
                  static_cast<unsigned long long>(done), static_cast<double>(recent_count),
                  percentile(recent, 50) / 1000, percentile(recent, 99) / 1000,
                  static_cast<unsigned long long>(errors));
  }
  return line;
}

// Progress on stderr while the load runs: in place on a terminal, a line a second otherwise.
class ProgressLine {
 public:
  explicit ProgressLine(BenchLoadState& state) : state_(state), thread_([this] { loop(); }) {}
  ~ProgressLine() {
    if (thread_.joinable()) stop();
  }

  // Stops the line; on a terminal, clears it.
  void stop() {
    {
      std::lock_guard lock(stop_mu_);
      running_ = false;
    }
    stop_cv_.notify_all();
    thread_.join();
    if (tty_) std::fprintf(stderr, "\r\033[K");
  }

 private:
  void loop() {
    auto next = Clock::now();
    while (running_.load()) {
      next += tty_ ? std::chrono::milliseconds(250) : std::chrono::milliseconds(1000);
      {
        // Its own wait, not the answers' (state_.cv): an answer wakes the sender only.
        std::unique_lock lock(stop_mu_);
        stop_cv_.wait_until(lock, next, [&] { return !running_.load(); });
      }
      if (!running_.load()) break;
      const std::string line = progress_line(state_, Clock::now());
      if (tty_)
        std::fprintf(stderr, "\r%s\033[K", line.c_str());
      else
        std::fprintf(stderr, "%s\n", line.c_str());
      std::fflush(stderr);
    }
  }

  BenchLoadState& state_;
  std::mutex stop_mu_;
  std::condition_variable stop_cv_;
  std::atomic<bool> running_{true};
  const bool tty_ = is_tty(STDERR_FILENO);
  std::thread thread_;  // last: starts once the members above are set
};

}  // namespace

BenchRunShape bench_run_shape(const BenchArgs& args) {
  BenchRunShape shape;
  shape.open_loop = args.rate > 0;
  shape.stream = args.mode == "stream";
  shape.slots = std::max(1u, args.concurrency);
  shape.duration_s = args.duration_s > 0 ? args.duration_s : (args.requests > 0 ? 0.0 : 10.0);
  shape.cap_s = shape.duration_s > 0 ? std::min(shape.duration_s, args.max_seconds) : args.max_seconds;
  return shape;
}

BenchTimeline bench_timeline(Clock::time_point start, double warmup_s, double cap_s) {
  BenchTimeline timeline;
  timeline.start = start;
  timeline.measure_start = start + to_duration(warmup_s);
  timeline.measure_end = timeline.measure_start + to_duration(cap_s);
  return timeline;
}

BenchLoad::BenchLoad(const BenchArgs& args, const BenchRunShape& shape, const BenchTimeline& timeline,
                     const std::vector<BenchImage>& images, BenchSender& sender)
    : args_(args),
      shape_(shape),
      timeline_(timeline),
      images_(images),
      sender_(sender),
      state_(std::make_shared<BenchLoadState>()) {
  state_->measure_start = timeline.measure_start;
  for (unsigned i = 0; i < shape.slots; ++i) state_->free_slots.push_back(i);
}

void BenchLoad::run() {
  ProgressLine progress(*state_);
  if (!shape_.open_loop) {
    run_closed_loop();
  } else {
    run_open_loop();
  }
  drain();
  progress.stop();
}

bool BenchLoad::issue(unsigned slot, Clock::time_point now) {
  const bool measured = now >= state_->measure_start;
  const size_t image_index = seq_ % images_.size();
  const BenchImage& image = images_[image_index];
  const std::string id = "bench-" + std::to_string(seq_++);
  {
    std::lock_guard lock(state_->mu);
    ++state_->outstanding;
    ++(measured ? state_->measured_sent : state_->warmup_sent);
  }
  const bool sent = sender_.send(
      slot, id, image,
      [state = state_, slot, image_index, now, measured](const grpc::Status& status, const v1::ClassifyResponse* r) {
        record_answer(*state, slot, image_index, now, measured, status, r);
      });
  if (!sent) {
    std::lock_guard lock(state_->mu);
    --state_->outstanding;
    --(measured ? state_->measured_sent : state_->warmup_sent);
    ++state_->not_sent;
  }
  return sent;
}

bool BenchLoad::wait_until(std::unique_lock<std::mutex>& lock, Clock::time_point deadline,
                           const std::function<bool()>& done) {
  if (!sender_.polled()) return state_->cv.wait_until(lock, deadline, done);
  // The answers come from poll(), which takes the lock (record_answer): poll without it.
  while (!done()) {
    if (Clock::now() >= deadline) return false;
    lock.unlock();
    sender_.poll(deadline);
    lock.lock();
  }
  return true;
}

bool BenchLoad::should_stop(Clock::time_point now) {
  if (interrupted()) return true;
  if (now >= timeline_.measure_end) return true;
  std::lock_guard lock(state_->mu);
  return args_.requests > 0 && state_->measured_sent >= args_.requests;
}

// Closed loop: a request leaves as soon as a slot is free.
void BenchLoad::run_closed_loop() {
  unsigned live_slots = shape_.slots;
  while (live_slots > 0) {
    std::optional<unsigned> slot;
    {
      std::unique_lock lock(state_->mu);
      wait_until(lock, Clock::now() + std::chrono::milliseconds(50), [&] { return !state_->free_slots.empty(); });
      if (!state_->free_slots.empty()) {
        slot = state_->free_slots.back();
        state_->free_slots.pop_back();
      }
    }
    if (!slot) {
      if (should_stop(Clock::now())) break;
      continue;
    }
    const Clock::time_point now = Clock::now();
    if (should_stop(now)) break;
    if (!issue(*slot, now)) --live_slots;  // its stream ended: the slot is gone
  }
}

// Open loop: arrivals on a schedule, whatever the answers do.
void BenchLoad::run_open_loop() {
  std::mt19937_64 rng(12345);
  std::exponential_distribution<double> exponential(args_.rate);
  Clock::time_point next = timeline_.start;
  unsigned arrival = 0;
  while (true) {
    {
      std::unique_lock lock(state_->mu);
      // Wakes at least every 100 ms to notice Ctrl-C and the end of the run.
      wait_until(lock, std::min(next, Clock::now() + std::chrono::milliseconds(100)), [&] { return interrupted(); });
    }
    const Clock::time_point now = Clock::now();
    if (should_stop(now)) break;
    if (now >= next) {
      bool full;
      {
        std::lock_guard lock(state_->mu);
        full = state_->outstanding >= args_.max_outstanding;
        if (full && now >= state_->measure_start) ++state_->dropped;
      }
      if (!full) issue(arrival++ % shape_.slots, now);
      const double gap = args_.arrivals == "fixed" ? 1.0 / args_.rate : exponential(rng);
      next += to_duration(gap);
    }
  }
}

// Every unary call has a deadline; streams are closed, then cancelled if stuck.
void BenchLoad::drain() {
  const Clock::time_point drain_deadline = Clock::now() + seconds_to_us(args_.timeout_s) + std::chrono::seconds(2);
  finished_ = sender_.finish(drain_deadline);
  std::unique_lock lock(state_->mu);
  drained_ = wait_until(lock, drain_deadline, [&] { return state_->outstanding == 0; });
}

BenchRecord BenchLoad::record() const {
  BenchRecord record;
  record.finished = finished_;
  record.drained = drained_;
  std::lock_guard lock(state_->mu);
  record.samples = state_->samples;
  record.errors = state_->errors;
  record.error_examples = state_->error_examples;
  record.measured_sent = state_->measured_sent;
  record.dropped = state_->dropped;
  record.not_sent = state_->not_sent;
  return record;
}

}  // namespace tessera::client
