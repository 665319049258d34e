#include "executor/host_communicator.hpp"

#include <cstring>
#include <vector>

#include "ops/tree_sum.hpp"
#include "util/check.hpp"

namespace tessera {

class HostCommunicator final : public Communicator {
 public:
  HostCommunicator(HostCommGroup& group, int rank) : group_(group), rank_(rank) {}

  int rank() const override { return rank_; }
  int size() const override { return group_.size(); }

  void all_reduce_sum(float* data, size_t count) override {
    if (group_.size() == 1) return;
    post(data);
    sum_.resize(count);
    // Fixed order, the same on every rank: the pairwise tree over ranks of ops/tree_sum.hpp
    // ((rank0 + rank1) + (rank2 + rank3) for 4), which continues each rank's own tree of its
    // reduction parts (executor.reduction_parts).
    std::vector<const float*> parts(static_cast<size_t>(group_.size()));
    for (size_t r = 0; r < parts.size(); ++r) {
      parts[r] = static_cast<const float*>(group_.posted_[r]);
    }
    ops::tree_sum(parts, static_cast<int64_t>(count), sum_.data());
    group_.wait_all();  // everyone has read every buffer: now each may overwrite its own
    std::memcpy(data, sum_.data(), count * sizeof(float));
  }

  void all_gather(const float* send, size_t count, float* recv) override {
    post(send);
    for (int r = 0; r < group_.size(); ++r)
      std::memcpy(recv + static_cast<size_t>(r) * count, group_.posted_[static_cast<size_t>(r)],
                  count * sizeof(float));
    group_.wait_all();
  }

  void broadcast(void* data, size_t bytes, int root) override {
    TS_CHECK(root >= 0 && root < group_.size(), "broadcast root {} of {} ranks", root,
             group_.size());
    if (group_.size() == 1) return;
    post(data);
    if (rank_ != root) std::memcpy(data, group_.posted_[static_cast<size_t>(root)], bytes);
    group_.wait_all();
  }

  void barrier() override { group_.wait_all(); }

  void abort_group(const char* reason) override { group_.abort(reason); }

 private:
  // Shares a pointer with the group and waits until every rank has shared its own.
  void post(const void* p) {
    {
      std::lock_guard lock(group_.mutex_);
      group_.posted_[static_cast<size_t>(rank_)] = p;
    }
    group_.wait_all();
  }

  HostCommGroup& group_;
  const int rank_;
  std::vector<float> sum_;  // reused across calls
};

HostCommGroup::HostCommGroup(int size) : size_(size), posted_(static_cast<size_t>(size), nullptr) {
  TS_CHECK(size >= 1, "a communicator group needs at least one rank, got {}", size);
  communicators_.resize(static_cast<size_t>(size));
}

Communicator& HostCommGroup::communicator(int rank) {
  TS_CHECK(rank >= 0 && rank < size_, "rank {} of a group of {}", rank, size_);
  std::lock_guard lock(mutex_);
  auto& c = communicators_[static_cast<size_t>(rank)];
  if (!c) c = std::make_unique<HostCommunicator>(*this, rank);
  return *c;
}

void HostCommGroup::abort(const std::string& reason) {
  std::lock_guard lock(mutex_);
  if (!aborted_) abort_reason_ = reason;
  aborted_ = true;
  arrived_.notify_all();
}

bool HostCommGroup::aborted() const {
  std::lock_guard lock(mutex_);
  return aborted_;
}

void HostCommGroup::wait_all() {
  std::unique_lock lock(mutex_);
  if (aborted_) throw Error("tensor-parallel group aborted: " + abort_reason_);
  if (size_ == 1) return;
  const int64_t generation = generation_;
  if (++waiting_ == size_) {
    waiting_ = 0;
    ++generation_;
    arrived_.notify_all();
    return;
  }
  arrived_.wait(lock, [&] { return generation_ != generation || aborted_; });
  if (generation_ == generation) throw Error("tensor-parallel group aborted: " + abort_reason_);
}

}  // namespace tessera
