// tessera.v1's classify messages and the server's own types: a ClassifyRequest as the admission
// step reads it, a ClassifyResult as a ClassifyResponse carries it. Shared by the unary Classify
// (classifier_service.h) and ClassifyStream (classify_stream.h).
#pragma once

#include <grpcpp/grpcpp.h>

#include "server/batching/admission.h"
#include "server/batching/classify_result.h"
#include "tessera/v1/classifier.pb.h"

namespace tessera {

// The request as admission wants it; it points into `request`, which must outlive the job.
// Refusals log the image's size; the call's deadline and cancellation go with the job.
AdmissionRequest admission_request(grpc::CallbackServerContext* context, const v1::ClassifyRequest& request,
                                   const char* via);

// The answer's wire form: classes, timing, batch size, energy.
void fill_response(const ClassifyResult& result, v1::ClassifyResponse& response);

}  // namespace tessera
