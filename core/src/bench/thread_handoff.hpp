// How fast two threads reach each other's caches: a cache line's round trip between them, and
// reading 1 MiB the other thread has just written. The engine's forward and its sampler hand
// activations and logits between the two compute threads all the time, so these numbers set
// what a 64-sequence step costs beyond its arithmetic.
//
// Why `bench engine` prints them: on the 2-core development VM they change for minutes at a time
// (docs/perf.md, "The VM's two placements"): 42-70 ns and 23-42 µs when its two vCPUs share an
// L3, 355-423 ns and 144-195 µs when they do not, and the engine's numbers move with them.
#pragma once

namespace tessera::bench {

// Each is -1 where no measurement finished within the time allowed (a busy machine that does not
// run both threads at once).
struct ThreadHandoff {
  double round_trip_ns = 0;  // median over batches of ping-pongs on one cache line
  double read_mib_us = 0;    // median time to write 1 MiB on one thread and read it on the other
};

// Takes ~10 ms with both threads busy, at most ~200 ms; run it between timed runs, not in one.
ThreadHandoff measure_thread_handoff();

}  // namespace tessera::bench
