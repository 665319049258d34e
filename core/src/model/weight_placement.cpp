#include "model/weight_placement.hpp"

#include <malloc.h>

#include <memory>
#include <utility>

namespace tessera::dsv4 {
namespace {

template <typename T>
size_t arena_bytes(const TensorStorage<T>& v) {
  return v.empty() ? 0 : HugePageArena::footprint(v.size() * sizeof(T));
}

template <typename T>
void move_into(TensorStorage<T>& v, const std::shared_ptr<HugePageArena>& arena) {
  if (v.empty()) {
    return;
  }
  TensorStorage<T> placed(v.begin(), v.end(), ArenaAllocator<T>(arena));
  v = std::move(placed);  // the allocator moves along (propagate_on_container_move_assignment)
}

void return_free_heap_pages() {
#ifdef __GLIBC__
  malloc_trim(0);
#endif
}

}  // namespace

PlacementSummary place_linear_weights_on_huge_pages(ModelWeights& weights) {
  PlacementSummary summary;
  for_each_linear_weight(weights, [&](const Tensor& t) {
    summary.bytes += arena_bytes(t.data) + arena_bytes(t.bf16) + arena_bytes(t.panels) +
                     arena_bytes(t.bf16_panels);
  });
  if (summary.bytes == 0) {
    return summary;
  }
  // One block for all of them: no block's tail left unused between two.
  auto arena = std::make_shared<HugePageArena>(summary.bytes);
  // The copies' old storage goes back to the heap, which glibc keeps (often between blocks still
  // in use, where it cannot shrink the heap): hand those pages back every GiB, or a model would
  // briefly count twice.
  constexpr size_t kTrimEvery = size_t{1} << 30;
  size_t since_trim = 0;
  for_each_linear_weight(weights, [&](Tensor& t) {
    since_trim += arena_bytes(t.data) + arena_bytes(t.bf16) + arena_bytes(t.panels) +
                  arena_bytes(t.bf16_panels);
    move_into(t.data, arena);
    move_into(t.bf16, arena);
    move_into(t.panels, arena);
    move_into(t.bf16_panels, arena);
    if (since_trim >= kTrimEvery) {
      return_free_heap_pages();
      since_trim = 0;
    }
  });
  return_free_heap_pages();
  summary.advised_bytes = arena->advised_bytes();
  return summary;
}

}  // namespace tessera::dsv4
