#include "model/dsv4_tensor_names.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <array>
#include <cctype>
#include <utility>

#include "util/check.hpp"

namespace tessera::dsv4 {
namespace {

using weights::DType;

// Prefix renames inside "layers.{i}." (transformers module path -> official), most specific
// first. Also used for "mtp.{i}." blocks.
constexpr std::array<std::pair<std::string_view, std::string_view>, 33> kLayerRenames{{
    {"input_layernorm.", "attn_norm."},
    {"post_attention_layernorm.", "ffn_norm."},
    {"attn_hc.fn", "hc_attn_fn"},
    {"attn_hc.base", "hc_attn_base"},
    {"attn_hc.scale", "hc_attn_scale"},
    {"ffn_hc.fn", "hc_ffn_fn"},
    {"ffn_hc.base", "hc_ffn_base"},
    {"ffn_hc.scale", "hc_ffn_scale"},
    {"self_attn.sinks", "attn.attn_sink"},
    {"self_attn.compressor.indexer.scorer.weights_proj.", "attn.indexer.weights_proj."},
    {"self_attn.compressor.indexer.q_b_proj.", "attn.indexer.wq_b."},
    {"self_attn.compressor.indexer.kv_proj.", "attn.indexer.compressor.wkv."},
    {"self_attn.compressor.indexer.gate_proj.", "attn.indexer.compressor.wgate."},
    {"self_attn.compressor.indexer.position_bias", "attn.indexer.compressor.ape"},
    {"self_attn.compressor.indexer.kv_norm.", "attn.indexer.compressor.norm."},
    {"self_attn.compressor.kv_proj.", "attn.compressor.wkv."},
    {"self_attn.compressor.gate_proj.", "attn.compressor.wgate."},
    {"self_attn.compressor.position_bias", "attn.compressor.ape"},
    {"self_attn.compressor.kv_norm.", "attn.compressor.norm."},
    {"self_attn.q_a_proj.", "attn.wq_a."},
    {"self_attn.q_a_norm.", "attn.q_norm."},
    {"self_attn.q_b_proj.", "attn.wq_b."},
    {"self_attn.kv_proj.", "attn.wkv."},
    {"self_attn.kv_norm.", "attn.kv_norm."},
    {"self_attn.o_a_proj.", "attn.wo_a."},
    {"self_attn.o_b_proj.", "attn.wo_b."},
    {"mlp.gate.e_score_correction_bias", "ffn.gate.bias"},
    {"mlp.gate.", "ffn.gate."},
    {"mlp.shared_experts.gate_proj.", "ffn.shared_experts.w1."},
    {"mlp.shared_experts.up_proj.", "ffn.shared_experts.w3."},
    {"mlp.shared_experts.down_proj.", "ffn.shared_experts.w2."},
    {"mlp.experts.", "ffn.experts."},  // stacked gate_up_proj/down_proj, or per-expert (below)
    // transformers 5.24 save_pretrained: its `.norm.` -> `.kv_norm.` rule run backwards.
    {"attn.norm.", "attn.kv_norm."},
}};

constexpr std::array<std::pair<std::string_view, std::string_view>, 3> kExpertProjRenames{
    {{"gate_proj.", "w1."}, {"up_proj.", "w3."}, {"down_proj.", "w2."}}};

constexpr std::array<std::pair<std::string_view, std::string_view>, 6> kTopRenames{{
    {"lm_head.weight", "head.weight"},
    {"embed_tokens.weight", "embed.weight"},
    {"hc_head.hc_fn", "hc_head_fn"},
    {"hc_head.hc_base", "hc_head_base"},
    {"hc_head.hc_scale", "hc_head_scale"},
    {"lm_head.weight_scale_inv", "head.scale"},
}};

bool consume(std::string_view& s, std::string_view prefix) {
  if (!s.starts_with(prefix)) {
    return false;
  }
  s.remove_prefix(prefix.size());
  return true;
}

// "layers.12." / "mtp.0." -> length of that block prefix, or 0.
std::size_t block_prefix_length(std::string_view name) {
  for (std::string_view head : {"layers.", "mtp."}) {
    if (!name.starts_with(head)) {
      continue;
    }
    std::size_t i = head.size();
    const std::size_t digits = i;
    while (i < name.size() && std::isdigit(static_cast<unsigned char>(name[i])) != 0) {
      ++i;
    }
    if (i > digits && i < name.size() && name[i] == '.') {
      return i + 1;
    }
  }
  return 0;
}

std::string rename_inside_block(std::string_view rest) {
  for (const auto& [from, to] : kLayerRenames) {
    std::string_view tail = rest;
    if (!consume(tail, from)) {
      continue;
    }
    std::string out = std::string(to) + std::string(tail);
    if (from == "mlp.experts.") {  // per-expert transformers names: experts.{e}.gate_proj.weight
      const std::size_t dot = tail.find('.');
      if (dot != std::string_view::npos && dot > 0) {
        std::string_view proj = tail.substr(dot + 1);
        for (const auto& [hf, official] : kExpertProjRenames) {
          if (consume(proj, hf)) {
            return fmt::format("{}{}{}{}", to, tail.substr(0, dot + 1), official, proj);
          }
        }
      }
    }
    return out;
  }
  return std::string(rest);
}

}  // namespace

std::string official_tensor_name(std::string_view stored) {
  std::string_view name = stored;
  consume(name, "model.");
  std::string out;
  for (const auto& [from, to] : kTopRenames) {
    if (name == from) {
      out = to;
    }
  }
  if (out.empty()) {
    const std::size_t block = block_prefix_length(name);
    out = block == 0 ? std::string(name)
                     : std::string(name.substr(0, block)) + rename_inside_block(name.substr(block));
  }
  constexpr std::string_view kScaleInv = ".weight_scale_inv";
  if (std::string_view(out).ends_with(kScaleInv)) {
    out.replace(out.size() - kScaleInv.size(), kScaleInv.size(), ".scale");
  }
  return out;
}

bool is_ignored_tensor(std::string_view official_name) { return official_name.starts_with("mtp."); }

std::string StoredTensor::where() const { return fmt::format("'{}' in {}", stored_name, file); }

namespace {

// Splits stacked transformers experts into per-expert official entries (contiguous slices):
// gate_up_proj [E, 2I, D] -> experts.e.w1 = rows [0, I), w3 = rows [I, 2I); down_proj [E, D, I]
// -> experts.e.w2.
void split_stacked(const std::string& block, const StoredTensor& stacked, bool gate_up,
                   std::map<std::string, StoredTensor>& out) {
  const auto bits = weights::dtype_bits(stacked.dtype);
  TS_CHECK(
      stacked.dtype == DType::F32 || stacked.dtype == DType::BF16 || stacked.dtype == DType::F16,
      "stacked expert tensor {} is {}; only F32/BF16/F16 stacked experts are supported "
      "(quantized experts must use the official per-expert layout)",
      stacked.where(), weights::dtype_name(stacked.dtype));
  TS_CHECK(stacked.shape.size() == 3, "stacked expert tensor {} has shape [{}], expected 3-D",
           stacked.where(), fmt::join(stacked.shape, ", "));
  const int64_t experts = stacked.shape[0];
  const int64_t rows = stacked.shape[1];
  const int64_t cols = stacked.shape[2];
  TS_CHECK(!gate_up || rows % 2 == 0,
           "stacked expert tensor {} has shape [{}]: gate_up_proj needs an even row count",
           stacked.where(), fmt::join(stacked.shape, ", "));
  const int64_t part_rows = gate_up ? rows / 2 : rows;
  const std::size_t part_bytes = static_cast<std::size_t>(part_rows * cols) * bits / 8;
  for (int64_t e = 0; e < experts; ++e) {
    const auto add = [&](std::string_view proj, std::size_t byte_offset) {
      StoredTensor part = stacked;
      part.stored_name = fmt::format("{}[{}]{}", stacked.stored_name, e,
                                     gate_up ? (proj == "w1" ? "[gate rows]" : "[up rows]") : "");
      part.shape = {part_rows, cols};
      part.bytes = stacked.bytes.subspan(byte_offset, part_bytes);
      const auto name = fmt::format("{}ffn.experts.{}.{}.weight", block, e, proj);
      TS_CHECK(out.emplace(name, std::move(part)).second,
               "tensor '{}' is stored twice: per expert and in {}", name, stacked.where());
    };
    const std::size_t base = static_cast<std::size_t>(e) * (gate_up ? 2 : 1) * part_bytes;
    if (gate_up) {
      add("w1", base);
      add("w3", base + part_bytes);
    } else {
      add("w2", base);
    }
  }
}

}  // namespace

std::map<std::string, StoredTensor> build_tensor_catalog(const weights::Checkpoint& ckpt) {
  std::map<std::string, StoredTensor> catalog;
  std::vector<std::pair<std::string, StoredTensor>> stacked;
  for (const auto& [stored_name, tensor] : ckpt.tensors()) {
    StoredTensor entry{stored_name, tensor.file_name(), tensor.info->dtype, tensor.info->shape,
                       tensor.bytes()};
    std::string official = official_tensor_name(stored_name);
    if (official.ends_with("ffn.experts.gate_up_proj") ||
        official.ends_with("ffn.experts.down_proj")) {
      stacked.emplace_back(std::move(official), std::move(entry));
      continue;
    }
    const auto [it, inserted] = catalog.try_emplace(official, entry);
    TS_CHECK(inserted, "tensor '{}' is stored twice: as {} and as {}", official, it->second.where(),
             entry.where());
  }
  for (const auto& [official, entry] : stacked) {
    const bool gate_up = official.ends_with("gate_up_proj");
    const std::string block =
        official.substr(0, official.size() - (gate_up ? std::string_view("ffn.experts.gate_up_proj")
                                                      : std::string_view("ffn.experts.down_proj"))
                                                 .size());
    split_stacked(block, entry, gate_up, catalog);
  }
  return catalog;
}

}  // namespace tessera::dsv4
