// The A/B report writers on a hand-made report (no model): the JSON parses and carries the
// summaries computed from the runs; the HTML is self-contained (no script, no external URL),
// escapes what it prints, and draws every plot with the expected SVG elements; the terminal
// table names every section; chart helpers (ticks, escaping).
#include "ab/ab_report.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <regex>
#include <string>

#include "ab/ab_summary.hpp"
#include "ab/report_html.hpp"
#include "ab/report_json.hpp"
#include "ab/report_text.hpp"
#include "ab/svg_chart.hpp"

namespace tessera::ab {
namespace {

size_t count(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

PositionDivergence pos(double kl, bool agree, double dlogprob, double dlogit) {
  PositionDivergence p;
  p.kl = kl;
  p.top1_agree = agree;
  p.abs_dlogprob = dlogprob;
  p.max_abs_dlogit = dlogit;
  return p;
}

AbReport sample_report() {
  AbReport r;
  r.options.max_tokens = 3;
  r.options.seeds = 2;
  r.arms[0].name = "A";
  r.arms[0].kv_plugin = "bf16";
  r.arms[1].name = "B";
  r.arms[1].kv_plugin = "fp8";
  r.differences = {{"kv_cache.plugin", "bf16", "fp8"}};
  r.shared_weights = true;
  r.prompts = {{"<script>alert(1)</script>", "token_ids", 2}, {"p & q", "prompt", 2}};
  auto run = [](std::vector<int32_t> tokens, const char* finish, double ttft, double decode) {
    ArmRun a;
    a.tokens = std::move(tokens);
    a.finish_reason = finish;
    a.ttft_s = ttft;
    a.decode_s = decode;
    a.text = "x < y";
    return a;
  };
  RunPair p0{0,    0, run({5, 6, 7}, "length", 0.01, 0.003), run({5, 6, 7}, "length", 0.02, 0.006),
             true, -1};
  RunPair p1{0,     1, run({5, 9, 7}, "length", 0.01, 0.003), run({5, 6}, "stop", 0.02, 0.004),
             false, 1};
  RunPair p2{1,     0, run({8}, "repetition", 0.01, 0.001), run({3, 3}, "length", 0.02, 0.002),
             false, 0};
  p2.a.repetition_hits = 1;
  RunPair p3{1, 1, run({8}, "stop", 0.01, 0.001), run({8}, "stop", 0.02, 0.002), true, -1};
  r.runs = {p0, p1, p2, p3};
  // Sequences: prompt 0 + {5,6,7} (2 + 3 rows), prompt 1 + {8} (2 + 1 rows).
  ScoredSequence s0{0,
                    {0},
                    2,
                    {5, 6, 7},
                    {pos(0.0, true, 0.0, 0.0), pos(0.1, true, 0.2, 0.5), pos(0.3, false, 0.4, 1.5),
                     pos(0.0, true, 0.0, 0.1), pos(0.2, true, -1, 0.3)}};
  ScoredSequence s1{
      1,
      {0, 1},
      2,
      {8},
      {pos(0.05, true, 0.1, 0.2), pos(0.0, true, 0.0, 0.0), pos(0.4, false, -1, 2.0)}};
  r.sequences = {s0, s1};
  return r;
}

TEST(AbReportJson, ParsesAndCarriesTheSummaries) {
  const AbReport r = sample_report();
  const std::string text = report_to_json(r).dump(2);
  const nlohmann::json j = nlohmann::json::parse(text);
  // Coupling: p0 3 decisions at risk (length), p1's output unscored, p2 1 (parted at 0), p3 2
  // (its token and the stop).
  EXPECT_EQ(j["coupling"]["at_risk"], 6);
  EXPECT_EQ(j["coupling"]["diverged"], 1);
  EXPECT_EQ(j["curves"]["at_risk_by_output_index"], nlohmann::json({3, 2, 1}));
  EXPECT_EQ(j["curves"]["diverged_by_output_index"], nlohmann::json({1, 0, 0}));
  EXPECT_EQ(j["schema"], "tessera.ab/1");
  EXPECT_EQ(j["arms"]["b"]["kv_cache"], "fp8");
  EXPECT_EQ(j["differences"][0]["key"], "kv_cache.plugin");
  const auto& tf = j["teacher_forced"];
  EXPECT_EQ(tf["positions"], 8);
  EXPECT_EQ(tf["sequences"], 2);
  EXPECT_NEAR(tf["kl"]["mean"].get<double>(), (0.1 + 0.3 + 0.2 + 0.05 + 0.4) / 8, 1e-15);
  EXPECT_DOUBLE_EQ(tf["kl"]["max"].get<double>(), 0.4);
  EXPECT_EQ(tf["top1_disagreements"], 2);
  EXPECT_DOUBLE_EQ(tf["top1_agreement"].get<double>(), 0.75);
  EXPECT_EQ(tf["abs_dlogprob"]["count"], 6);  // the two last rows have no next token
  // Rows predicting output: from row prompt_tokens - 1 on (4 of s0, 2 of s1).
  EXPECT_EQ(tf["generated_positions"], 6);
  const auto& fr = j["free_running"];
  EXPECT_EQ(fr["pairs"], 4);
  EXPECT_EQ(fr["identical"], 2);
  EXPECT_DOUBLE_EQ(fr["exact_match_rate"].get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(fr["first_divergence"]["min"].get<double>(), 0);
  EXPECT_DOUBLE_EQ(fr["first_divergence"]["max"].get<double>(), 1);
  EXPECT_EQ(fr["a"]["repetition_triggered"], 1);
  EXPECT_EQ(fr["a"]["repetition_stops"], 1);
  EXPECT_EQ(fr["b"]["finish_reasons"]["stop"], 2);
  // 8 tokens in 0.008 s for A.
  EXPECT_NEAR(fr["a"]["aggregate_tokens_per_s"].get<double>(), 1000.0, 1e-9);
  EXPECT_EQ(j["prompts"].size(), 2u);
  EXPECT_EQ(j["prompts"][1]["free_running"]["pairs"], 2);
  const auto& curves = j["curves"];
  ASSERT_EQ(curves["kl_mean_by_position"].size(), 5u);
  EXPECT_NEAR(curves["kl_mean_by_position"][1].get<double>(), 0.05, 1e-15);  // (0.1 + 0) / 2
  EXPECT_DOUBLE_EQ(curves["kl_max_by_position"][2].get<double>(), 0.4);
  EXPECT_EQ(curves["sequences_by_position"][4], 1);
  // Free-running agreement: 2 identical + the pair diverging at 1 survive index 0.
  ASSERT_EQ(curves["free_running_agreement_by_output_index"].size(), 3u);
  EXPECT_DOUBLE_EQ(curves["free_running_agreement_by_output_index"][0].get<double>(), 0.75);
  EXPECT_DOUBLE_EQ(curves["free_running_agreement_by_output_index"][1].get<double>(), 0.5);
  EXPECT_EQ(j["runs"].size(), 4u);
  EXPECT_TRUE(j["runs"][0]["first_divergence"].is_null());
  EXPECT_TRUE(j["sequences"][0]["abs_dlogprob"][4].is_null());
}

TEST(AbReportHtml, SelfContainedEscapedAndEveryPlotDrawn) {
  const std::string html = report_to_html(sample_report());
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_EQ(count(html, "<script"), 0u);  // the prompt id is escaped, and we ship no script
  EXPECT_NE(html.find("&lt;script&gt;alert(1)&lt;/script&gt;"), std::string::npos);
  EXPECT_NE(html.find("p &amp; q"), std::string::npos);
  EXPECT_EQ(count(html, "http://") - count(html, "http://www.w3.org/2000/svg"), 0u);
  EXPECT_EQ(count(html, "https://"), 0u);
  EXPECT_EQ(count(html, "<svg class=\"plot\""), static_cast<size_t>(kHtmlPlotCount));
  EXPECT_EQ(count(html, "<rect class=\"frame\""), static_cast<size_t>(kHtmlPlotCount));
  // KL: mean + max; agreement: 1; free-running: 1; coupling: bound + parted. Speed: 2 groups x 2
  // arms.
  EXPECT_EQ(count(html, "<polyline class=\"series\""), 6u);
  EXPECT_EQ(count(html, "<rect class=\"bar\""), 4u);
  // Every polyline has as many points as its curve.
  const std::regex poly("<polyline[^>]*points=\"([^\"]*)\"");
  std::vector<size_t> points;
  for (auto it = std::sregex_iterator(html.begin(), html.end(), poly); it != std::sregex_iterator();
       ++it)
    points.push_back(count((*it)[1].str(), ","));
  // Coupling: output indices 0..2 (p0's three tokens at risk; p1's output was not scored).
  EXPECT_EQ(points, (std::vector<size_t>{5, 5, 5, 3, 3, 3}));
}

TEST(AbReportText, NamesEverySection) {
  const std::string text = report_to_text(sample_report());
  for (const char* needle :
       {"A/B comparison", "kv_cache.plugin", "Teacher-forced", "KL(A||B)", "top-1 agreement",
        "75.00%", "Free-running", "exact match", "2 of 4", "decode tokens/s", "TTFT", "Per prompt"})
    EXPECT_NE(text.find(needle), std::string::npos) << needle;
}

TEST(AbSvgChart, NiceTicksAndEscaping) {
  EXPECT_EQ(nice_ticks(0, 1, 5), (std::vector<double>{0, 0.5, 1}));  // step 0.25 -> 0.5
  EXPECT_EQ(nice_ticks(0, 100, 6), (std::vector<double>{0, 20, 40, 60, 80, 100}));
  const auto t = nice_ticks(0, 7.3e-3, 5);
  ASSERT_FALSE(t.empty());
  EXPECT_EQ(t.front(), 0);
  EXPECT_LE(t.back(), 7.3e-3);
  EXPECT_EQ(xml_escape("a<b>&\"'"), "a&lt;b&gt;&amp;&quot;&#39;");
  LineChart c;
  c.id = "one";
  c.series = {{"only", "#123456", {0}, {0.5}}};
  const std::string svg = render_line_chart(c);
  EXPECT_EQ(count(svg, "<circle class=\"marker\""), 1u);  // a single point is still visible
}

}  // namespace
}  // namespace tessera::ab
