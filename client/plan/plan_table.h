// `tessera plan`'s text output: the per-layer table, the totals and the comparison, if any.
#pragma once

#include <ostream>

#include "client/plan/plan_report.h"

namespace tessera::client {

// Everything about one board: header, layer table, totals, caveat, comparison.
void print_plan_report(std::ostream& out, const PlanReport& report);

}  // namespace tessera::client
