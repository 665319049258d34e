#include "ab/svg_chart.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace tessera::ab {

namespace {

// Data-area margins inside the SVG; the inner pad keeps points off the frame line.
constexpr int kLeft = 64, kRight = 16, kTop = 34, kBottom = 42, kPad = 6;
constexpr size_t kMarkerLimit = 40;  // draw point markers for series this short

std::string tick_label(double v) {
  if (v == 0) return "0";
  const double a = std::fabs(v);
  if (a >= 1e5 || a < 1e-3) return fmt::format("{:.1e}", v);
  return fmt::format("{:.4g}", v);
}

struct Scale {
  double lo, hi;
  double px_lo, px_hi;  // pixel positions of lo and hi
  double operator()(double v) const {
    if (hi == lo) return (px_lo + px_hi) / 2;
    return px_lo + (v - lo) / (hi - lo) * (px_hi - px_lo);
  }
};

std::string header(const std::string& id, const std::string& title, int w, int h) {
  return fmt::format(
      "<svg class=\"plot\" id=\"{}\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" "
      "height=\"{}\" viewBox=\"0 0 {} {}\" font-family=\"sans-serif\" font-size=\"11\">\n"
      "<rect x=\"0\" y=\"0\" width=\"{}\" height=\"{}\" fill=\"#ffffff\"/>\n"
      "<text x=\"{}\" y=\"16\" font-size=\"13\" font-weight=\"bold\">{}</text>\n",
      xml_escape(id), w, h, w, h, w, h, kLeft, xml_escape(title));
}

// The data-area outline the screenshot test looks for: integer coordinates, crisp edges.
std::string frame(const std::string& color, int x0, int y0, int x1, int y1) {
  return fmt::format(
      "<rect class=\"frame\" data-frame-color=\"{}\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" "
      "fill=\"none\" stroke=\"{}\" stroke-width=\"1\" shape-rendering=\"crispEdges\"/>\n",
      color, x0, y0, x1 - x0, y1 - y0, color);
}

std::string y_axis(const Scale& y, const std::vector<double>& ticks, int x0, int x1,
                   const std::string& label, int label_x) {
  std::string out;
  for (double t : ticks) {
    const double py = std::round(y(t)) + 0.5;
    out += fmt::format(
        "<line x1=\"{}\" y1=\"{:.1f}\" x2=\"{}\" y2=\"{:.1f}\" stroke=\"#eeeeee\"/>"
        "<text x=\"{}\" y=\"{:.1f}\" text-anchor=\"end\" fill=\"#555555\">{}</text>\n",
        x0 + 1, py, x1 - 1, py, x0 - 4, py + 4, tick_label(t));
  }
  const int mid = static_cast<int>((y.px_lo + y.px_hi) / 2);
  out += fmt::format(
      "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" fill=\"#333333\" "
      "transform=\"rotate(-90 {} {})\">{}</text>\n",
      label_x, mid, label_x, mid, xml_escape(label));
  return out;
}

}  // namespace

std::string xml_escape(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::vector<double> nice_ticks(double lo, double hi, int max_ticks) {
  if (!(hi > lo) || max_ticks < 2) return {lo};
  const double raw = (hi - lo) / (max_ticks - 1);
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  const double f = raw / magnitude;
  const double step = (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * magnitude;
  std::vector<double> ticks;
  for (double t = std::ceil(lo / step) * step; t <= hi + step * 1e-9; t += step)
    ticks.push_back(std::fabs(t) < step * 1e-9 ? 0.0 : t);
  return ticks;
}

std::string render_line_chart(const LineChart& c) {
  const int x0 = kLeft, x1 = c.width - kRight, y0 = kTop, y1 = c.height - kBottom;
  double xlo = INFINITY, xhi = -INFINITY, ylo = INFINITY, yhi = -INFINITY;
  for (const LineSeries& s : c.series) {
    for (size_t i = 0; i < s.x.size() && i < s.y.size(); ++i) {
      xlo = std::min(xlo, s.x[i]);
      xhi = std::max(xhi, s.x[i]);
      ylo = std::min(ylo, s.y[i]);
      yhi = std::max(yhi, s.y[i]);
    }
  }
  if (!std::isfinite(xlo)) xlo = 0, xhi = 1, ylo = 0, yhi = 1;
  if (c.y_from_zero) ylo = std::min(ylo, 0.0);
  yhi = std::max(yhi, c.y_max_at_least);
  if (xhi == xlo) xhi = xlo + 1;
  if (yhi == ylo) yhi = ylo + (ylo == 0 ? 1 : std::fabs(ylo));
  const Scale xs{xlo, xhi, static_cast<double>(x0 + kPad), static_cast<double>(x1 - kPad)};
  const Scale ys{ylo, yhi, static_cast<double>(y1 - kPad), static_cast<double>(y0 + kPad)};

  std::string out = header(c.id, c.title, c.width, c.height);
  out += y_axis(ys, nice_ticks(ylo, yhi, 5), x0, x1, c.y_label, 14);
  for (double t : nice_ticks(xlo, xhi, 7)) {
    out += fmt::format(
        "<text x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\" fill=\"#555555\">{}</text>\n", xs(t),
        y1 + 14, tick_label(t));
  }
  out += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" fill=\"#333333\">{}</text>\n",
                     (x0 + x1) / 2, c.height - 8, xml_escape(c.x_label));
  out += frame(c.frame_color, x0, y0, x1, y1);
  int legend_x = x1;
  for (auto it = c.series.rbegin(); it != c.series.rend(); ++it) {
    const int text_w = static_cast<int>(it->name.size()) * 7 + 28;
    legend_x -= text_w;
    out += fmt::format(
        "<rect x=\"{}\" y=\"{}\" width=\"12\" height=\"4\" fill=\"{}\"/><text x=\"{}\" y=\"{}\" "
        "fill=\"#333333\">{}</text>\n",
        legend_x, y0 - 10, it->color, legend_x + 15, y0 - 5, xml_escape(it->name));
  }
  for (const LineSeries& s : c.series) {
    std::string points;
    const size_t n = std::min(s.x.size(), s.y.size());
    for (size_t i = 0; i < n; ++i) points += fmt::format("{:.1f},{:.1f} ", xs(s.x[i]), ys(s.y[i]));
    out += fmt::format(
        "<polyline class=\"series\" data-series=\"{}\" fill=\"none\" stroke=\"{}\" "
        "stroke-width=\"2\" stroke-linejoin=\"round\" points=\"{}\"/>\n",
        xml_escape(s.name), s.color, points);
    if (n < kMarkerLimit) {
      for (size_t i = 0; i < n; ++i)
        out += fmt::format(
            "<circle class=\"marker\" cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3\" fill=\"{}\"/>\n",
            xs(s.x[i]), ys(s.y[i]), s.color);
    }
  }
  out += "</svg>\n";
  return out;
}

std::string render_bar_chart(const BarChart& c) {
  const int x0 = kLeft, x1 = c.width - kRight, y0 = kTop, y1 = c.height - kBottom;
  std::string out = header(c.id, c.title, c.width, c.height);
  out += frame(c.frame_color, x0, y0, x1, y1);
  const size_t groups = std::max<size_t>(c.groups.size(), 1);
  const double panel_w = static_cast<double>(x1 - x0) / static_cast<double>(groups);
  const size_t n_series = std::max<size_t>(c.series.size(), 1);
  for (size_t g = 0; g < c.groups.size(); ++g) {
    double top = 0;
    for (const BarSeries& s : c.series)
      if (g < s.values.size() && std::isfinite(s.values[g])) top = std::max(top, s.values[g]);
    if (top <= 0) top = 1;
    const std::vector<double> ticks = nice_ticks(0, top * 1.1, 4);
    const Scale ys{0, std::max(top * 1.1, ticks.back()), static_cast<double>(y1),
                   static_cast<double>(y0 + kPad)};
    const double px = x0 + panel_w * static_cast<double>(g);
    for (double t : ticks) {
      out += fmt::format(
          "<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#eeeeee\"/>"
          "<text x=\"{:.1f}\" y=\"{:.1f}\" fill=\"#555555\">{}</text>\n",
          px + 2, ys(t) + 0.5, px + panel_w - 2, ys(t) + 0.5, px + 3, ys(t) - 2, tick_label(t));
    }
    if (g > 0)
      out += fmt::format(
          "<line x1=\"{:.1f}\" y1=\"{}\" x2=\"{:.1f}\" y2=\"{}\" stroke=\"#cccccc\"/>\n", px, y0,
          px, y1);
    const double bar_w = panel_w * 0.6 / static_cast<double>(n_series);
    for (size_t s = 0; s < c.series.size(); ++s) {
      const double v = g < c.series[s].values.size() ? c.series[s].values[g] : 0;
      const double bx = px + panel_w * 0.2 + bar_w * static_cast<double>(s);
      const double by = ys(std::isfinite(v) ? v : 0);
      out += fmt::format(
          "<rect class=\"bar\" data-series=\"{}\" data-group=\"{}\" x=\"{:.1f}\" y=\"{:.1f}\" "
          "width=\"{:.1f}\" height=\"{:.1f}\" fill=\"{}\"><title>{}: {}</title></rect>\n",
          xml_escape(c.series[s].name), xml_escape(c.groups[g]), bx + 1, by, bar_w - 2,
          std::max(0.0, y1 - by), c.series[s].color, xml_escape(c.series[s].name), tick_label(v));
      out += fmt::format(
          "<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\" fill=\"#333333\">{}</text>\n",
          bx + bar_w / 2, by - 3, tick_label(v));
    }
    out += fmt::format(
        "<text x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\" fill=\"#333333\">{}</text>\n",
        px + panel_w / 2, y1 + 16, xml_escape(c.groups[g]));
  }
  int legend_x = x1;
  for (auto it = c.series.rbegin(); it != c.series.rend(); ++it) {
    legend_x -= static_cast<int>(it->name.size()) * 7 + 28;
    out += fmt::format(
        "<rect x=\"{}\" y=\"{}\" width=\"12\" height=\"8\" fill=\"{}\"/><text x=\"{}\" y=\"{}\" "
        "fill=\"#333333\">{}</text>\n",
        legend_x, y0 - 12, it->color, legend_x + 15, y0 - 4, xml_escape(it->name));
  }
  out += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" fill=\"#333333\">{}</text>\n",
                     (x0 + x1) / 2, c.height - 6, xml_escape(c.y_label));
  out += "</svg>\n";
  return out;
}

}  // namespace tessera::ab
