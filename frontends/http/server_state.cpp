#include "server_state.hpp"

namespace tessera::http {

void ServerState::add_session(Session* key, const std::shared_ptr<Session>& session) {
  const std::lock_guard lock(sessions_mutex_);
  sessions_[key] = session;
}

void ServerState::remove_session(Session* key) {
  const std::lock_guard lock(sessions_mutex_);
  sessions_.erase(key);
}

std::vector<std::shared_ptr<Session>> ServerState::live_sessions() {
  const std::lock_guard lock(sessions_mutex_);
  std::vector<std::shared_ptr<Session>> out;
  out.reserve(sessions_.size());
  for (const auto& [key, weak] : sessions_) {
    if (auto s = weak.lock()) out.push_back(std::move(s));
  }
  return out;
}

}  // namespace tessera::http
