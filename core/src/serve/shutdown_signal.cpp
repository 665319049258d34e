#include "serve/shutdown_signal.hpp"

#include <pthread.h>
#include <spdlog/spdlog.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
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

// The thread a stray delivery is forwarded to: the one in wait(), else the one that blocked.
std::atomic<pid_t> g_receiver{0};

pid_t this_thread_id() { return static_cast<pid_t>(syscall(SYS_gettid)); }

// Runs only on a thread that does not block the signals. A thread-directed signal stays pending
// on the receiver (which blocks it) until its sigwait takes it; tgkill is a plain system call,
// safe in a handler.
void forward_to_receiver(int sig) {
  const int saved_errno = errno;
  const pid_t receiver = g_receiver.load();
  if (receiver != 0) syscall(SYS_tgkill, getpid(), receiver, sig);
  errno = saved_errno;
}

}  // namespace

void ShutdownSignal::block() {
  const sigset_t set = shutdown_set();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  g_receiver.store(this_thread_id());
  struct sigaction action {};
  action.sa_handler = &forward_to_receiver;
  action.sa_flags = SA_RESTART;
  sigfillset(&action.sa_mask);
  sigaction(SIGTERM, &action, nullptr);
  sigaction(SIGINT, &action, nullptr);
}

std::optional<int> ShutdownSignal::wait(std::optional<std::chrono::milliseconds> timeout) {
  const sigset_t set = shutdown_set();
  g_receiver.store(this_thread_id());
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
