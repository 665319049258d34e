#include "comparison/arm_assignment.hpp"

#include <cmath>

#include "util/check.hpp"

namespace tessera::ab {

namespace {

bool valid_name(const std::string& name) {
  if (name.empty() || name.size() > 32) return false;
  for (char c : name)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-')) return false;
  return true;
}

uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

}  // namespace

ArmAssignment::ArmAssignment(std::vector<ArmWeight> arms) : arms_(std::move(arms)) {
  TS_CHECK(arms_.size() >= 2, "A/B: {} arm(s) given, at least two are needed", arms_.size());
  double total = 0;
  for (size_t i = 0; i < arms_.size(); ++i) {
    const ArmWeight& a = arms_[i];
    TS_CHECK(valid_name(a.name), "A/B: arm name `{}` must be 1-32 characters of a-z 0-9 _ -",
             a.name);
    for (size_t j = 0; j < i; ++j)
      TS_CHECK(arms_[j].name != a.name, "A/B: arm `{}` is named twice", a.name);
    TS_CHECK(std::isfinite(a.weight) && a.weight >= 0,
             "A/B: arm `{}` has weight {}; weights must be finite and >= 0", a.name, a.weight);
    total += a.weight;
  }
  TS_CHECK(total > 0, "A/B: the arms' weights sum to 0; give at least one arm a share");
  double running = 0;
  for (const ArmWeight& a : arms_) {
    running += a.weight;
    cumulative_.push_back(running / total);
  }
  cumulative_.back() = 1.0;  // no gap at the top from rounding
}

uint64_t ArmAssignment::fnv1a64(std::string_view bytes) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}

double ArmAssignment::unit_hash(std::string_view key) {
  return static_cast<double>(mix64(fnv1a64(key)) >> 11) * 0x1.0p-53;
}

size_t ArmAssignment::find(std::string_view name) const {
  for (size_t i = 0; i < arms_.size(); ++i)
    if (arms_[i].name == name) return i;
  return arms_.size();
}

size_t ArmAssignment::assign(std::string_view key, std::string_view explicit_arm) const {
  if (!explicit_arm.empty()) {
    const size_t i = find(explicit_arm);
    TS_CHECK(i < arms_.size(), "A/B: no arm called `{}`", explicit_arm);
    return i;
  }
  const double u = unit_hash(key);
  for (size_t i = 0; i < cumulative_.size(); ++i)
    if (u < cumulative_[i]) return i;
  return cumulative_.size() - 1;
}

}  // namespace tessera::ab
