#include "server/batching/request_log.h"

#include <spdlog/spdlog.h>

namespace tessera {

void log_request_done(std::string_view via, std::string_view request_id, std::string_view model, size_t bytes,
                      const ClassifyResult& result) {
  if (!spdlog::should_log(spdlog::level::debug)) return;
  if (result.classes.empty()) {
    spdlog::debug("{} {} model={} bytes={} top1=none total={}us", via, request_id, model, bytes,
                  result.timing.total_us);
    return;
  }
  const ScoredClass& top = result.classes.front();
  spdlog::debug("{} {} model={} bytes={} top1='{}' {:.3f} total={}us", via, request_id, model, bytes, top.label,
                top.score, result.timing.total_us);
}

void log_request_failed(std::string_view via, std::string_view request_id, std::string_view model, size_t bytes,
                        const Status& status) {
  spdlog::warn("{} {} model={} bytes={} failed: {}", via, request_id, model, bytes, status.to_string());
}

}  // namespace tessera
