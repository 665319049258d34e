// Small, dependency-free SVG charts for the HTML report: line charts (curves by position) and
// grouped bar charts (speed per arm). Output is one <svg class="plot"> element with fixed pixel
// size; the data area is outlined by a rectangle in the chart's frame colour (crisp edges), which
// the screenshot test uses to find each plot. Series are <polyline class="series"> (plus
// <circle class="marker"> points when a series has few points, so a single point still shows),
// bars are <rect class="bar">.
#pragma once

#include <string>
#include <vector>

namespace tessera::ab {

struct LineSeries {
  std::string name;
  std::string color;  // "#rrggbb"
  std::vector<double> x, y;
};

struct LineChart {
  std::string id, title, x_label, y_label;
  std::string frame_color = "#b4b4b4";
  int width = 480, height = 280;
  bool y_from_zero = true;
  double y_max_at_least = 0;  // e.g. 1 for rates
  std::vector<LineSeries> series;
};

struct BarSeries {
  std::string name;
  std::string color;
  std::vector<double> values;  // one per group
};

struct BarChart {
  std::string id, title, y_label;
  std::string frame_color = "#b4b4b4";
  int width = 480, height = 280;
  std::vector<std::string> groups;  // one panel per group, each with its own scale
  std::vector<BarSeries> series;
};

std::string render_line_chart(const LineChart& chart);
std::string render_bar_chart(const BarChart& chart);

// Text safe inside XML/HTML content and attribute values.
std::string xml_escape(const std::string& text);

// "Nice" axis ticks covering [lo, hi] (Heckbert, "Nice numbers for graph labels", Graphics Gems
// 1990): steps of 1, 2 or 5 times a power of ten.
std::vector<double> nice_ticks(double lo, double hi, int max_ticks);

}  // namespace tessera::ab
