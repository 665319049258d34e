// The machine's memory copy bandwidth, measured like STREAM's Copy kernel (McCalpin 1995): c = a
// over arrays far larger than the caches, bytes counted as read + write, best of several runs.
#pragma once

#include <cstdint>

namespace tessera::bench {

// GB/s (1e9 bytes) with `threads` threads over arrays of `bytes_per_array` each.
double measure_copy_bandwidth(int threads, uint64_t bytes_per_array = 256ull << 20,
                              int repeats = 5);

}  // namespace tessera::bench
