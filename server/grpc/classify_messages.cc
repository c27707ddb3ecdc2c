#include "server/grpc/classify_messages.h"

#include <cstdint>

namespace tessera {

AdmissionRequest admission_request(grpc::CallbackServerContext* context, const v1::ClassifyRequest& request,
                                   const char* via) {
  AdmissionRequest admission;
  admission.via = via;
  admission.model = request.model();
  admission.version = request.model_version();
  admission.request_id = request.request_id();
  admission.top_k = uint64_t{request.top_k()};
  const std::string& image = request.image();
  admission.input = JobInput{EncodedImage{{reinterpret_cast<const uint8_t*>(image.data()), image.size()}}};
  admission.bytes = image.size();
  admission.deadline = steady_deadline(context->deadline());
  admission.cancelled = [context] { return context->IsCancelled(); };
  return admission;
}

void fill_response(const ClassifyResult& result, v1::ClassifyResponse& response) {
  for (const ScoredClass& scored : result.classes) {
    v1::Class* out = response.add_classes();
    out->set_index(static_cast<uint32_t>(scored.index));
    out->set_label(scored.label);
    out->set_score(scored.score);
  }
  v1::Timing* timing = response.mutable_timing();
  timing->set_decode_us(result.timing.decode_us);
  timing->set_queue_us(result.timing.queue_us);
  timing->set_inference_us(result.timing.inference_us);
  timing->set_total_us(result.timing.total_us);
  timing->set_fabric_us(result.timing.fabric_us);
  timing->set_host_us(result.timing.host_us);
  timing->set_modeled_fabric_us(result.timing.modeled_fabric_us);
  timing->set_batch_size(result.batch_size);
  timing->set_modeled_energy_uj(result.energy_uj);
}

}  // namespace tessera
