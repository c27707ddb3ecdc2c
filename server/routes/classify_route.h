// POST /v1/classify: the body is the image (JPEG or PNG), or a multipart form whose file is;
// the query may name the model (`model`, else the default one) and `top_k`; `X-Request-Id` may
// give the request's id. Answers JSON (classes, timing) from the queue's callback, with the
// X-Request-Id it went by, also on errors.
#pragma once

#include "server/http/types.h"

namespace tessera {

class Admission;

// Reads `request` (taking its body) into admission and hands the job to the queue.
void respond_classify(HttpRequest& request, const HttpResponder& respond, Admission& admission);

}  // namespace tessera
