#include "ab/teacher_forced.hpp"

#include "util/check.hpp"

namespace tessera::ab {

std::vector<PositionDivergence> score_teacher_forced(Runtime& a, Runtime& b,
                                                     std::span<const int32_t> prompt,
                                                     std::span<const int32_t> continuation,
                                                     const ArmShapes& shapes) {
  TS_CHECK(!prompt.empty(), "teacher-forced scoring: empty prompt");
  const size_t total = prompt.size() + continuation.size();
  auto next_token = [&](size_t r) -> int32_t {
    if (r + 1 < prompt.size()) return prompt[r + 1];
    if (r + 1 < total) return continuation[r + 1 - prompt.size()];
    return -1;
  };
  auto seq_a = a.new_sequence();
  auto seq_b = b.new_sequence();
  std::vector<PositionDivergence> out;
  out.reserve(total);
  // Compares `rows` logits rows of one step of each arm, [rows, vocab] each.
  auto compare_step = [&](const dsv4::Logits& la, const dsv4::Logits& lb, size_t rows) {
    TS_CHECK(la.vocab == lb.vocab, "A/B: vocabularies differ ({} vs {})", la.vocab, lb.vocab);
    for (size_t i = 0; i < rows; ++i) {
      const size_t r = out.size();
      const auto vocab = static_cast<size_t>(la.vocab);
      out.push_back(compare_positions({la.row(static_cast<int64_t>(i)), vocab},
                                      {lb.row(static_cast<int64_t>(i)), vocab}, next_token(r),
                                      shapes[0], shapes[1]));
    }
  };
  {
    dsv4::ForwardBatch pa, pb;
    pa.chunks.push_back({seq_a.get(), prompt, true});
    pb.chunks.push_back({seq_b.get(), prompt, true});
    const dsv4::Logits la = a.model().forward(pa);
    const dsv4::Logits lb = b.model().forward(pb);
    compare_step(la, lb, prompt.size());
  }
  for (size_t i = 0; i < continuation.size(); ++i) {
    const auto token = continuation.subspan(i, 1);
    dsv4::ForwardBatch sa, sb;
    sa.chunks.push_back({seq_a.get(), token, false});
    sb.chunks.push_back({seq_b.get(), token, false});
    const dsv4::Logits la = a.model().forward(sa);
    const dsv4::Logits lb = b.model().forward(sb);
    compare_step(la, lb, 1);
  }
  return out;
}

std::vector<PositionDivergence> score_teacher_forced(Executor& a, Executor& b,
                                                     std::span<const int32_t> prompt,
                                                     std::span<const int32_t> continuation,
                                                     const ArmShapes& shapes) {
  TS_CHECK(!prompt.empty(), "teacher-forced scoring: empty prompt");
  std::vector<int32_t> tokens(prompt.begin(), prompt.end());
  tokens.insert(tokens.end(), continuation.begin(), continuation.end());
  constexpr uint64_t kSequence = 1;
  a.apply({CacheOpKind::kCreate, kSequence, 0});
  b.apply({CacheOpKind::kCreate, kSequence, 0});
  std::vector<PositionDivergence> out;
  out.reserve(tokens.size());
  try {
    for (size_t r = 0; r < tokens.size(); ++r) {
      const std::vector<PlannedChunk> step = {{kSequence, {tokens[r]}, {}}};
      const dsv4::Logits la = a.step(step);
      const dsv4::Logits lb = b.step(step);
      TS_CHECK(la.vocab == lb.vocab, "A/B: vocabularies differ ({} vs {})", la.vocab, lb.vocab);
      const auto vocab = static_cast<size_t>(la.vocab);
      out.push_back(compare_positions({la.row(0), vocab}, {lb.row(0), vocab},
                                      r + 1 < tokens.size() ? tokens[r + 1] : -1, shapes[0],
                                      shapes[1]));
    }
  } catch (...) {
    a.apply({CacheOpKind::kFree, kSequence, 0});
    b.apply({CacheOpKind::kFree, kSequence, 0});
    throw;
  }
  a.apply({CacheOpKind::kFree, kSequence, 0});
  b.apply({CacheOpKind::kFree, kSequence, 0});
  return out;
}

}  // namespace tessera::ab
