#include "engine/event_dispatcher.hpp"

#include <spdlog/spdlog.h>

namespace tessera::engine {

EventDispatcher::EventDispatcher() : thread_([this] { run(); }) {}

EventDispatcher::~EventDispatcher() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  ready_.notify_all();
  thread_.join();
}

void EventDispatcher::post(std::vector<Delivery> deliveries) {
  if (queue(std::move(deliveries))) {
    wake();
  }
}

bool EventDispatcher::queue(std::vector<Delivery> deliveries) {
  if (deliveries.empty()) {
    return false;
  }
  std::lock_guard lock(mutex_);
  if (queue_.empty()) {
    queue_ = std::move(deliveries);
  } else {
    for (Delivery& d : deliveries) {
      queue_.push_back(std::move(d));
    }
  }
  return true;
}

void EventDispatcher::wake() { ready_.notify_one(); }

void EventDispatcher::run() {
  std::vector<Delivery> batch;
  for (;;) {
    {
      std::unique_lock lock(mutex_);
      ready_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) {
        return;  // stopping and drained
      }
      batch.swap(queue_);
    }
    for (Delivery& d : batch) {
      try {
        (*d.callback)(d.event);
      } catch (const std::exception& e) {
        spdlog::error("engine: event callback of request {} threw: {}", d.event.request_id,
                      e.what());
      }
    }
    batch.clear();
  }
}

}  // namespace tessera::engine
