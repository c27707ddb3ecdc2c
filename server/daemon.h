// tesserad's parts wired together: the model repository, the inference queue, the gRPC and HTTP
// servers. main.cc only parses flags and waits for a signal; tests may run a Daemon in-process.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>

#include "accel/common/status.h"
#include "accel/device/device_registry.h"

namespace tessera {

class GrpcServer;
class HttpRoutes;
class HttpServer;
class InferenceQueue;
class ModelRepository;
class ClassifierService;

struct DaemonOptions {
  std::filesystem::path models_dir = "models";
  std::string listen = "127.0.0.1";
  int grpc_port = 50051;  // 0 picks a free port
  int http_port = 8080;   // 0 picks a free port
  int64_t max_image_bytes = 16 << 20;
  std::filesystem::path web_root = "web";
  int workers = 2;         // inference threads
  size_t max_queue = 64;   // waiting jobs before RESOURCE_EXHAUSTED
  int http_threads = 2;
  std::string precision = "int8";   // int8 (fabric + host pipeline) or fp32 (host only)
  DeviceOptions device;             // --device auto|emu|xrt, --xclbin, --board
  uint32_t max_batch = 8;           // images per device run
};

class Daemon {
 public:
  // Loads the models and starts both servers; the first error stops the start and says why.
  static Result<std::unique_ptr<Daemon>> start(const DaemonOptions& options);
  ~Daemon();
  Daemon(const Daemon&) = delete;
  Daemon& operator=(const Daemon&) = delete;

  int grpc_port() const;
  int http_port() const;
  const ModelRepository& models() const { return *models_; }
  // "tesserad: listening grpc=127.0.0.1:50051 http=127.0.0.1:8080 models=fashion-mnist"
  std::string listening_line() const;

  // Stops accepting, finishes running gRPC calls (cancelling after a grace period) and queued
  // jobs, then stops the HTTP threads. Idempotent.
  void stop();

 private:
  explicit Daemon(const DaemonOptions& options);

  const DaemonOptions options_;
  std::unique_ptr<ModelRepository> models_;
  std::unique_ptr<InferenceQueue> queue_;
  std::unique_ptr<HttpRoutes> routes_;
  std::unique_ptr<ClassifierService> classifier_;
  std::unique_ptr<GrpcServer> grpc_;
  std::unique_ptr<HttpServer> http_;
  bool stopped_ = false;
};

}  // namespace tessera
