#include "engine/prefix_cache.hpp"

#include <algorithm>

#include "util/check.hpp"

namespace tessera::engine {

namespace {

// SplitMix64 finaliser (Steele et al. 2014) as the mixing step of the chained hash.
uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

}  // namespace

PrefixCache::PrefixCache(int64_t block_tokens) : block_(block_tokens) {
  TS_CHECK(block_tokens > 0, "prefix cache block of {} tokens", block_tokens);
}

uint64_t PrefixCache::key_of(uint64_t parent, const std::string& salt,
                             std::span<const int32_t> block) const {
  uint64_t h = mix(parent);
  if (parent == 0) {
    h = mix(h ^ 0x5a17ull);
    for (unsigned char c : salt) h = mix(h ^ c);
    h = mix(h ^ salt.size());
  }
  for (int32_t t : block) h = mix(h ^ static_cast<uint32_t>(t));
  return h;
}

bool PrefixCache::same(const Node& n, uint64_t parent, const std::string& salt,
                       std::span<const int32_t> block) const {
  return n.parent == parent && (parent != 0 || n.salt == salt) &&
         std::equal(n.tokens.begin(), n.tokens.end(), block.begin(), block.end());
}

uint64_t PrefixCache::find_child(uint64_t parent, const std::string& salt,
                                 std::span<const int32_t> block) const {
  const auto it = by_key_.find(key_of(parent, salt, block));
  if (it == by_key_.end()) return 0;
  const Node& n = nodes_.at(it->second);
  return same(n, parent, salt, block) ? it->second : 0;
}

PrefixCache::Match PrefixCache::lookup(const std::string& salt, std::span<const int32_t> tokens,
                                       int64_t limit) {
  Match m;
  limit = std::min<int64_t>(limit, static_cast<int64_t>(tokens.size()));
  for (int64_t end = block_; end <= limit; end += block_) {
    const uint64_t child = find_child(m.node, salt, tokens.subspan(end - block_, block_));
    if (child == 0 || !nodes_.at(child).ready) break;
    m.node = child;
    m.length = end;
  }
  for (uint64_t id = m.node; id != 0; id = nodes_.at(id).parent) touch(id);
  return m;
}

uint64_t PrefixCache::add_pending(uint64_t parent, const std::string& salt,
                                  std::span<const int32_t> block) {
  TS_CHECK(static_cast<int64_t>(block.size()) == block_, "prefix block of {} tokens, expected {}",
           block.size(), block_);
  TS_CHECK(parent == 0 || alive(parent), "prefix node {} is gone", parent);
  const uint64_t key = key_of(parent, salt, block);
  if (by_key_.count(key) != 0) return 0;  // taken (a collision): this block is not cached
  const uint64_t id = next_id_++;
  Node n;
  n.parent = parent;
  n.key = key;
  if (parent == 0) n.salt = salt;
  n.tokens.assign(block.begin(), block.end());
  n.last_use = ++clock_;
  nodes_.emplace(id, std::move(n));
  by_key_.emplace(key, id);
  if (parent != 0) {
    ++nodes_.at(parent).children;
    set_leaf_state(parent);
  }
  return id;
}

void PrefixCache::mark_ready(uint64_t id) {
  Node& n = nodes_.at(id);
  TS_CHECK(!n.ready, "prefix node {} made ready twice", id);
  n.ready = true;
  ++ready_count_;
  set_leaf_state(id);
}

void PrefixCache::discard_pending(uint64_t id) {
  const auto it = nodes_.find(id);
  if (it == nodes_.end()) return;
  TS_CHECK(!it->second.ready && it->second.children == 0,
           "discard of prefix node {} that is ready or has children", id);
  remove(id);
}

void PrefixCache::touch(uint64_t id) {
  Node& n = nodes_.at(id);
  evictable_.erase({n.last_use, id});
  n.last_use = ++clock_;
  set_leaf_state(id);
}

void PrefixCache::set_leaf_state(uint64_t id) {
  const Node& n = nodes_.at(id);
  if (n.ready && n.children == 0) {
    evictable_.insert({n.last_use, id});
  } else {
    evictable_.erase({n.last_use, id});
  }
}

void PrefixCache::remove(uint64_t id) {
  const Node n = nodes_.at(id);
  evictable_.erase({n.last_use, id});
  by_key_.erase(n.key);
  if (n.ready) --ready_count_;
  nodes_.erase(id);
  if (n.parent != 0 && alive(n.parent)) {
    --nodes_.at(n.parent).children;
    set_leaf_state(n.parent);
  }
}

uint64_t PrefixCache::evict_one() {
  if (evictable_.empty()) return 0;
  const uint64_t id = evictable_.begin()->second;
  remove(id);
  return id;
}

}  // namespace tessera::engine
