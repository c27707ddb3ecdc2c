// What tessera_build_info says about this binary (the usual *_build_info gauge, always 1: its
// labels carry the facts, so a query can join them onto other series or count versions in a fleet).
#pragma once

#include <prometheus/labels.h>

namespace tessera::metrics {

// {version, revision (the git commit built, "unknown" outside a checkout), build_type (CMake's),
// compiler ("gcc 12.2.0", "clang 14.0.6"), arch (the target CPU), xrt ("yes" when the xrt device
// backend is built in, else "no")}.
prometheus::Labels build_info_labels();

}  // namespace tessera::metrics
