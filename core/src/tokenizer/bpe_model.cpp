#include "tokenizer/bpe_model.hpp"

#include <fmt/format.h>

#include <mutex>
#include <queue>
#include <shared_mutex>

#include "tokenizer/byte_level.hpp"
#include "tokenizer/utf8.hpp"
#include "util/check.hpp"

namespace tessera::tokenizer {
namespace {

// HF caches words shorter than 256 bytes, up to 10,000 of them (DEFAULT_CACHE_CAPACITY).
constexpr std::size_t kCacheMaxWordBytes = 256;
constexpr std::size_t kCacheCapacity = 10000;

}  // namespace

struct BpeModel::WordCache {
  mutable std::shared_mutex mutex;
  std::unordered_map<std::string, std::vector<int32_t>> words;

  bool find(const std::string& key, std::vector<int32_t>& out) const {
    std::shared_lock lock(mutex);
    auto it = words.find(key);
    if (it == words.end()) {
      return false;
    }
    out.insert(out.end(), it->second.begin(), it->second.end());
    return true;
  }
  void insert(std::string key, std::vector<int32_t> ids) {
    std::unique_lock lock(mutex);
    if (words.size() < kCacheCapacity) {
      words.emplace(std::move(key), std::move(ids));
    }
  }
};

BpeModel::BpeModel(std::unordered_map<std::string, int32_t> vocab,
                   const std::vector<std::pair<std::string, std::string>>& merges,
                   BpeOptions options)
    : vocab_(std::move(vocab)),
      options_(std::move(options)),
      cache_(std::make_unique<WordCache>()) {
  merges_.reserve(merges.size());
  for (std::size_t rank = 0; rank < merges.size(); ++rank) {
    const auto& [left, right] = merges[rank];
    const auto left_id = token_to_id(left);
    const auto right_id = token_to_id(right);
    const auto merged_id = token_to_id(left + right);
    TS_CHECK(left_id && right_id && merged_id,
             "model.merges[{}] (\"{} {}\"): token '{}' is not in model.vocab", rank, left, right,
             !left_id    ? left
             : !right_id ? right
                         : left + right);
    // A repeated pair keeps its last rank, as HF's HashMap collect does.
    merges_[pair_key(*left_id, *right_id)] = MergeTarget{static_cast<uint32_t>(rank), *merged_id};
  }
  if (options_.unk_token) {
    unk_id_ = token_to_id(*options_.unk_token);
    TS_CHECK(unk_id_.has_value(), "model.unk_token '{}' is not in model.vocab",
             *options_.unk_token);
  }
  for (unsigned b = 0; b < 256; ++b) {
    const auto id = token_to_id(byte_to_unicode_utf8(static_cast<uint8_t>(b)));
    byte_symbol_ids_[b] = id ? *id : -1;
  }
}

BpeModel::~BpeModel() = default;
BpeModel::BpeModel(BpeModel&&) noexcept = default;
BpeModel& BpeModel::operator=(BpeModel&&) noexcept = default;

std::optional<int32_t> BpeModel::token_to_id(std::string_view token) const {
  auto it = vocab_.find(std::string(token));
  if (it == vocab_.end()) {
    return std::nullopt;
  }
  return it->second;
}

// A character with no vocabulary entry (HF BPE::merge_word).
void BpeModel::add_missing_unit(std::string_view unit, std::vector<int32_t>& symbols,
                                std::optional<int32_t>& pending_unk) const {
  if (options_.byte_fallback) {
    std::vector<int32_t> bytes;
    for (char c : unit) {
      const auto id = token_to_id(fmt::format("<0x{:02X}>", static_cast<uint8_t>(c)));
      if (!id) {
        break;
      }
      bytes.push_back(*id);
    }
    if (bytes.size() == unit.size()) {
      symbols.insert(symbols.end(), bytes.begin(), bytes.end());
      return;
    }
  }
  if (!unk_id_) {
    return;  // no unk token: HF drops the character
  }
  if (pending_unk && !options_.fuse_unk) {
    symbols.push_back(*pending_unk);
  }
  pending_unk = *unk_id_;
}

void BpeModel::initial_symbols(std::string_view word, std::vector<int32_t>& symbols) const {
  std::optional<int32_t> pending_unk;
  auto add_known = [&](int32_t id) {
    if (pending_unk) {
      symbols.push_back(*pending_unk);
    }
    pending_unk.reset();
    symbols.push_back(id);
  };
  if (options_.byte_level) {
    for (char c : word) {
      const auto byte = static_cast<uint8_t>(c);
      if (byte_symbol_ids_[byte] >= 0) {
        add_known(byte_symbol_ids_[byte]);
      } else {
        add_missing_unit(byte_to_unicode_utf8(byte), symbols, pending_unk);
      }
    }
  } else {
    std::size_t i = 0;
    while (i < word.size()) {
      const std::size_t length = next_utf8_sequence(word.substr(i)).length;
      const std::string_view unit = word.substr(i, length);
      if (const auto id = token_to_id(unit)) {
        add_known(*id);
      } else {
        add_missing_unit(unit, symbols, pending_unk);
      }
      i += length;
    }
  }
  if (pending_unk) {
    symbols.push_back(*pending_unk);
  }
}

// HF Word::merge_all without dropout: pop the lowest (rank, position) candidate; skip it when the
// pair at that position has changed since it was queued; merge; queue the two new neighbours.
void BpeModel::merge_all(std::vector<int32_t>& symbols) const {
  const auto n = static_cast<int32_t>(symbols.size());
  if (n < 2) {
    return;
  }
  std::vector<int32_t> prev(n), next(n);
  for (int32_t i = 0; i < n; ++i) {
    prev[i] = i - 1;
    next[i] = i + 1 < n ? i + 1 : -1;
  }
  struct Candidate {
    uint32_t rank;
    int32_t pos;
    int32_t new_id;
    bool operator>(const Candidate& o) const {
      return rank != o.rank ? rank > o.rank : pos > o.pos;
    }
  };
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> queue;
  auto consider = [&](int32_t pos) {
    if (pos < 0 || next[pos] < 0) {
      return;
    }
    auto it = merges_.find(pair_key(symbols[pos], symbols[next[pos]]));
    if (it != merges_.end()) {
      queue.push({it->second.rank, pos, it->second.id});
    }
  };
  for (int32_t i = 0; i + 1 < n; ++i) {
    consider(i);
  }

  std::vector<bool> removed(n, false);
  while (!queue.empty()) {
    const Candidate top = queue.top();
    queue.pop();
    if (removed[top.pos] || next[top.pos] < 0) {
      continue;
    }
    const int32_t right = next[top.pos];
    auto it = merges_.find(pair_key(symbols[top.pos], symbols[right]));
    if (it == merges_.end() || it->second.id != top.new_id) {
      continue;  // stale entry
    }
    symbols[top.pos] = top.new_id;
    removed[right] = true;
    next[top.pos] = next[right];
    if (next[right] >= 0) {
      prev[next[right]] = top.pos;
    }
    consider(prev[top.pos]);
    consider(top.pos);
  }
  std::size_t kept = 0;
  for (int32_t i = 0; i < n; ++i) {
    if (!removed[i]) {
      symbols[kept++] = symbols[i];
    }
  }
  symbols.resize(kept);
}

void BpeModel::encode_word(const PreTokenizedWord& word, std::vector<int32_t>& out) const {
  std::string key;
  key.reserve(word.text.size() + 1);
  if (word.prefix_space) {
    key.push_back(' ');
  }
  key.append(word.text);
  if (key.empty()) {
    return;
  }

  if (options_.ignore_merges) {
    const auto id = token_to_id(options_.byte_level ? bytes_to_byte_level(key) : key);
    if (id) {
      out.push_back(*id);
      return;
    }
  }
  const bool cacheable = key.size() < kCacheMaxWordBytes;
  if (cacheable && cache_->find(key, out)) {
    return;
  }

  std::vector<int32_t> symbols;
  symbols.reserve(key.size());
  initial_symbols(key, symbols);
  merge_all(symbols);
  out.insert(out.end(), symbols.begin(), symbols.end());
  if (cacheable) {
    cache_->insert(std::move(key), std::move(symbols));
  }
}

}  // namespace tessera::tokenizer
