#include "serve/shutdown_signal.hpp"

#include <pthread.h>
#include <spdlog/spdlog.h>

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <ctime>
#include <thread>

namespace tessera::serve {

namespace {

sigset_t shutdown_set() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  return set;
}

}  // namespace

void ShutdownSignal::block() {
  const sigset_t set = shutdown_set();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

std::optional<int> ShutdownSignal::wait(std::optional<std::chrono::milliseconds> timeout) {
  const sigset_t set = shutdown_set();
  if (!timeout) {
    int sig = 0;
    while (sigwait(&set, &sig) != 0) {
    }
    return sig;
  }
  const auto ms = timeout->count();
  timespec ts{static_cast<time_t>(ms / 1000), static_cast<long>((ms % 1000) * 1000000)};
  for (;;) {
    const int sig = sigtimedwait(&set, nullptr, &ts);
    if (sig > 0) return sig;
    if (errno == EAGAIN) return std::nullopt;
    // EINTR: another signal interrupted the wait; try again (the timeout restarts, acceptable).
  }
}

void ShutdownSignal::exit_on_second_signal() {
  std::thread([] {
    const auto sig = wait();
    spdlog::warn("second signal ({}) while draining: exiting now", sig.value_or(0));
    spdlog::default_logger()->flush();
    std::_Exit(128 + sig.value_or(0));
  }).detach();
}

}  // namespace tessera::serve
