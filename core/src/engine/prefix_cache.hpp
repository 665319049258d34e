// The prefix cache's index (docs/engine.md "Prefix cache"): a tree of blocks of `block_tokens`
// tokens. A node stands for the cache state after its block, given everything before it: its
// parent node (0: the start of a sequence) and, for first blocks, the request's cache_salt. The
// node's id is also the id of the PrefixSnapshot every rank keeps for it (executor/rank.hpp).
//
// Lookup goes by a chained hash (parent id, block tokens; salt for first blocks) and then compares
// the stored tokens and salt, so a hash collision can never hand one request another's context.
// Nodes are `pending` while the step that fills their snapshot runs, then `ready`. Eviction drops
// the least recently used ready leaf (its descendants would otherwise be unreachable).
// Owned by the engine loop thread.
#pragma once

#include <cstdint>
#include <set>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

namespace tessera::engine {

class PrefixCache {
 public:
  explicit PrefixCache(int64_t block_tokens);

  int64_t block_tokens() const { return block_; }

  struct Match {
    uint64_t node = 0;   // deepest ready node (0: none)
    int64_t length = 0;  // tokens it covers (a multiple of block_tokens)
  };
  // Deepest ready node along tokens, covering at most `limit` tokens. Touches the nodes it uses.
  Match lookup(const std::string& salt, std::span<const int32_t> tokens, int64_t limit);

  // The node for `block` after `parent` (0: first block, salted), pending or ready; 0 if none.
  uint64_t find_child(uint64_t parent, const std::string& salt,
                      std::span<const int32_t> block) const;
  // A new pending node (the caller snapshots into it); `parent` must be alive (or 0).
  uint64_t add_pending(uint64_t parent, const std::string& salt, std::span<const int32_t> block);
  void mark_ready(uint64_t node);
  void discard_pending(uint64_t node);  // its step failed: the snapshot was never made
  bool alive(uint64_t node) const { return nodes_.count(node) != 0; }
  void touch(uint64_t node);

  // Removes the least recently used ready leaf and returns its id (0 when there is none).
  uint64_t evict_one();

  size_t size() const { return nodes_.size(); }
  size_t ready_nodes() const { return ready_count_; }

 private:
  struct Node {
    uint64_t parent = 0;
    uint64_t key = 0;
    std::string salt;  // first blocks only
    std::vector<int32_t> tokens;
    int64_t children = 0;
    bool ready = false;
    uint64_t last_use = 0;
  };
  uint64_t key_of(uint64_t parent, const std::string& salt, std::span<const int32_t> block) const;
  bool same(const Node& n, uint64_t parent, const std::string& salt,
            std::span<const int32_t> block) const;
  void remove(uint64_t id);
  void set_leaf_state(uint64_t id);  // keeps evictable_ in step with ready / children / last_use

  int64_t block_;
  uint64_t next_id_ = 1;
  uint64_t clock_ = 0;
  size_t ready_count_ = 0;
  std::unordered_map<uint64_t, Node> nodes_;
  std::unordered_map<uint64_t, uint64_t> by_key_;      // chained hash -> node
  std::set<std::pair<uint64_t, uint64_t>> evictable_;  // (last_use, id) of ready leaves
};

}  // namespace tessera::engine
