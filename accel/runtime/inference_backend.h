// The seam between the batcher and a loaded model: the batcher hands a batch to an
// InferenceBackend and learns from a BatchListener when the device can take the next batch.
// Two implementations: fp32 (the whole graph on the host's float path, backend_fp32.h) and int8
// (fabric and host segments in order on a device's instances, backend_int8.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "accel/common/status.h"
#include "accel/graph/graph.h"
#include "accel/graph/tensor.h"
#include "accel/plan/model_plan.h"
#include "accel/plan/placement.h"

namespace tessera {

class DeviceSupervisor;

enum class Precision { kFp32, kInt8 };
const char* precision_name(Precision p);
Result<Precision> parse_precision(const std::string& name);

// One batch's answer: raw scores (logits) per image and where the time went.
struct Inference {
  std::vector<std::vector<float>> scores;
  uint64_t fabric_us = 0;          // measured time of the fabric segments (device runs + int8 I/O)
  uint64_t host_us = 0;            // measured time of the host segments
  uint64_t fabric_cycles = 0;      // device cycles (modelled on the emulator)
  uint64_t modeled_fabric_us = 0;  // fabric_cycles at the device's clock (0 when unknown)
  double modeled_fabric_uj = 0;    // the plan's fabric energy for the batch, hand-overs included (0 when unknown)
  int device = -1;                 // index of the device instance that ran it (-1: the host alone)
};

// What a backend tells its caller about one batch while it runs.
class BatchListener {
 public:
  virtual ~BatchListener() = default;
  // The device instance this batch holds can start another batch: int8, the batch's first fabric
  // segment is over (its later segments go ahead of new batches on that instance); fp32, the run
  // is over (the host's cores are its device); or the batch failed. Called exactly once per
  // infer(), on the caller's thread, before infer() returns.
  virtual void device_free() = 0;
};

class InferenceBackend {
 public:
  virtual ~InferenceBackend() = default;

  // Runs a batch (N x C x H x W, preprocessed, checked by the caller). Thread-safe; concurrent
  // callers share the pipeline, so their batches overlap stage by stage. `listener` may be null.
  virtual Result<Inference> infer(const Tensor& batch, BatchListener* listener) const = 0;
  // The batches that can hold a device at once (device instances; 1 for fp32: the host).
  virtual size_t instance_count() const = 0;
  // Output post-processing: raw scores -> probabilities in place (softmax over each row unless
  // the graph ends with one).
  virtual void to_probabilities(std::vector<std::vector<float>>& rows) const = 0;

  virtual Precision precision() const = 0;
  // What runs where, e.g. "int8: 9 fabric layers (...) in 2 segments, 1 hand-over; host: LRN ...".
  virtual const std::string& summary() const = 0;
  // The fabric part's plan on the device's board (null for fp32 or no fabric layer).
  virtual const plan::ModelPlan* plan() const { return nullptr; }
  // Where the model's multiply-adds run: the fabric's share, its segments and hand-overs, each host
  // op's modeled time (null for fp32, where everything is the host's).
  virtual const plan::Placement* placement() const { return nullptr; }
  // The health of each device instance the model runs on, in order (empty for fp32).
  virtual std::vector<const DeviceSupervisor*> instances() const { return {}; }
};

// Softmax over each row in place, unless `already` (the graph ends with a Softmax).
void softmax_rows(std::vector<std::vector<float>>& rows, bool already);

// Whether the graph's output is a Softmax's.
bool graph_ends_with_softmax(const Graph& graph);

// Rows of an N x K score tensor.
Result<std::vector<std::vector<float>>> split_rows(const Tensor& scores, int64_t n, int classes);

}  // namespace tessera
