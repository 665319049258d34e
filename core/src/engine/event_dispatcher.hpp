// Delivers events to request callbacks on its own thread, so a slow client never stalls the
// engine loop (ARCHITECTURE.md "frontends never block it; streaming happens off it"). Events of
// one request arrive in order; callbacks must still return quickly (one thread serves all).
#pragma once

#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "engine/request.hpp"

namespace tessera::engine {

class EventDispatcher {
 public:
  struct Delivery {
    std::shared_ptr<const EventCallback> callback;
    Event event;
  };

  EventDispatcher();
  ~EventDispatcher();  // delivers what is queued, then stops
  EventDispatcher(const EventDispatcher&) = delete;
  EventDispatcher& operator=(const EventDispatcher&) = delete;

  void post(std::vector<Delivery> deliveries);  // any thread

  // post() in two halves: queue without waking the dispatcher thread (true when a wake() must
  // follow), and the wake-up, which any thread may do (the engine hands it to a compute helper).
  [[nodiscard]] bool queue(std::vector<Delivery> deliveries);
  void wake();

 private:
  void run();

  std::mutex mutex_;
  std::condition_variable ready_;
  std::vector<Delivery> queue_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace tessera::engine
