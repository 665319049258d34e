// Live A/B: which arm serves a request. A request names its arm explicitly (a header such as
// X-Tessera-Arm, for tests and pinned users) or is assigned by a stable hash of a key — the
// request id, or better the user id, so that a user stays on one arm across requests and server
// restarts — mapped onto the cumulative traffic split:
//   u = mix64(fnv1a64(key)) / 2^64 in [0, 1),  arm = first i with u < (w_0 + ... + w_i) / sum(w)
// FNV-1a (Fowler, Noll, Vo; 64-bit offset basis 0xcbf29ce484222325, prime 0x100000001b3) is
// byte-order independent and fixed forever; the SplitMix64 finaliser (Steele et al., OOPSLA 2014)
// spreads its low-entropy high bits. Changing either would move users between arms: don't.
//
// Immutable after construction; assign() may be called from any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tessera::ab {

struct ArmWeight {
  std::string name;   // [a-z0-9_-]{1,32}
  double weight = 1;  // share of traffic, >= 0 (need not sum to 1)
};

class ArmAssignment {
 public:
  // Throws tessera::Error: fewer than two arms, a bad or duplicate name, a negative or non-finite
  // weight, or weights summing to 0.
  explicit ArmAssignment(std::vector<ArmWeight> arms);

  // The arm index for a request. `explicit_arm`, when not empty, must name an arm (tessera::Error
  // otherwise: the caller answers 400); else `key` is hashed.
  size_t assign(std::string_view key, std::string_view explicit_arm = {}) const;

  const std::vector<ArmWeight>& arms() const { return arms_; }
  // Index of the arm called `name`, or arms().size().
  size_t find(std::string_view name) const;

  static uint64_t fnv1a64(std::string_view bytes);
  static double unit_hash(std::string_view key);  // [0, 1)

 private:
  std::vector<ArmWeight> arms_;
  std::vector<double> cumulative_;  // normalised, last = 1
};

}  // namespace tessera::ab
