// The load `tessera bench` puts on tesserad: a warm-up, then the measured phase, closed loop (a
// request leaves as soon as a slot is free) or open loop (arrivals on a schedule, with a bound on
// requests in flight), a live progress line on stderr, and the drain at the end.
#pragma once

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "client/commands/bench_senders.h"
#include "client/commands/bench_stats.h"
#include "client/commands/commands.h"

namespace tessera::client {

// The shape of a run, from the flags.
struct BenchRunShape {
  bool open_loop = false;  // --rate given
  bool stream = false;     // --mode stream
  unsigned slots = 1;      // requests (unary) or streams (stream) in flight
  double duration_s = 0;   // measured seconds; 0 = until --requests
  double cap_s = 0;        // hard cap on the measured phase
};
BenchRunShape bench_run_shape(const BenchArgs& args);

// When the run began, when its measured phase begins (after the warm-up) and when it must end.
struct BenchTimeline {
  std::chrono::steady_clock::time_point start;
  std::chrono::steady_clock::time_point measure_start;
  std::chrono::steady_clock::time_point measure_end;
};
BenchTimeline bench_timeline(std::chrono::steady_clock::time_point start, double warmup_s, double cap_s);

// What a run recorded, copied once the load has stopped (late answers are not in it).
struct BenchRecord {
  std::vector<BenchSample> samples;  // measured answers
  std::map<grpc::StatusCode, uint64_t> errors;
  std::map<grpc::StatusCode, std::string> error_examples;
  uint64_t measured_sent = 0;
  uint64_t dropped = 0;   // open loop arrivals over the in-flight bound
  uint64_t not_sent = 0;  // sends refused: the slot's stream had ended
  bool finished = false;  // the sender's calls all ended by the drain deadline
  bool drained = false;   // every request sent was answered by the drain deadline
};

// Shared by the load driver and the answer callbacks (bench_load.cc).
struct BenchLoadState;

// Sends `images` round robin through `sender` from `timeline.start` until the measured phase
// ends (--duration, --requests, --max-seconds or Ctrl-C), recording the measured answers.
class BenchLoad {
 public:
  BenchLoad(const BenchArgs& args, const BenchRunShape& shape, const BenchTimeline& timeline,
            const std::vector<BenchImage>& images, BenchSender& sender);

  // The warm-up and the measured phase, then the drain; a progress line on stderr meanwhile.
  void run();
  // A copy of what was recorded so far (answers may still arrive when the drain timed out).
  BenchRecord record() const;

 private:
  // Sends the next image on `slot`; false when the slot's stream has ended.
  bool issue(unsigned slot, std::chrono::steady_clock::time_point now);
  bool should_stop(std::chrono::steady_clock::time_point now);
  // Waits (`lock` on the state's mutex) until `done` or `deadline`; with a polled sender it runs
  // the answers meanwhile. Returns done().
  bool wait_until(std::unique_lock<std::mutex>& lock, std::chrono::steady_clock::time_point deadline,
                  const std::function<bool()>& done);
  void run_closed_loop();
  void run_open_loop();
  void drain();

  const BenchArgs& args_;
  const BenchRunShape shape_;
  const BenchTimeline timeline_;
  const std::vector<BenchImage>& images_;
  BenchSender& sender_;
  std::shared_ptr<BenchLoadState> state_;
  uint64_t seq_ = 0;  // requests issued, warm-up included
  bool finished_ = false;
  bool drained_ = false;
};

}  // namespace tessera::client
