#include "executor/step_plan.hpp"

#include <cstring>

#include "util/check.hpp"

namespace tessera {

namespace {

class Writer {
 public:
  template <class T>
  void put(T value) {
    const auto* p = reinterpret_cast<const uint8_t*>(&value);
    out_.insert(out_.end(), p, p + sizeof(T));
  }
  void put_ints(const std::vector<int32_t>& v) {
    put<uint64_t>(v.size());
    const auto* p = reinterpret_cast<const uint8_t*>(v.data());
    out_.insert(out_.end(), p, p + v.size() * sizeof(int32_t));
  }
  std::vector<uint8_t> take() { return std::move(out_); }

 private:
  std::vector<uint8_t> out_;
};

class Reader {
 public:
  explicit Reader(std::span<const uint8_t> in) : in_(in) {}
  template <class T>
  T get() {
    TS_CHECK(pos_ + sizeof(T) <= in_.size(), "step plan truncated at byte {}", pos_);
    T value;
    std::memcpy(&value, in_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return value;
  }
  uint64_t count(size_t element_bytes) {
    const auto n = get<uint64_t>();
    TS_CHECK(n <= (in_.size() - pos_) / element_bytes, "step plan count {} exceeds its bytes", n);
    return n;
  }
  std::vector<int32_t> get_ints() {
    std::vector<int32_t> v(count(sizeof(int32_t)));
    std::memcpy(v.data(), in_.data() + pos_, v.size() * sizeof(int32_t));
    pos_ += v.size() * sizeof(int32_t);
    return v;
  }
  bool done() const { return pos_ == in_.size(); }

 private:
  std::span<const uint8_t> in_;
  size_t pos_ = 0;
};

}  // namespace

std::vector<uint8_t> serialize_plan(const StepPlan& plan) {
  Writer w;
  w.put<uint8_t>(plan.shutdown ? 1 : 0);
  w.put<uint64_t>(plan.ops.size());
  for (const CacheOp& op : plan.ops) {
    w.put<uint8_t>(static_cast<uint8_t>(op.kind));
    w.put<uint64_t>(op.sequence);
    w.put<uint64_t>(op.snapshot);
  }
  w.put<uint64_t>(plan.chunks.size());
  for (const PlannedChunk& c : plan.chunks) {
    w.put<uint64_t>(c.sequence);
    w.put_ints(c.tokens);
    w.put<uint64_t>(c.snapshots.size());
    for (const SnapshotPoint& s : c.snapshots) {
      w.put<int64_t>(s.length);
      w.put<uint64_t>(s.snapshot);
    }
    w.put<uint8_t>(c.scan_only ? 1 : 0);
  }
  return w.take();
}

StepPlan deserialize_plan(std::span<const uint8_t> bytes) {
  Reader r(bytes);
  StepPlan plan;
  plan.shutdown = r.get<uint8_t>() != 0;
  plan.ops.resize(r.count(17));
  for (CacheOp& op : plan.ops) {
    const auto kind = r.get<uint8_t>();
    TS_CHECK(kind <= static_cast<uint8_t>(CacheOpKind::kDropSnapshot), "unknown cache op {}", kind);
    op.kind = static_cast<CacheOpKind>(kind);
    op.sequence = r.get<uint64_t>();
    op.snapshot = r.get<uint64_t>();
  }
  plan.chunks.resize(r.count(25));
  for (PlannedChunk& c : plan.chunks) {
    c.sequence = r.get<uint64_t>();
    c.tokens = r.get_ints();
    c.snapshots.resize(r.count(16));
    for (SnapshotPoint& s : c.snapshots) {
      s.length = r.get<int64_t>();
      s.snapshot = r.get<uint64_t>();
    }
    const auto scan_only = r.get<uint8_t>();
    TS_CHECK(scan_only <= 1, "step plan: scan_only byte {}", scan_only);
    c.scan_only = scan_only == 1;
  }
  TS_CHECK(r.done(), "step plan has trailing bytes");
  return plan;
}

}  // namespace tessera
