#include "tokenizer/pre_tokenizer.hpp"

#include <utility>

namespace tessera::tokenizer {
namespace {

// The pattern HF's ByteLevel pre-tokenizer uses when use_regex is true (GPT-2's encoder.py).
constexpr std::string_view kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

struct Piece {
  std::size_t begin, end;
  bool is_delimiter;
};

}  // namespace

void PreTokenizer::add_split(UnicodeRegex pattern, SplitBehavior behavior, bool invert) {
  steps_.push_back(SplitStep{std::move(pattern), behavior, invert});
}

void PreTokenizer::set_byte_level(bool add_prefix_space, bool use_regex) {
  byte_level_ = true;
  add_prefix_space_ = add_prefix_space;
  byte_level_regex_.clear();
  if (use_regex) {
    byte_level_regex_.push_back(
        SplitStep{UnicodeRegex(kGpt2Pattern), SplitBehavior::kIsolated, false});
  }
}

// NormalizedString::split of HF `tokenizers`: classify the piece into alternating delimiter /
// non-delimiter ranges, then merge them according to the behavior.
void PreTokenizer::apply(const SplitStep& step, std::string_view piece,
                         std::vector<std::pair<std::size_t, std::size_t>>& matches,
                         std::vector<std::string_view>& out) {
  matches.clear();
  step.pattern.find_all(piece, matches);
  std::vector<Piece> ranges;
  ranges.reserve(matches.size() * 2 + 1);
  std::size_t previous = 0;
  for (const auto& [begin, end] : matches) {
    if (previous != begin) {
      ranges.push_back({previous, begin, step.invert});
    }
    ranges.push_back({begin, end, !step.invert});
    previous = end;
  }
  if (previous != piece.size()) {
    ranges.push_back({previous, piece.size(), step.invert});
  }

  std::vector<std::pair<std::size_t, std::size_t>> kept;  // ranges that become pieces
  kept.reserve(ranges.size());
  switch (step.behavior) {
    case SplitBehavior::kIsolated:
      for (const Piece& r : ranges) {
        kept.emplace_back(r.begin, r.end);
      }
      break;
    case SplitBehavior::kRemoved:
      for (const Piece& r : ranges) {
        if (!r.is_delimiter) {
          kept.emplace_back(r.begin, r.end);
        }
      }
      break;
    case SplitBehavior::kContiguous: {
      bool previous_delimiter = false;
      for (const Piece& r : ranges) {
        if (r.is_delimiter == previous_delimiter && !kept.empty()) {
          kept.back().second = r.end;
        } else {
          kept.emplace_back(r.begin, r.end);
        }
        previous_delimiter = r.is_delimiter;
      }
      break;
    }
    case SplitBehavior::kMergedWithPrevious: {
      bool previous_delimiter = false;
      for (const Piece& r : ranges) {
        if (r.is_delimiter && !previous_delimiter && !kept.empty()) {
          kept.back().second = r.end;
        } else {
          kept.emplace_back(r.begin, r.end);
        }
        previous_delimiter = r.is_delimiter;
      }
      break;
    }
    case SplitBehavior::kMergedWithNext: {
      // Walk backwards: a delimiter joins the piece that follows it.
      bool next_delimiter = false;
      std::vector<std::pair<std::size_t, std::size_t>> reversed;
      for (auto it = ranges.rbegin(); it != ranges.rend(); ++it) {
        if (it->is_delimiter && !next_delimiter && !reversed.empty()) {
          reversed.back().first = it->begin;
        } else {
          reversed.emplace_back(it->begin, it->end);
        }
        next_delimiter = it->is_delimiter;
      }
      kept.assign(reversed.rbegin(), reversed.rend());
      break;
    }
  }
  for (const auto& [begin, end] : kept) {
    if (end > begin) {
      out.push_back(piece.substr(begin, end - begin));
    }
  }
}

void PreTokenizer::split(std::string_view segment, std::vector<PreTokenizedWord>& out) const {
  if (segment.empty()) {
    return;
  }
  std::vector<std::string_view> pieces{segment}, next;
  std::vector<std::pair<std::size_t, std::size_t>> scratch;
  for (const SplitStep& step : steps_) {
    next.clear();
    for (std::string_view piece : pieces) {
      apply(step, piece, scratch, next);
    }
    pieces.swap(next);
  }
  if (!byte_level_) {
    for (std::string_view piece : pieces) {
      out.push_back({piece, false});
    }
    return;
  }
  std::string with_space;
  for (std::string_view piece : pieces) {
    const bool prefix = add_prefix_space_ && piece.front() != ' ';
    if (byte_level_regex_.empty()) {
      out.push_back({piece, prefix});
      continue;
    }
    if (!prefix) {
      next.clear();
      apply(byte_level_regex_.front(), piece, scratch, next);
      for (std::string_view word : next) {
        out.push_back({word, false});
      }
      continue;
    }
    // HF prepends the space before the GPT-2 split, so the split sees it: run the regex on
    // " " + piece and map the words back onto `piece` (offset - 1).
    with_space.assign(" ");
    with_space.append(piece);
    next.clear();
    apply(byte_level_regex_.front(), with_space, scratch, next);
    for (std::string_view word : next) {
      const std::size_t begin = static_cast<std::size_t>(word.data() - with_space.data());
      if (begin > 0) {
        out.push_back({piece.substr(begin - 1, word.size()), false});
      } else if (word.size() == 1) {
        out.push_back({std::string_view(), true});  // the prefix space alone
      } else {
        out.push_back({piece.substr(0, word.size() - 1), true});
      }
    }
  }
}

}  // namespace tessera::tokenizer
