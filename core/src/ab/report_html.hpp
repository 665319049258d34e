// The A/B report as one self-contained HTML page: inline CSS and inline SVG plots drawn here
// (svg_chart.hpp) — no script, no external resource, opens offline in any browser.
// Plots: KL(A||B) by position, top-1 agreement by position, free-running agreement by output
// token, the coupling (pairs parted against the sum of the TV bound, cumulative by output
// token), speed per arm. Then the summary tables, per-prompt table and sample outputs.
#pragma once

#include <string>

#include "ab/ab_report.hpp"

namespace tessera::ab {

std::string report_to_html(const AbReport& report);

// Number of plots report_to_html draws (the screenshot test checks every one rendered).
inline constexpr int kHtmlPlotCount = 5;

}  // namespace tessera::ab
