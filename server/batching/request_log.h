// One log line per classify request: debug when it succeeds, warn when it fails.
#pragma once

#include <cstddef>
#include <string_view>

#include "accel/common/status.h"
#include "server/batching/classify_result.h"

namespace tessera {

// "grpc 1a2b3c4d-7 model=fashion-mnist bytes=312 top1='Ankle boot' 0.973 total=812us"
void log_request_done(std::string_view via, std::string_view request_id, std::string_view model, size_t bytes,
                      const ClassifyResult& result);

// "http 1a2b3c4d-8 model=fashion-mnist bytes=12 failed: INVALID_ARGUMENT: not an image"
void log_request_failed(std::string_view via, std::string_view request_id, std::string_view model, size_t bytes,
                        const Status& status);

}  // namespace tessera
