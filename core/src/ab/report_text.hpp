// The A/B report as a terminal table: arms and what differs, teacher-forced divergence with
// percentiles, free-running outcomes and speed per arm, one line per prompt.
#pragma once

#include <string>

#include "ab/ab_report.hpp"

namespace tessera::ab {

std::string report_to_text(const AbReport& report);

}  // namespace tessera::ab
