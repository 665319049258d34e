// CUDA graphs for the device forward's decode steps, piecewise (as vLLM's piecewise graphs): the
// forward's work between two eager calls (the collectives, and the attention plugin, the kv
// format's stores and the compressors unless they can be held: model/graphed_attention.hpp,
// ABI 1.6 device slots) is one piece. Graphs are kept per batch-size bucket (as vLLM's capture
// sizes: 1, 2, 4, then every multiple of 8 up to the largest, executor.cuda_graph_max_batch): a
// decode step of T sequences runs its pieces on the bucket's B >= T rows, the rows past T padding
// (token id 0 at position 0: every piece's work is row by row, so they change no real row's
// bits). The first decode step of a bucket runs eagerly (it sizes the scratch buffers), the second
// captures each piece and launches it, later ones replay the pieces. A piece is captured with the
// addresses of the scratch buffers it uses, which hold only while the scratch does not move a
// buffer (Scratch::generation): when it does, the graphs are dropped and made again.
//
// A piece may be replayed only if nothing it does on the host depends on the step beyond B: its
// inputs are in device buffers (uploaded eagerly before), its sizes follow B. A step of more than
// the largest bucket runs eagerly. A capture that fails
// (something in the piece a graph cannot hold) turns graphs off for the model with a warning, and
// the piece runs eagerly. One rank's thread only.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <vector>

#include "device/device.hpp"
#include "device/scratch.hpp"

namespace tessera::dsv4 {

class PiecewiseGraphs {
 public:
  struct Stats {
    int64_t eager_steps = 0;      // steps that ran without graphs
    int64_t captured_steps = 0;   // steps whose pieces were captured (and launched)
    int64_t replayed_steps = 0;   // steps replayed from graphs
    int64_t pieces_captured = 0;  // graphs made
    int64_t pieces_replayed = 0;  // graph launches of replayed steps
    int64_t padding_rows = 0;     // rows the graphable steps ran past their T (B - T summed)
  };

  static constexpr int64_t kDefaultMaxBatch = 256;

  PiecewiseGraphs(device::Device& device, const device::Stream& stream,
                  const device::Scratch& scratch)
      : device_(device), stream_(stream), scratch_(scratch) {}

  // Graphs on (when the device has them) or off; off drops every graph.
  void set_enabled(bool on);
  [[nodiscard]] bool enabled() const { return enabled_ && device_.graphs(); }
  // The largest bucket (>= 1): decode steps of more sequences run eagerly. Drops every graph.
  void set_max_batch(int64_t max_batch);
  [[nodiscard]] int64_t max_batch() const { return max_batch_; }
  // The bucket a decode step of T sequences runs in: 1, 2, 4, then the next multiple of 8,
  // capped by max_batch; 0 when T > max_batch.
  [[nodiscard]] int64_t bucket(int64_t T) const;

  // Before a step of T rows; `graphable`: a decode step nothing else watches (no timeline, no
  // captured streams). Returns the rows the step's pieces run on: its bucket's B when graphs
  // take the step, else T.
  int64_t begin_step(int64_t T, bool graphable);
  // After begin_step, before the first piece: the layout of what the step's pieces read beyond
  // the scratch (the graphed attention's host buffer and shape). A bucket whose graphs were made
  // under another key drops them, and this step runs as its warm-up.
  void require_layout(uint64_t key);
  // One piece of the step's work: run, captured and launched, or replayed.
  void run(const std::function<void()>& piece);
  // After the step's work was enqueued.
  void end_step();

  [[nodiscard]] const Stats& stats() const { return stats_; }
  // Whether the step begun last runs from graphs (warm-up, capture or replay) on its bucket.
  [[nodiscard]] bool step_graphed() const { return graphable_; }
  // Buckets whose graphs are kept.
  [[nodiscard]] size_t sizes_kept() const { return sets_.size(); }

 private:
  enum class Mode { kEager, kCapture, kReplay };
  void drop_all();
  // The capture could not be made or kept: the rest of the step runs eagerly.
  void fall_back();

  device::Device& device_;
  const device::Stream& stream_;
  const device::Scratch& scratch_;
  bool enabled_ = true;
  int64_t max_batch_ = kDefaultMaxBatch;
  Mode mode_ = Mode::kEager;
  bool graphable_ = false;
  int64_t rows_ = 0;                                    // the step's bucket B
  size_t next_ = 0;                                     // the replayed piece's index
  uint64_t generation_ = 0;                             // the scratch's, when the graphs were made
  std::map<int64_t, std::vector<device::Graph>> sets_;  // per B, the pieces in order
  std::vector<device::Graph> capturing_;                // the capturing step's pieces so far
  std::set<int64_t> warmed_;                            // buckets run eagerly at this generation
  std::map<int64_t, uint64_t> layouts_;                 // per B, require_layout's key
  Stats stats_;
};

}  // namespace tessera::dsv4
