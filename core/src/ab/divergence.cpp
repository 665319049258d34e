#include "ab/divergence.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "util/check.hpp"

namespace tessera::ab {

namespace {

// log_softmax in double: x_i - (max + log sum exp(x - max)).
void log_softmax(std::span<const float> logits, std::vector<double>& out) {
  out.resize(logits.size());
  double top = -INFINITY;
  for (float v : logits) top = std::max(top, static_cast<double>(v));
  double sum = 0;
  for (float v : logits) sum += std::exp(static_cast<double>(v) - top);
  const double log_z = top + std::log(sum);
  for (size_t i = 0; i < logits.size(); ++i) out[i] = static_cast<double>(logits[i]) - log_z;
}

int32_t argmax(std::span<const float> v) {
  return static_cast<int32_t>(std::max_element(v.begin(), v.end()) - v.begin());
}

}  // namespace

PositionDivergence compare_positions(std::span<const float> a, std::span<const float> b,
                                     int32_t chosen, const SamplingShape& shape_a,
                                     const SamplingShape& shape_b) {
  TS_CHECK(a.size() == b.size() && !a.empty(),
           "A/B: logit rows of different sizes ({} vs {}): the arms' vocabularies differ", a.size(),
           b.size());
  TS_CHECK(chosen < static_cast<int32_t>(a.size()), "A/B: chosen token {} outside vocab {}", chosen,
           a.size());
  thread_local std::vector<double> lp, lq;
  log_softmax(a, lp);
  log_softmax(b, lq);
  PositionDivergence d;
  double kl = 0, max_abs = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    kl += std::exp(lp[i]) * (lp[i] - lq[i]);
    max_abs = std::max(max_abs, std::fabs(static_cast<double>(a[i]) - static_cast<double>(b[i])));
  }
  // KL is non-negative; summation rounding can leave -1e-17 for rows that differ by an ulp.
  d.kl = std::max(kl, 0.0);
  d.max_abs_dlogit = max_abs;
  d.top1_a = argmax(a);
  d.top1_b = argmax(b);
  d.top1_agree = d.top1_a == d.top1_b;
  if (chosen >= 0) d.abs_dlogprob = std::fabs(lp[chosen] - lq[chosen]);
  thread_local std::vector<double> sp, sq;
  sampling_distribution(a, shape_a, sp);
  sampling_distribution(b, shape_b, sq);
  d.tv = total_variation(sp, sq);
  return d;
}

}  // namespace tessera::ab
