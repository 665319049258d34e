// The A/B arithmetic on hand-made numbers: KL(A||B) against closed forms, top-1 ties, the
// chosen-token logprob difference, max |dlogit|, percentiles (numpy's linear rule), first
// divergence of two generations.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "ab/ab_report.hpp"
#include "ab/divergence.hpp"
#include "comparison/distribution.hpp"
#include "util/check.hpp"

namespace tessera::ab {
namespace {

TEST(AbDivergence, IdenticalRowsGiveExactlyZero) {
  const std::vector<float> a = {1.5f, -2.0f, 0.25f, 7.0f, 7.0f, -30.0f};
  const PositionDivergence d = compare_positions(a, a, 2);
  EXPECT_EQ(d.kl, 0.0);  // exactly, not approximately
  EXPECT_EQ(d.abs_dlogprob, 0.0);
  EXPECT_EQ(d.max_abs_dlogit, 0.0);
  EXPECT_TRUE(d.top1_agree);
  EXPECT_EQ(d.top1_a, 3);  // tie 7.0 / 7.0: the lowest id, as the sampler's greedy path
}

TEST(AbDivergence, ShiftedLogitsAreTheSameDistribution) {
  // log_softmax is shift-invariant: KL and dlogprob vanish (to rounding), |dlogit| is the shift.
  const std::vector<float> a = {0.5f, 1.0f, -1.0f, 2.0f};
  std::vector<float> b = a;
  for (float& v : b) v += 3.0f;
  const PositionDivergence d = compare_positions(a, b, 1);
  EXPECT_NEAR(d.kl, 0.0, 1e-15);
  EXPECT_NEAR(d.abs_dlogprob, 0.0, 1e-12);
  EXPECT_DOUBLE_EQ(d.max_abs_dlogit, 3.0);
}

TEST(AbDivergence, TwoTokenKlMatchesClosedForm) {
  // p = softmax(0, x) = (1 - s, s), q = softmax(0, y): KL = sum p log(p/q).
  const double x = 1.3, y = -0.4;
  const std::vector<float> a = {0.0f, static_cast<float>(x)};
  const std::vector<float> b = {0.0f, static_cast<float>(y)};
  const double xs = static_cast<float>(x), ys = static_cast<float>(y);
  const double p1 = 1 / (1 + std::exp(-xs)), q1 = 1 / (1 + std::exp(-ys));
  const double p0 = 1 - p1, q0 = 1 - q1;
  const double kl = p0 * std::log(p0 / q0) + p1 * std::log(p1 / q1);
  const PositionDivergence d = compare_positions(a, b, 0);
  EXPECT_NEAR(d.kl, kl, 1e-14);
  EXPECT_GT(d.kl, 0.0);
  EXPECT_NEAR(d.abs_dlogprob, std::fabs(std::log(p0) - std::log(q0)), 1e-14);
  EXPECT_FALSE(d.top1_agree);  // argmax 1 vs 0
  EXPECT_EQ(d.top1_a, 1);
  EXPECT_EQ(d.top1_b, 0);
  EXPECT_NEAR(d.max_abs_dlogit, xs - ys, 1e-6);
}

TEST(AbDivergence, KlIsDirectional) {
  const std::vector<float> a = {3.0f, 0.0f, 0.0f};
  const std::vector<float> b = {0.0f, 0.0f, 0.0f};
  const double ab = compare_positions(a, b, -1).kl;
  const double ba = compare_positions(b, a, -1).kl;
  // Closed forms: p = (e^3, 1, 1) / (e^3 + 2), q uniform.
  const double z = std::exp(3.0) + 2;
  const double p[3] = {std::exp(3.0) / z, 1 / z, 1 / z};
  double kl_pq = 0, kl_qp = 0;
  for (double pi : p) {
    kl_pq += pi * std::log(pi * 3);
    kl_qp += (1.0 / 3) * std::log((1.0 / 3) / pi);
  }
  EXPECT_NEAR(ab, kl_pq, 1e-13);
  EXPECT_NEAR(ba, kl_qp, 1e-13);
  EXPECT_NE(ab, ba);
}

TEST(AbDivergence, LastRowHasNoChosenToken) {
  const std::vector<float> a = {1, 2}, b = {2, 1};
  EXPECT_EQ(compare_positions(a, b, -1).abs_dlogprob, -1.0);
}

TEST(AbDivergence, RefusesMismatchedRows) {
  const std::vector<float> a = {1, 2, 3}, b = {1, 2};
  EXPECT_THROW(compare_positions(a, b, 0), Error);
  EXPECT_THROW(compare_positions(a, a, 3), Error);
}

TEST(AbDistribution, PercentilesInterpolateLikeNumpy) {
  // numpy.percentile(range(1, 11), [50, 90, 99]) = 5.5, 9.1, 9.91
  std::vector<double> v = {10, 9, 8, 7, 6, 5, 4, 3, 2, 1};
  const Distribution d = summarize(v);
  EXPECT_EQ(d.count, 10);
  EXPECT_DOUBLE_EQ(d.mean, 5.5);
  EXPECT_DOUBLE_EQ(d.p50, 5.5);
  EXPECT_NEAR(d.p90, 9.1, 1e-12);
  EXPECT_NEAR(d.p99, 9.91, 1e-12);
  EXPECT_EQ(d.max, 10);
  EXPECT_EQ(d.min, 1);
  EXPECT_EQ(percentile(v, 0.0), 1);
  EXPECT_EQ(percentile(v, 1.0), 10);
  EXPECT_THROW(percentile(v, 1.5), Error);
}

TEST(AbDistribution, ConstantAndEmptySamples) {
  const std::vector<double> zeros(7, 0.0);
  const Distribution z = summarize(zeros);
  EXPECT_EQ(z.mean, 0.0);
  EXPECT_EQ(z.p99, 0.0);
  EXPECT_EQ(z.max, 0.0);
  const Distribution e = summarize(std::vector<double>{});
  EXPECT_EQ(e.count, 0);
  EXPECT_EQ(e.max, 0.0);
}

TEST(AbReport, FirstDivergence) {
  EXPECT_EQ(first_divergence({1, 2, 3}, {1, 2, 3}), -1);
  EXPECT_EQ(first_divergence({1, 2, 3}, {1, 5, 3}), 1);
  EXPECT_EQ(first_divergence({7}, {8}), 0);
  EXPECT_EQ(first_divergence({1, 2}, {1, 2, 3}), 2);  // a prefix parts where it ends
  EXPECT_EQ(first_divergence({}, {4}), 0);
  EXPECT_EQ(first_divergence({}, {}), -1);
}

}  // namespace
}  // namespace tessera::ab
