// The HTTP routes fed whole requests without sockets (server/routes): the fuzz bytes go through
// Beast's request parser, as server/http/session reads them, and a parsed request is handed to
// HttpRoutes::handle with the bundled model (fp32) behind a real inference queue. The answer
// (or an event stream's first event) must come; a request that Beast refuses ends there, as the
// session answers it 400 without the routes.
#include <spdlog/spdlog.h>
#include <boost/beast/core/error.hpp>
#include <boost/beast/http.hpp>

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>

#include "server/batching/admission.h"
#include "server/batching/in_flight.h"
#include "server/batching/inference_queue.h"
#include "server/models/model_repository.h"
#include "server/routes/http_routes.h"

namespace {

namespace http = boost::beast::http;
using namespace tessera;

// The daemon's pieces the routes need, built once per process.
struct RoutesUnderTest {
  std::unique_ptr<ModelRepository> models;
  std::unique_ptr<InferenceQueue> queue;
  InFlightTracker in_flight;
  std::unique_ptr<Admission> admission;
  std::unique_ptr<HttpRoutes> routes;

  RoutesUnderTest() {
    spdlog::set_level(spdlog::level::off);  // a log line per request would be most of the work
    auto loaded = ModelRepository::load(std::filesystem::path(TESSERA_SOURCE_DIR) / "models");
    if (!loaded.is_ok()) {
      std::fprintf(stderr, "fuzz_http_routes: %s\n", loaded.status().message().c_str());
      std::abort();
    }
    models = std::move(loaded).value();
    InferenceQueueOptions options;
    options.workers = 1;
    queue = std::make_unique<InferenceQueue>(options);
    admission = std::make_unique<Admission>(*models, *queue, in_flight, DecodeLimits{});
    routes = std::make_unique<HttpRoutes>(*models, *admission, std::filesystem::path(TESSERA_SOURCE_DIR) / "web");
  }
};

// Where the answer arrives, from this thread or the queue's worker.
struct Answer {
  std::mutex mutex;
  std::condition_variable arrived;
  bool done = false;

  void set() {
    std::lock_guard lock(mutex);
    done = true;
    arrived.notify_all();
  }
  bool wait() {
    std::unique_lock lock(mutex);
    return arrived.wait_for(lock, std::chrono::seconds(20), [&] { return done; });
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static RoutesUnderTest server;
  http::request_parser<http::string_body> parser;
  parser.body_limit(1 << 20);
  parser.eager(true);
  boost::beast::error_code ec;
  parser.put(boost::asio::buffer(data, size), ec);
  if (!ec && !parser.is_done()) parser.put_eof(ec);
  if (ec || !parser.is_done()) return 0;

  auto answer = std::make_shared<Answer>();
  HttpResponder respond([answer](HttpResponse /*response*/) { answer->set(); },
                        [answer](HttpEventStream stream) {
                          if (stream.source) {
                            stream.source->set_wake([] {});
                            (void)stream.source->next();
                          }
                          answer->set();
                        });
  server.routes->handle(parser.release(), std::move(respond));
  if (!answer->wait()) {
    std::fprintf(stderr, "fuzz_http_routes: no answer within 20 s\n");
    std::abort();
  }
  return 0;
}
