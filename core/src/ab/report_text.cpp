#include "ab/report_text.hpp"

#include <fmt/format.h>

#include "ab/ab_summary.hpp"
#include "ab/coupling_summary.hpp"

namespace tessera::ab {

namespace {

std::string dist_row(const std::string& name, const Distribution& d, const char* fmtspec) {
  auto f = [&](double v) { return fmt::format(fmt::runtime(fmtspec), v); };
  return fmt::format("  {:<22}{:>11}{:>11}{:>11}{:>11}{:>11}\n", name, f(d.mean), f(d.p50),
                     f(d.p90), f(d.p99), f(d.max));
}

std::string finish_text(const ArmFreeRunning& a) {
  std::string out;
  for (const auto& [reason, n] : a.finish_reasons)
    out += fmt::format("{}{} {}", out.empty() ? "" : ", ", reason, n);
  return out;
}

std::string percent(double v) { return fmt::format("{:.2f}%", 100 * v); }

}  // namespace

std::string report_to_text(const AbReport& r) {
  const ArmDescription& a = r.arms[0];
  const ArmDescription& b = r.arms[1];
  std::string out;
  out += fmt::format("A/B comparison\n  A: {}  (kv {}, attention {}, sampler {}, temperature {})\n",
                     a.config_path, a.kv_plugin, a.attention_plugin, a.sampler_plugin,
                     a.sampling.temperature);
  out += fmt::format("  B: {}  (kv {}, attention {}, sampler {}, temperature {})\n", b.config_path,
                     b.kv_plugin, b.attention_plugin, b.sampler_plugin, b.sampling.temperature);
  if (r.differences.empty()) out += "  the two configurations do not differ\n";
  for (const auto& d : r.differences)
    out += fmt::format("  differs: {:<34} A = {:<16} B = {}\n", d[0], d[1], d[2]);
  out += fmt::format(
      "  weights shared: {}   path: {}   prompts: {}   seeds per prompt: {}   max tokens: {}   "
      "wall: {:.1f} s\n\n",
      r.shared_weights ? "yes" : "no", r.path, r.prompts.size(), r.options.seeds,
      r.options.max_tokens, r.wall_s);

  const TeacherForcedSummary tf = summarize_teacher_forced(r);
  out += fmt::format(
      "Teacher-forced: both arms score prompt + A's output ({} sequences, {} positions, {} "
      "predicting output)\n",
      tf.sequences, tf.positions, tf.generated_positions);
  out += fmt::format("  {:<22}{:>11}{:>11}{:>11}{:>11}{:>11}\n", "metric", "mean", "p50", "p90",
                     "p99", "max");
  out += dist_row("KL(A||B) nats", tf.kl, "{:.3e}");
  out += dist_row("KL, output positions", tf.kl_generated, "{:.3e}");
  out += dist_row("|d logprob| chosen", tf.abs_dlogprob, "{:.3e}");
  out += dist_row("max |d logit|", tf.max_abs_dlogit, "{:.3e}");
  out += fmt::format("  {:<22}{:>11}   ({} of {} positions differ)\n\n", "top-1 agreement",
                     percent(tf.top1_agreement), tf.top1_disagreements, tf.positions);

  const FreeRunningSummary fr = summarize_free_running(r);
  out += fmt::format("Free-running: both arms generate with the same seeds ({} pairs)\n", fr.pairs);
  out += fmt::format("  exact match            {} of {} ({})", fr.identical, fr.pairs,
                     percent(fr.exact_match_rate));
  if (fr.first_divergence.count > 0)
    out += fmt::format("; first divergence at output token p50 {:.1f}, min {:.0f}, max {:.0f}",
                       fr.first_divergence.p50, fr.first_divergence.min, fr.first_divergence.max);
  out += "\n";
  const CouplingSummary c = summarize_coupling(r);
  out += fmt::format(
      "  coupling               {} of {} decisions from identical contexts parted ({}); the "
      "teacher-forced TV there\n                         (mean {:.3e}) lets a coupled draw part "
      "at most {} (2 TV / (1 + TV))\n",
      c.diverged, c.at_risk, percent(c.observed_rate), c.mean_tv, percent(c.expected_rate_bound));
  out +=
      fmt::format("  sampler options        A {}   B {}\n", a.sampler_options, b.sampler_options);
  out += fmt::format("  {:<22}{:>22}{:>22}\n", "", "A", "B");
  auto row = [&](const std::string& name, const std::string& x, const std::string& y) {
    out += fmt::format("  {:<22}{:>22}{:>22}\n", name, x, y);
  };
  row("output tokens p50/max",
      fmt::format("{:.0f}/{:.0f}", fr.a.output_tokens.p50, fr.a.output_tokens.max),
      fmt::format("{:.0f}/{:.0f}", fr.b.output_tokens.p50, fr.b.output_tokens.max));
  row("finish reasons", finish_text(fr.a), finish_text(fr.b));
  row("repetition guard",
      fmt::format("{} hit, {} stop", fr.a.repetition_triggered, fr.a.repetition_stops),
      fmt::format("{} hit, {} stop", fr.b.repetition_triggered, fr.b.repetition_stops));
  row("decode tokens/s", fmt::format("{:.1f}", fr.a.aggregate_tokens_per_s),
      fmt::format("{:.1f}", fr.b.aggregate_tokens_per_s));
  row("TTFT p50 / p90 ms",
      fmt::format("{:.1f} / {:.1f}", 1e3 * fr.a.ttft_s.p50, 1e3 * fr.a.ttft_s.p90),
      fmt::format("{:.1f} / {:.1f}", 1e3 * fr.b.ttft_s.p50, 1e3 * fr.b.ttft_s.p90));
  out += "\n";

  out += fmt::format("Per prompt\n  {:<20}{:>7}{:>12}{:>12}{:>10}{:>10}{:>12}\n", "id", "tokens",
                     "mean KL", "max KL", "top-1", "exact", "first div");
  for (size_t i = 0; i < r.prompts.size(); ++i) {
    const TeacherForcedSummary p = summarize_teacher_forced(r, i);
    const FreeRunningSummary f = summarize_free_running(r, i);
    std::string id = r.prompts[i].id;
    if (id.size() > 19) id = id.substr(0, 18) + "~";
    out += fmt::format("  {:<20}{:>7}{:>12.3e}{:>12.3e}{:>10}{:>10}{:>12}\n", id,
                       r.prompts[i].tokens, p.kl.mean, p.kl.max, percent(p.top1_agreement),
                       fmt::format("{}/{}", f.identical, f.pairs),
                       f.first_divergence.count > 0 ? fmt::format("{:.0f}", f.first_divergence.min)
                                                    : std::string("-"));
  }
  return out;
}

}  // namespace tessera::ab
