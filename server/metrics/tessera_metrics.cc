#include "server/metrics/tessera_metrics.h"

#include "server/metrics/build_info.h"
#include "server/metrics/exposition.h"

namespace tessera::metrics {
namespace {

using prometheus::BuildCounter;
using prometheus::BuildGauge;
using prometheus::BuildHistogram;

// Request and stage latencies in seconds: 50 µs .. ~52 s, x2 each.
prometheus::Histogram::BucketBoundaries latency_buckets() { return exponential_buckets(50e-6, 2.0, 21); }

// Images per batch: powers of two up to the largest batch a model may ask for.
const prometheus::Histogram::BucketBoundaries kBatchSizeBuckets = {1, 2, 4, 8, 16, 32, 64, 128, 256};

// `base` with `extra` added (a device's labels on top of a series' own).
prometheus::Labels merged(prometheus::Labels base, const prometheus::Labels& extra) {
  base.insert(extra.begin(), extra.end());
  return base;
}

}  // namespace

TesseraMetrics::TesseraMetrics()
    : requests_family_(BuildCounter()
                           .Name("tessera_requests_total")
                           .Help("Requests answered, by model, API and outcome (a gRPC status code name).")
                           .Register(registry_)),
      images_family_(
          BuildCounter().Name("tessera_images_total").Help("Images classified successfully.").Register(registry_)),
      stage_latency_family_(
          BuildHistogram()
              .Name("tessera_request_stage_seconds")
              .Help("Time of successful requests per stage: queue (waiting for a batch), decode (decode + "
                    "preprocess), fabric and host (the pipeline stages of the batch), total (arrival to answer).")
              .Register(registry_)),
      batch_size_family_(
          BuildHistogram().Name("tessera_batch_size").Help("Images per batch the batcher formed.").Register(registry_)),
      modeled_energy_family_(BuildCounter()
                                 .Name("tessera_modeled_fabric_energy_joules_total")
                                 .Help("Fabric energy of the images run, from the planner's power model.")
                                 .Register(registry_)),
      queue_depth_family_(BuildGauge()
                              .Name("tessera_queue_depth")
                              .Help("Requests waiting in the model's batcher queue.")
                              .Register(registry_)),
      device_info_family_(BuildGauge()
                              .Name("tessera_device_info")
                              .Help("The device running the fabric part (always 1).")
                              .Register(registry_)),
      device_errors_family_(BuildCounter()
                                .Name("tessera_device_errors_total")
                                .Help("Device runs and program loads that failed (timed out, errored, corrupt "
                                      "status); each is followed by a reset and a reload.")
                                .Register(registry_)),
      energy_family_(BuildCounter()
                         .Name("tessera_energy_joules_total")
                         .Help("Board energy integrated from the power samples since start.")
                         .Register(registry_)),
      power_family_(BuildGauge()
                        .Name("tessera_power_watts")
                        .Help("Board power from the first power source that has it (NaN when none does).")
                        .Register(registry_)),
      temperature_family_(BuildGauge()
                              .Name("tessera_temperature_celsius")
                              .Help("Hottest board temperature sensor (NaN when none).")
                              .Register(registry_)),
      fabric_utilization_family_(BuildGauge()
                                     .Name("tessera_fabric_utilization_ratio")
                                     .Help("Share of the recent window the fabric stage was busy (0..1).")
                                     .Register(registry_)),
      device_images_family_(BuildCounter()
                                .Name("tessera_device_images_total")
                                .Help("Images classified successfully by batches that ran on the device.")
                                .Register(registry_)),
      device_serving_family_(BuildGauge()
                                 .Name("tessera_device_serving")
                                 .Help("1 while the device serves, 0 while it is reset or once it is out of service.")
                                 .Register(registry_)),
      fleet_bad_answers_family_(BuildCounter()
                                    .Name("tessera_fleet_peer_bad_answers_total")
                                    .Help("Answers of a --peers daemon that GET /v1/fleet refused as malformed (not "
                                          "JSON, or a field of the wrong type), by peer.")
                                    .Register(registry_)),
      daemon_{&BuildGauge()
                   .Name("tessera_ready")
                   .Help("1 while the daemon is ready, 0 while starting, draining, or while the device is reset "
                         "or out of service.")
                   .Register(registry_)
                   .Add({}),
              &BuildGauge()
                   .Name("tessera_uptime_seconds")
                   .Help("Seconds since the daemon started.")
                   .Register(registry_)
                   .Add({}),
              &BuildGauge()
                   .Name("tessera_http_connections_open")
                   .Help("HTTP connections open now (at most --max-connections).")
                   .Register(registry_)
                   .Add({}),
              &BuildCounter()
                   .Name("tessera_http_connections_refused_total")
                   .Help("HTTP connections accepted and closed at once because --max-connections were open.")
                   .Register(registry_)
                   .Add({})} {
  BuildGauge()
      .Name("tessera_build_info")
      .Help("The build of this tesserad: version, git revision, build type, compiler, CPU, xrt backend (always 1).")
      .Register(registry_)
      .Add(build_info_labels())
      .Set(1);
}

ModelSeries TesseraMetrics::add_model(const std::string& model, const std::vector<std::string>& stages) {
  const prometheus::Labels labels = {{"model", label_value(model)}};
  ModelSeries series;
  series.images = &images_family_.Add(labels);
  series.modeled_energy = &modeled_energy_family_.Add(labels);
  series.batch_size = &batch_size_family_.Add(labels, kBatchSizeBuckets);
  series.queue_depth = &queue_depth_family_.Add(labels);
  for (const std::string& stage : stages) {
    series.stage_latency.push_back(&stage_latency_family_.Add(merged(labels, {{"stage", stage}}), latency_buckets()));
  }
  return series;
}

DeviceSeries TesseraMetrics::add_device(unsigned index, const DeviceIdentity& identity) {
  const prometheus::Labels device_labels = {{"device", std::to_string(index)}};
  const prometheus::Labels info = {{"kind", label_value(identity.kind)},
                                   {"name", label_value(identity.name)},
                                   {"board", label_value(identity.board)}};
  device_info_family_.Add(merged(info, device_labels)).Set(1);
  DeviceSeries series;
  series.errors = &device_errors_family_.Add(device_labels);
  series.energy = &energy_family_.Add(device_labels);
  series.power = &power_family_.Add(device_labels);
  series.temperature = &temperature_family_.Add(device_labels);
  series.fabric_utilization = &fabric_utilization_family_.Add(device_labels);
  series.images = &device_images_family_.Add(device_labels);
  series.serving = &device_serving_family_.Add(device_labels);
  series.serving->Set(1);
  return series;
}

prometheus::Counter& TesseraMetrics::requests(const std::string& model, const std::string& api,
                                              const std::string& code) {
  return requests_family_.Add({{"model", label_value(model)}, {"api", api}, {"code", code}});
}

prometheus::Counter& TesseraMetrics::fleet_bad_answers(const std::string& peer) {
  return fleet_bad_answers_family_.Add({{"peer", label_value(peer)}});
}

std::string TesseraMetrics::expose() const { return metrics::expose({&registry_, &process_}); }

}  // namespace tessera::metrics
