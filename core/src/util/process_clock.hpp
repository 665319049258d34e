// Seconds since this process started (Linux: /proc/self/stat's start time against
// /proc/uptime), for start-up figures such as the engine's time to its first token. Returns a
// negative value where /proc cannot tell.
#pragma once

namespace tessera {

[[nodiscard]] double seconds_since_process_start();

}  // namespace tessera
