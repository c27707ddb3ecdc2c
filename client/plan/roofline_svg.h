// `tessera plan --roofline FILE.svg`: a roofline plot of a plan like TSO's Fig. 11 (seeds/002).
// Log-log axes: x = operational intensity (ops/byte = 2 x MACs / DDR bytes), y = GOP/s
// (2 x MACs / modeled layer time); the compute roof (the fabric's peak GOP/s) and the bandwidth
// roof (ddr_gbps x intensity); one filled circle per conv layer, coloured compute-/memory-bound
// and labelled with the layer's index. Pool and add layers are omitted: they do no MACs.
// Self-contained SVG 1.1: no scripts, no external resources (hover titles name each layer).
#pragma once

#include <filesystem>
#include <string>

#include "accel/common/status.h"
#include "client/plan/plan_report.h"

namespace tessera::client {

// The SVG document. Every layer point is a <circle> with a data-layer="<index>" attribute.
std::string roofline_svg(const PlanReport& report);

// Writes `text` to `path` atomically (a temporary file in the same directory, then rename).
// Errors name the path.
Status write_file_atomically(const std::filesystem::path& path, const std::string& text);

}  // namespace tessera::client
