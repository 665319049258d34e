// SIGTERM / SIGINT for `tessera serve`: both are blocked in every thread (call block() before
// any thread starts, so all threads inherit the mask) and received synchronously with sigwait by
// whoever calls wait(). The first signal starts the drain; a second one while draining ends the
// process at once (exit status 128 + signal), for an operator who does not want to wait.
//
// Threads that existed before block() (a library may start its pool when it is loaded) do not
// block the signals, and the kernel may hand a process-directed signal to one of them, whose
// default action would kill the process without a drain, or with status -15 instead of 143. So
// block() also installs a handler that forwards such a stray delivery to the thread in wait()
// (or, before anyone waits, to the thread that called block(), where it stays pending).
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
