// The in-process Communicator for CPU ranks: the ranks are threads of one process that exchange
// pointers through a shared group and copy / add directly. Reductions add the ranks' values in
// rank order (0, 1, ..., N-1) for every element on every rank, so results are bit-identical
// across ranks and across runs (docs/engine.md "Determinism").
//
// Usage: HostCommGroup group(N); rank r's thread uses *group.communicator(r). The group must
// outlive its communicators. A rank that fails calls abort_group(); every rank then throws from
// its pending or next collective instead of waiting forever.
#pragma once

#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "device/communicator.hpp"

namespace tessera {

class HostCommGroup {
 public:
  explicit HostCommGroup(int size);
  HostCommGroup(const HostCommGroup&) = delete;
  HostCommGroup& operator=(const HostCommGroup&) = delete;

  int size() const { return size_; }
  // The communicator of `rank`, owned by the group (one per rank, created on first call).
  Communicator& communicator(int rank);
  void abort(const std::string& reason);
  bool aborted() const;

 private:
  friend class HostCommunicator;
  void wait_all();  // a barrier that throws once the group is aborted

  const int size_;
  mutable std::mutex mutex_;
  std::condition_variable arrived_;
  int waiting_ = 0;
  int64_t generation_ = 0;
  bool aborted_ = false;
  std::string abort_reason_;
  std::vector<const void*> posted_;  // [size] what each rank shares in the current collective
  std::vector<std::unique_ptr<Communicator>> communicators_;
};

}  // namespace tessera
