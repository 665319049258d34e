#include "ab/report_json.hpp"

#include <cmath>

#include "ab/ab_summary.hpp"
#include "ab/coupling_summary.hpp"

namespace tessera::ab {

namespace {

using Json = nlohmann::ordered_json;

Json to_json(const Distribution& d) {
  return Json{{"count", d.count}, {"mean", d.mean}, {"p50", d.p50}, {"p90", d.p90},
              {"p99", d.p99},     {"max", d.max},   {"min", d.min}};
}

Json to_json(const ArmDescription& a) {
  Json sampling = {{"temperature", a.sampling.temperature},
                   {"top_p", a.sampling.top_p},
                   {"top_k", a.sampling.top_k},
                   {"min_p", a.sampling.min_p},
                   {"repetition_penalty", a.sampling.repetition_penalty},
                   {"frequency_penalty", a.sampling.frequency_penalty},
                   {"presence_penalty", a.sampling.presence_penalty}};
  Json source = Json::object();
  for (const auto& [k, v] : a.sampling_source) source[k] = v;
  return Json{{"name", a.name},
              {"config", a.config_path},
              {"model_dir", a.model_dir},
              {"kv_cache", a.kv_plugin},
              {"kv_bytes_per_entry", a.kv_bytes_per_entry},
              {"attention", a.attention_plugin},
              {"sampler", a.sampler_plugin},
              {"sampler_options", a.sampler_options},
              {"sampling", sampling},
              {"sampling_source", source},
              {"repetition_guard", a.repetition_mode},
              {"synthetic_tokenizer", a.synthetic_tokenizer},
              {"tensor_parallel", a.tensor_parallel}};
}

Json to_json(const TeacherForcedSummary& s) {
  return Json{{"sequences", s.sequences},
              {"positions", s.positions},
              {"generated_positions", s.generated_positions},
              {"kl", to_json(s.kl)},
              {"kl_generated", to_json(s.kl_generated)},
              {"top1_agreement", s.top1_agreement},
              {"top1_disagreements", s.top1_disagreements},
              {"abs_dlogprob", to_json(s.abs_dlogprob)},
              {"max_abs_dlogit", to_json(s.max_abs_dlogit)}};
}

Json to_json(const ArmFreeRunning& s) {
  Json finish = Json::object();
  for (const auto& [k, v] : s.finish_reasons) finish[k] = v;
  return Json{{"runs", s.runs},
              {"output_tokens", to_json(s.output_tokens)},
              {"ttft_s", to_json(s.ttft_s)},
              {"tokens_per_s", to_json(s.tokens_per_s)},
              {"aggregate_tokens_per_s", s.aggregate_tokens_per_s},
              {"repetition_triggered", s.repetition_triggered},
              {"repetition_stops", s.repetition_stops},
              {"finish_reasons", finish}};
}

Json to_json(const FreeRunningSummary& s) {
  return Json{{"pairs", s.pairs},
              {"identical", s.identical},
              {"exact_match_rate", s.exact_match_rate},
              {"first_divergence", to_json(s.first_divergence)},
              {"a", to_json(s.a)},
              {"b", to_json(s.b)}};
}

Json to_json(const CouplingSummary& c) {
  return Json{{"at_risk", c.at_risk},
              {"diverged", c.diverged},
              {"observed_rate", c.observed_rate},
              {"mean_tv", c.mean_tv},
              {"expected_rate_bound", c.expected_rate_bound}};
}

Json to_json(const ArmRun& r) {
  return Json{{"tokens", r.tokens},
              {"text", r.text},
              {"finish_reason", r.finish_reason},
              {"repetition_hits", r.repetition_hits},
              {"ttft_s", r.ttft_s},
              {"decode_s", r.decode_s},
              {"tokens_per_s", r.tokens_per_s()}};
}

Json to_json(const ScoredSequence& s) {
  Json kl = Json::array(), agree = Json::array(), dlogprob = Json::array(), dlogit = Json::array(),
       top_a = Json::array(), top_b = Json::array(), tv = Json::array();
  for (const PositionDivergence& p : s.positions) {
    kl.push_back(p.kl);
    agree.push_back(p.top1_agree);
    dlogprob.push_back(p.abs_dlogprob >= 0 ? Json(p.abs_dlogprob) : Json(nullptr));
    dlogit.push_back(p.max_abs_dlogit);
    top_a.push_back(p.top1_a);
    top_b.push_back(p.top1_b);
    tv.push_back(p.tv);
  }
  return Json{{"prompt", s.prompt},
              {"seeds", s.seeds},
              {"prompt_tokens", s.prompt_tokens},
              {"continuation", s.continuation},
              {"kl", kl},
              {"top1_agree", agree},
              {"abs_dlogprob", dlogprob},
              {"max_abs_dlogit", dlogit},
              {"top1_a", top_a},
              {"top1_b", top_b},
              {"tv", tv}};
}

}  // namespace

Json report_to_json(const AbReport& report) {
  Json j;
  j["schema"] = "tessera.ab/1";
  j["options"] = {{"prompts", report.options.prompts_path},
                  {"max_tokens", report.options.max_tokens},
                  {"seeds", report.options.seeds},
                  {"seed_base", report.options.seed_base},
                  {"warmup", report.options.warmup}};
  j["arms"] = Json{{"a", to_json(report.arms[0])}, {"b", to_json(report.arms[1])}};
  j["shared_weights"] = report.shared_weights;
  j["path"] = report.path;
  Json diff = Json::array();
  for (const auto& d : report.differences)
    diff.push_back({{"key", d[0]}, {"a", d[1]}, {"b", d[2]}});
  j["differences"] = diff;
  j["wall_s"] = report.wall_s;

  j["teacher_forced"] = to_json(summarize_teacher_forced(report));
  const FreeRunningSummary free = summarize_free_running(report);
  j["free_running"] = to_json(free);
  const CouplingSummary coupling = summarize_coupling(report);
  j["coupling"] = to_json(coupling);

  Json prompts = Json::array();
  for (size_t i = 0; i < report.prompts.size(); ++i) {
    const PromptInfo& p = report.prompts[i];
    prompts.push_back({{"id", p.id},
                       {"kind", p.kind},
                       {"tokens", p.tokens},
                       {"teacher_forced", to_json(summarize_teacher_forced(report, i))},
                       {"free_running", to_json(summarize_free_running(report, i))}});
  }
  j["prompts"] = prompts;

  const PositionCurves curves = position_curves(report);
  j["curves"] = {{"kl_mean_by_position", curves.kl_mean},
                 {"kl_max_by_position", curves.kl_max},
                 {"top1_agreement_by_position", curves.top1_rate},
                 {"sequences_by_position", curves.count},
                 {"free_running_agreement_by_output_index", free.agreement},
                 {"tv_mean_by_output_index", coupling.tv_by_index},
                 {"coupling_bound_by_output_index", coupling.bound_by_index},
                 {"at_risk_by_output_index", coupling.at_risk_by_index},
                 {"diverged_by_output_index", coupling.diverged_by_index}};

  Json runs = Json::array();
  for (const RunPair& r : report.runs) {
    runs.push_back(
        {{"prompt", r.prompt},
         {"seed", r.seed},
         {"identical", r.identical},
         {"first_divergence", r.first_divergence >= 0 ? Json(r.first_divergence) : Json(nullptr)},
         {"a", to_json(r.a)},
         {"b", to_json(r.b)}});
  }
  j["runs"] = runs;
  Json sequences = Json::array();
  for (const ScoredSequence& s : report.sequences) sequences.push_back(to_json(s));
  j["sequences"] = sequences;
  return j;
}

}  // namespace tessera::ab
