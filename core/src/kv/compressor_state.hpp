// The DeepSeek-V4 KV compressor's per-sequence decode state (DSV4.md §2.4,
// TRANSFORMERS_NOTES.md §E). Tokens arrive one at a time with their projected kv row a_t and
// gate row g_t (+ ape[t mod m] already added), each of width c*d (c = 2 when m == 4: overlapping
// windows, else 1). When a window of m tokens closes, the entry is the per-channel softmax-pooled
// sum over the window's slots:
//   m = 128:  e[j] = sum_{t in w} softmax_t(g_t[j]) a_t[j]
//   m = 4:    slots = first-half channels [0, d) of window w-1  ++  second half [d, 2d) of window
//   w;
//             window -1 does not exist for w = 0 (weight 0).
// The caller normalises and rotates the entry (position w*m) and stores it in the cache.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "kv/window_buffer.hpp"

namespace tessera::dsv4 {

// What a compressor needs to resume at a window boundary (every window closed): only the previous
// window of an overlapping (m = 4) compressor; nothing for m = 128 (docs/engine.md "Prefix cache").
struct CompressorSnapshot {
  bool has_previous = false;
  std::vector<float> prev_kv, prev_gate;  // [ratio, width] each (overlap only)
};

class CompressorState {
 public:
  CompressorState() = default;
  // The window buffers are allocated at the first push (the device forward never pushes: its
  // state is on the device, model/device_compressors.hpp) or by a restore (the previous window).
  CompressorState(int64_t ratio, int64_t dim);

  // Adds the token at `position` (positions must arrive in order). Returns the pooled entry
  // [dim] when this token closes a window.
  std::optional<std::vector<float>> push(int64_t position, const float* kv, const float* gate);

  int64_t ratio() const { return ratio_; }
  int64_t width() const { return width_; }
  int64_t state_bytes() const;  // of the buffers allocated

  // True when no window is partly filled (the last token pushed closed one, or none was pushed).
  bool at_window_boundary() const { return pending_ == 0; }
  // The resumable state at a window boundary (TS_CHECK otherwise).
  CompressorSnapshot snapshot() const;
  // Continues from a snapshot taken at a window boundary of a state with the same ratio and dim.
  void restore(const CompressorSnapshot& snapshot);
  // As constructed: no window open, no previous one (the buffers' stale values are never read:
  // push writes every slot of a window before closing it, and the previous window is read only
  // once a window closed).
  void reset() {
    pending_ = 0;
    has_previous_ = false;
  }

 private:
  void allocate_windows();

  int64_t ratio_ = 0;
  int64_t dim_ = 0;    // d: entry width
  int64_t width_ = 0;  // c * d: projected row width
  bool overlap_ = false;
  bool has_previous_ = false;
  int64_t pending_ = 0;               // tokens pushed into the current, still open window
  WindowBuffer kv_, gate_;            // current window [ratio, width]
  WindowBuffer prev_kv_, prev_gate_;  // previous window (overlap only)
};

}  // namespace tessera::dsv4
