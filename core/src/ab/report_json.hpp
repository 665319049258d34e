// The A/B report as JSON (schema "tessera.ab/1", described in docs/ab.md): the arms, the
// configuration differences, the summaries (overall and per prompt), the curves the HTML plots,
// and every run and scored position, so any further analysis needs no rerun.
#pragma once

#include <nlohmann/json.hpp>

#include "ab/ab_report.hpp"

namespace tessera::ab {

nlohmann::ordered_json report_to_json(const AbReport& report);

}  // namespace tessera::ab
