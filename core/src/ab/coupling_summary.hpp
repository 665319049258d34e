// How the free-running disagreement of an A/B compares with what the arms' distributions allow
// (docs/ab.md "Coupling"). A free-running pair is "at risk" at output index t while both arms'
// outputs are identical before t: both then sample token t from the same context, the one arm A's
// output gives, so the teacher-forced row of that sequence at t holds both arms' distributions
// there. Their total-variation distance TV is the least probability with which any draw could
// make the arms disagree; the coupled draw (comparison/coupled_draw.hpp, Gumbel-max with shared
// noise) disagrees with probability at most 2 TV / (1 + TV) (Daliri, Musco & Suresh, "Coupling
// without Communication and Drafter-Invariant Speculative Decoding", 2024). An uncoupled draw can
// disagree far more often than either.
#pragma once

#include <cstdint>
#include <vector>

#include "ab/ab_report.hpp"

namespace tessera::ab {

struct CouplingSummary {
  int64_t at_risk = 0;             // (pair, output index) decisions taken from identical contexts
  int64_t diverged = 0;            // of them, where the pair's outputs part
  double observed_rate = 0;        // diverged / at_risk (0 when none at risk)
  double mean_tv = 0;              // mean teacher-forced TV over the at-risk decisions
  double expected_rate_bound = 0;  // mean 2 TV / (1 + TV) over them: the coupled draw's bound
  // Per output index t (0 .. longest - 1): the same over the decisions at t.
  std::vector<int64_t> at_risk_by_index, diverged_by_index;
  std::vector<double> tv_by_index, bound_by_index;
};

// A pair whose arm-A output was not scored (no sequence holds it) contributes nothing.
CouplingSummary summarize_coupling(const AbReport& report);

}  // namespace tessera::ab
