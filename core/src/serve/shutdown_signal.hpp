// SIGTERM / SIGINT for `tessera serve`: both are blocked in every thread (call block() before
// any thread starts, so all threads inherit the mask) and received synchronously with sigwait by
// whoever calls wait(). The first signal starts the drain; a second one while draining ends the
// process at once (exit status 128 + signal), for an operator who does not want to wait.
#pragma once

#include <chrono>
#include <optional>

namespace tessera::serve {

class ShutdownSignal {
 public:
  // Blocks SIGTERM and SIGINT in the calling thread (and every thread it starts later).
  static void block();
  // The signal number, or nullopt when `timeout` passed first (nullopt timeout: wait forever).
  static std::optional<int> wait(std::optional<std::chrono::milliseconds> timeout = std::nullopt);
  // Starts a detached thread that waits for one more signal and then calls std::_Exit.
  static void exit_on_second_signal();
};

}  // namespace tessera::serve
