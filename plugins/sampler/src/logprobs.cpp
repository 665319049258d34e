#include "logprobs.hpp"

#include <algorithm>
#include <cmath>

namespace tessera::sampler {

RawLogSoftmax raw_log_softmax(const float* logits, int32_t vocab) noexcept {
  const float max = *std::max_element(logits, logits + vocab);
  double sum = 0.0;
  // exp in float (the differences are <= 0, results in [0, 1]), accumulated in double.
  for (int32_t i = 0; i < vocab; ++i) {
    sum += std::exp(logits[i] - max);
  }
  return RawLogSoftmax{static_cast<double>(max) + std::log(sum)};
}

void fill_top_logprobs(const float* logits, int32_t vocab, const RawLogSoftmax& log_softmax,
                       int32_t n, ts_sampler_result& result) {
  n = std::min(n, vocab);
  // "a ranks before b": higher logit, then lower id. The output arrays serve as a bounded heap
  // whose front is the worst of the best n seen so far: O(vocab log n), no vocab-sized scratch.
  auto before = [&](int32_t a, int32_t b) {
    return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
  };
  int32_t* heap = result.top_tokens;
  int32_t size = 0;
  for (int32_t id = 0; id < vocab && n > 0; ++id) {
    if (size < n) {
      heap[size++] = id;
      std::push_heap(heap, heap + size, before);
    } else if (before(id, heap[0])) {
      std::pop_heap(heap, heap + size, before);
      heap[size - 1] = id;
      std::push_heap(heap, heap + size, before);
    }
  }
  std::sort_heap(heap, heap + size, before);
  for (int32_t i = 0; i < size; ++i) {
    result.top_logprobs[i] = log_softmax.of(logits[heap[i]]);
  }
  result.n_top = size;
}

}  // namespace tessera::sampler
