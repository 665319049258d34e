#include "ab/report_html.hpp"

#include <fmt/format.h>

#include "ab/ab_summary.hpp"
#include "ab/coupling_summary.hpp"
#include "ab/svg_chart.hpp"

namespace tessera::ab {

namespace {

constexpr const char* kColorA = "#1f77b4";
constexpr const char* kColorB = "#ff7f0e";
constexpr const char* kColorMax = "#d62728";
constexpr const char* kColorAgree = "#2ca02c";
constexpr const char* kColorSame = "#9467bd";
constexpr const char* kColorBound = "#8c564b";
constexpr const char* kColorParted = "#e377c2";

constexpr const char* kStyle = R"(
body { font-family: sans-serif; font-size: 13px; margin: 16px; color: #222; max-width: 1000px; }
h1 { font-size: 20px; margin: 0 0 8px 0; } h2 { font-size: 15px; margin: 18px 0 6px 0; }
table { border-collapse: collapse; margin: 4px 0; }
td, th { border: 1px solid #ddd; padding: 2px 8px; text-align: right; }
th { background: #f4f4f4; } td.l, th.l { text-align: left; }
.plots { display: flex; flex-wrap: wrap; gap: 8px; }
.headline { font-size: 14px; margin: 6px 0; }
pre { white-space: pre-wrap; background: #f8f8f8; padding: 4px; margin: 2px 0; }
)";

std::string esc(const std::string& s) { return xml_escape(s); }

std::string sci(double v) { return fmt::format("{:.3e}", v); }
std::string pct(double v) { return fmt::format("{:.2f}%", 100 * v); }

std::string dist_row(const std::string& name, const Distribution& d) {
  return fmt::format(
      "<tr><td class=\"l\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>"
      "<td>{}</td></tr>\n",
      esc(name), d.count, sci(d.mean), sci(d.p50), sci(d.p90), sci(d.p99), sci(d.max));
}

std::vector<double> indices(size_t n) {
  std::vector<double> x(n);
  for (size_t i = 0; i < n; ++i) x[i] = static_cast<double>(i);
  return x;
}

std::string plots(const AbReport& r, const FreeRunningSummary& fr) {
  const PositionCurves curves = position_curves(r);
  const std::vector<double> x = indices(curves.kl_mean.size());
  LineChart kl;
  kl.id = "plot-kl";
  kl.title = "KL(A||B) by position (teacher-forced)";
  kl.x_label = "position in sequence (prompt + A's output)";
  kl.y_label = "KL, nats";
  kl.frame_color = "#b4b4b0";
  // max first, so the mean is drawn on top of it.
  kl.series = {{"max", kColorMax, x, curves.kl_max}, {"mean", kColorA, x, curves.kl_mean}};

  LineChart agree;
  agree.id = "plot-agreement";
  agree.title = "Top-1 agreement by position (teacher-forced)";
  agree.x_label = "position in sequence";
  agree.y_label = "fraction agreeing";
  agree.frame_color = "#b4b4b1";
  agree.y_max_at_least = 1;
  agree.series = {{"top-1 agreement", kColorAgree, x, curves.top1_rate}};

  LineChart same;
  same.id = "plot-free-running";
  same.title = "Free-running: pairs still identical";
  same.x_label = "output token index";
  same.y_label = "fraction of pairs";
  same.frame_color = "#b4b4b2";
  same.y_max_at_least = 1;
  same.series = {{"identical so far", kColorSame, indices(fr.agreement.size()), fr.agreement}};

  // Cumulative over output indices: the pairs the coupled draw may part (the sum of
  // 2 TV / (1 + TV) over the decisions at risk) against the pairs that parted.
  const CouplingSummary c = summarize_coupling(r);
  std::vector<double> may_part(c.bound_by_index.size()), parted(c.bound_by_index.size());
  double sum_bound = 0, sum_parted = 0;
  for (size_t t = 0; t < c.bound_by_index.size(); ++t) {
    sum_bound += c.bound_by_index[t] * static_cast<double>(c.at_risk_by_index[t]);
    sum_parted += static_cast<double>(c.diverged_by_index[t]);
    may_part[t] = sum_bound;
    parted[t] = sum_parted;
  }
  LineChart coupling;
  coupling.id = "plot-coupling";
  coupling.title = "Coupling: pairs parted vs what the TV allows";
  coupling.x_label = "output token index";
  coupling.y_label = "pairs, cumulative";
  coupling.frame_color = "#b4b4b5";
  coupling.y_max_at_least = 1;
  const std::vector<double> xc = indices(parted.size());
  coupling.series = {{"bound: sum of 2 TV / (1 + TV)", kColorBound, xc, may_part},
                     {"parted", kColorParted, xc, parted}};

  BarChart speed;
  speed.id = "plot-speed";
  speed.title = "Speed per arm";
  speed.y_label = "decode: all tokens / all decode time; TTFT: median prompt prefill";
  speed.frame_color = "#b4b4b3";
  speed.groups = {"decode tokens/s", "TTFT ms (p50)"};
  speed.series = {{"A", kColorA, {fr.a.aggregate_tokens_per_s, 1e3 * fr.a.ttft_s.p50}},
                  {"B", kColorB, {fr.b.aggregate_tokens_per_s, 1e3 * fr.b.ttft_s.p50}}};
  return "<div class=\"plots\">\n" + render_line_chart(kl) + render_line_chart(agree) +
         render_line_chart(same) + render_line_chart(coupling) + render_bar_chart(speed) +
         "</div>\n";
}

std::string arms_table(const AbReport& r) {
  std::string out =
      "<table><tr><th class=\"l\"></th><th class=\"l\">A</th><th class=\"l\">B</th></tr>\n";
  auto row = [&](const std::string& k, const std::string& a, const std::string& b) {
    out += fmt::format(
        "<tr><td class=\"l\">{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td></tr>\n", esc(k),
        esc(a), esc(b));
  };
  const ArmDescription& a = r.arms[0];
  const ArmDescription& b = r.arms[1];
  row("config", a.config_path, b.config_path);
  row("model", a.model_dir, b.model_dir);
  row("kv cache", fmt::format("{} ({} B/entry)", a.kv_plugin, a.kv_bytes_per_entry),
      fmt::format("{} ({} B/entry)", b.kv_plugin, b.kv_bytes_per_entry));
  row("attention", a.attention_plugin, b.attention_plugin);
  row("sampler", a.sampler_plugin, b.sampler_plugin);
  row("temperature / top_p / top_k",
      fmt::format("{} / {} / {}", a.sampling.temperature, a.sampling.top_p, a.sampling.top_k),
      fmt::format("{} / {} / {}", b.sampling.temperature, b.sampling.top_p, b.sampling.top_k));
  row("tensor parallel", std::to_string(a.tensor_parallel), std::to_string(b.tensor_parallel));
  row("repetition guard", a.repetition_mode, b.repetition_mode);
  out += "</table>\n";
  if (r.differences.empty()) {
    out += "<p>The two configurations do not differ.</p>\n";
  } else {
    out +=
        "<table><tr><th class=\"l\">differs</th><th class=\"l\">A</th><th "
        "class=\"l\">B</th></tr>\n";
    for (const auto& d : r.differences) row(d[0], d[1], d[2]);
    out += "</table>\n";
  }
  out += fmt::format(
      "<p>Weights shared: {}. Path: {}. {} prompts x {} seeds, at most {} tokens each. Wall "
      "time {:.1f} s.</p>\n",
      r.shared_weights ? "yes" : "no",
      r.path == "engine" ? "serving engine + executors (an arm is tensor-parallel)"
                         : "runtime (generate + one-prefill scoring)",
      r.prompts.size(), r.options.seeds, r.options.max_tokens, r.wall_s);
  return out;
}

std::string free_running_table(const FreeRunningSummary& fr) {
  std::string out = "<table><tr><th class=\"l\"></th><th>A</th><th>B</th></tr>\n";
  auto row = [&](const std::string& k, const std::string& a, const std::string& b) {
    out += fmt::format("<tr><td class=\"l\">{}</td><td>{}</td><td>{}</td></tr>\n", esc(k), esc(a),
                       esc(b));
  };
  auto finish = [](const ArmFreeRunning& a) {
    std::string s;
    for (const auto& [k, v] : a.finish_reasons)
      s += fmt::format("{}{} {}", s.empty() ? "" : ", ", k, v);
    return s;
  };
  row("runs", std::to_string(fr.a.runs), std::to_string(fr.b.runs));
  row("output tokens mean / p50 / max",
      fmt::format("{:.1f} / {:.0f} / {:.0f}", fr.a.output_tokens.mean, fr.a.output_tokens.p50,
                  fr.a.output_tokens.max),
      fmt::format("{:.1f} / {:.0f} / {:.0f}", fr.b.output_tokens.mean, fr.b.output_tokens.p50,
                  fr.b.output_tokens.max));
  row("finish reasons", finish(fr.a), finish(fr.b));
  row("repetition guard: runs hit / stopped",
      fmt::format("{} / {}", fr.a.repetition_triggered, fr.a.repetition_stops),
      fmt::format("{} / {}", fr.b.repetition_triggered, fr.b.repetition_stops));
  row("decode tokens/s (aggregate)", fmt::format("{:.1f}", fr.a.aggregate_tokens_per_s),
      fmt::format("{:.1f}", fr.b.aggregate_tokens_per_s));
  row("decode tokens/s per run p50 / p90",
      fmt::format("{:.1f} / {:.1f}", fr.a.tokens_per_s.p50, fr.a.tokens_per_s.p90),
      fmt::format("{:.1f} / {:.1f}", fr.b.tokens_per_s.p50, fr.b.tokens_per_s.p90));
  row("TTFT ms p50 / p90 / max",
      fmt::format("{:.2f} / {:.2f} / {:.2f}", 1e3 * fr.a.ttft_s.p50, 1e3 * fr.a.ttft_s.p90,
                  1e3 * fr.a.ttft_s.max),
      fmt::format("{:.2f} / {:.2f} / {:.2f}", 1e3 * fr.b.ttft_s.p50, 1e3 * fr.b.ttft_s.p90,
                  1e3 * fr.b.ttft_s.max));
  out += "</table>\n";
  return out;
}

std::string samples(const AbReport& r) {
  std::string out;
  auto clip = [](const std::string& s) { return s.size() > 600 ? s.substr(0, 600) + " ..." : s; };
  for (const RunPair& p : r.runs) {
    out += fmt::format(
        "<details><summary>prompt {} seed {}: {}</summary><p>A ({}, {} tokens):</p><pre>{}</pre>"
        "<p>B ({}, {} tokens):</p><pre>{}</pre></details>\n",
        esc(r.prompts[p.prompt].id), p.seed,
        p.identical ? "identical" : fmt::format("differ from output token {}", p.first_divergence),
        p.a.finish_reason, p.a.tokens.size(), esc(clip(p.a.text)), p.b.finish_reason,
        p.b.tokens.size(), esc(clip(p.b.text)));
  }
  return out;
}

}  // namespace

std::string report_to_html(const AbReport& r) {
  const TeacherForcedSummary tf = summarize_teacher_forced(r);
  const FreeRunningSummary fr = summarize_free_running(r);
  std::string out = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n";
  out += "<title>Tessera A/B report</title>\n<style>" + std::string(kStyle) +
         "</style></head>\n<body>\n";
  out += "<h1>Tessera A/B report</h1>\n";
  out += fmt::format(
      "<p class=\"headline\">Teacher-forced: mean KL(A||B) <b>{}</b> nats, max {}; top-1 "
      "agreement <b>{}</b> over {} positions. Free-running: <b>{}</b> of {} pairs identical; "
      "decode {:.1f} vs {:.1f} tokens/s.</p>\n",
      sci(tf.kl.mean), sci(tf.kl.max), pct(tf.top1_agreement), tf.positions, fr.identical, fr.pairs,
      fr.a.aggregate_tokens_per_s, fr.b.aggregate_tokens_per_s);
  out += plots(r, fr);
  out += "<h2>Arms</h2>\n" + arms_table(r);
  out += fmt::format(
      "<h2>Teacher-forced</h2>\n<p>Both arms score the same sequences (each prompt followed by "
      "arm A's output): {} sequences, {} positions, {} of them predicting output tokens. Top-1 "
      "agreement {} ({} positions differ).</p>\n",
      tf.sequences, tf.positions, tf.generated_positions, pct(tf.top1_agreement),
      tf.top1_disagreements);
  out +=
      "<table><tr><th class=\"l\">metric</th><th>n</th><th>mean</th><th>p50</th><th>p90</th>"
      "<th>p99</th><th>max</th></tr>\n";
  out += dist_row("KL(A||B), nats", tf.kl);
  out += dist_row("KL(A||B), output positions", tf.kl_generated);
  out += dist_row("|Δ logprob| of the next token", tf.abs_dlogprob);
  out += dist_row("max |Δ logit| per position", tf.max_abs_dlogit);
  out += "</table>\n";
  out += fmt::format(
      "<h2>Free-running</h2>\n<p>Both arms generate with the same seeds: {} of {} pairs identical "
      "({}).{}</p>\n",
      fr.identical, fr.pairs, pct(fr.exact_match_rate),
      fr.first_divergence.count > 0
          ? fmt::format(" First divergence at output token p50 {:.1f}, min {:.0f}, max {:.0f}.",
                        fr.first_divergence.p50, fr.first_divergence.min, fr.first_divergence.max)
          : std::string());
  out += free_running_table(fr);
  out +=
      "<h2>Per prompt</h2>\n<table><tr><th class=\"l\">id</th><th>tokens</th><th>mean KL</th>"
      "<th>p90 KL</th><th>max KL</th><th>top-1</th><th>identical</th><th>first "
      "divergence</th></tr>\n";
  for (size_t i = 0; i < r.prompts.size(); ++i) {
    const TeacherForcedSummary p = summarize_teacher_forced(r, i);
    const FreeRunningSummary f = summarize_free_running(r, i);
    out += fmt::format(
        "<tr><td class=\"l\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>"
        "<td>{}/{}</td><td>{}</td></tr>\n",
        esc(r.prompts[i].id), r.prompts[i].tokens, sci(p.kl.mean), sci(p.kl.p90), sci(p.kl.max),
        pct(p.top1_agreement), f.identical, f.pairs,
        f.first_divergence.count > 0 ? fmt::format("{:.0f}", f.first_divergence.min) : "-");
  }
  out += "</table>\n<h2>Outputs</h2>\n" + samples(r);
  out += "</body></html>\n";
  return out;
}

}  // namespace tessera::ab
