// The TSan suite's canary: a data race between a gRPC callback and one of our threads, the kind
// of bug the suite is there to find. tools/sanitize.sh tsan runs it with the suite's options (the
// suppressions, the ignore list, ignore_noninstrumented_modules), and CTest passes it only if TSan
// reports the race: proof that what keeps gRPC's own hand-overs quiet does not also hide ours.
#include <grpcpp/alarm.h>

#include <chrono>
#include <cstdio>
#include <thread>

namespace {

int shared_counter = 0;  // written by both threads with nothing ordering them

}  // namespace

int main() {
  grpc::Alarm alarm;
  // The alarm's callback runs on a gRPC thread, started before the write below.
  alarm.Set(std::chrono::system_clock::now() + std::chrono::milliseconds(20), [](bool) { shared_counter = 1; });
  shared_counter = 2;
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  std::printf("no race reported; shared_counter = %d\n", shared_counter);
  return 0;
}
