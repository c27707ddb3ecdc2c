// Issue 24, item 3: a ClassifyStream client that sends and never reads. The daemon may hold only
// a bounded number of answers it has not written (kMaxPendingPerStream); past that it stops
// reading, so HTTP/2 flow control stalls the client's writes instead of the daemon queueing every
// answer. After the client cancels, the daemon serves as before and its memory has not grown.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "tests/integration/daemon_test.h"
#include "tests/integration/fmnist_images.h"
#include "tests/integration/proc_status.h"

namespace tessera::testing {
namespace {

using std::chrono::steady_clock;

// Requests the daemon answers at once (an unknown model is refused before the image is looked at)
// with an answer of some 200 bytes (the 128-character request id comes back). The client's
// receive window stays at 64 KiB (no BDP probing), so the answers stop going out after a few
// hundred; then only the daemon's receive window (some MiB) takes 64 KiB requests. A daemon that
// reads on takes all kMaxWrites in seconds; one that stops stalls the writes far below.
constexpr size_t kRequestBytes = 64 << 10;
constexpr int kMaxWrites = 6'000;
constexpr int kStalledBelow = 3'000;
// Growth of the daemon's VmRSS allowed meanwhile: gRPC's windows hold some MiB of requests (19 MiB
// measured here); generous for the sanitizer trees, far below the 390 MB the writes carry.
constexpr long kRssGrowthKb = 160 << 10;

// A channel of its own whose receive window does not grow (the default one grows to megabytes
// of answers, which hides the daemon's bound for a long while).
std::unique_ptr<v1::Classifier::Stub> small_window_stub(const std::string& address) {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_HTTP2_BDP_PROBE, 0);
  args.SetInt(GRPC_ARG_HTTP2_STREAM_LOOKAHEAD_BYTES, 64 << 10);
  return v1::Classifier::NewStub(grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), args));
}

class StreamNoReaderTest : public DaemonTest {};

TEST_F(StreamNoReaderTest, ClassifyStreamStopsReadingWhileAnswersAreUnsent) {
  const auto images = load_fmnist_images();
  ASSERT_FALSE(images.empty()) << "the make_fmnist_images fixture writes them";
  const std::string image = read_binary(images[0].png);
  const pid_t pid = daemon_->pid();
  ASSERT_GT(pid, 0);
  ASSERT_TRUE(classify_grpc(*stub_, image).status.ok());
  const long rss_before = proc_status_kb(pid, "VmRSS:");

  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(120));
  auto stub = small_window_stub(daemon_->grpc_address());
  auto stream = stub->ClassifyStream(&context);
  std::atomic<int> written{0};
  std::thread writer([&] {
    v1::ClassifyRequest request;
    request.set_model("no-such-model");
    request.set_image(std::string(kRequestBytes, 'x'));
    for (int i = 0; i < kMaxWrites; ++i) {
      std::string id = std::to_string(i);
      id.resize(128, '-');
      request.set_request_id(id);
      if (!stream->Write(request)) return;  // blocked in flow control until the cancel
      ++written;
    }
  });
  // Wait until the writes stop making progress for 2 s (or all went through), at most 90 s.
  int last = -1;
  auto still_since = steady_clock::now();
  const auto give_up = steady_clock::now() + std::chrono::seconds(90);
  while (written < kMaxWrites && steady_clock::now() - still_since < std::chrono::seconds(2) &&
         steady_clock::now() < give_up) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    if (written != last) {
      last = written;
      still_since = steady_clock::now();
    }
  }
  const int stalled_at = written;
  const long rss_stalled = proc_status_kb(pid, "VmRSS:");
  context.TryCancel();
  writer.join();
  EXPECT_LT(stalled_at, kStalledBelow) << "the daemon kept reading a stream whose client reads nothing";
  EXPECT_LT(rss_stalled - rss_before, kRssGrowthKb) << "kB grown while the stream was held";

  // The cancelled stream is gone; the daemon answers as before, without the stream's memory.
  const GrpcAnswer after = classify_grpc(*stub_, image);
  EXPECT_TRUE(after.status.ok()) << after.status.error_message();
  EXPECT_FALSE(after.top1().empty());
  EXPECT_LT(proc_status_kb(pid, "VmRSS:") - rss_before, kRssGrowthKb) << "kB kept after the cancel";
  std::cerr << "writes before the stall: " << stalled_at << "; VmRSS " << rss_before << " -> " << rss_stalled
            << " kB\n";
}

}  // namespace
}  // namespace tessera::testing
