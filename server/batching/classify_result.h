// What a classification answers: the top-k classes with labels, and where the time went.
#pragma once

#include <chrono>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "server/models/model_statistics.h"

namespace tessera {

// Microseconds per stage of one request.
struct Timing {
  uint64_t decode_us = 0;          // decode + preprocess
  uint64_t queue_us = 0;           // submitted -> picked up by a worker
  uint64_t inference_us = 0;       // the model run of the batch the image was in
  uint64_t total_us = 0;           // received -> result ready
  uint64_t fabric_us = 0;          // fabric stage of the batch (int8)
  uint64_t host_us = 0;            // host stage of the batch
  uint64_t modeled_fabric_us = 0;  // device-reported fabric time (modelled on the emulator)
};

struct ScoredClass {
  int index = 0;
  std::string label;
  float score = 0.0f;
};

struct ClassifyResult {
  std::vector<ScoredClass> classes;  // highest score first
  std::vector<float> probabilities;  // every class, in index order (KServe returns them all)
  Timing timing;
  uint32_t batch_size = 1;  // images in the batch this one ran in
  double energy_uj = 0;     // modeled fabric energy per image (0 when unknown)
  int device = -1;          // the device instance the batch ran on (-1: the host alone)
  StageDurations stages;    // where this image's time went, in ns (the statistics extension)
};

// Top-k used when the caller asks for 0.
inline constexpr int kDefaultTopK = 5;

// The k a request gets: 0 -> kDefaultTopK, and never more than the model's classes.
int effective_top_k(uint64_t requested, int num_classes);

// The k highest scores, highest first (ties: lower index first), labelled from `labels`
// ("class N" past its end).
std::vector<ScoredClass> top_k_classes(std::span<const float> scores, int k, const std::vector<std::string>& labels);

// Whole microseconds from `from` to `to` (0 if `to` is earlier).
uint64_t micros_between(std::chrono::steady_clock::time_point from, std::chrono::steady_clock::time_point to);

}  // namespace tessera
