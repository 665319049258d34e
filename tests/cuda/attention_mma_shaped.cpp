#include "attention_mma_shaped.hpp"

#include <bit>
#include <cstdint>
#include <limits>

#include "test_device.hpp"

namespace tessera::cudatest {
namespace {

constexpr int32_t kPadding = 3;  // padding tokens past the batch

// rows of [rows, width] values: the case's then `extra` rows of `fill`.
std::vector<float> padded(const std::vector<float>& v, int64_t rows, int64_t extra, float fill) {
  std::vector<float> out(v);
  const int64_t width = rows > 0 ? static_cast<int64_t>(v.size()) / rows : 0;
  out.resize(static_cast<size_t>((rows + extra) * width), fill);
  return out;
}

std::string text(const ts_status& s) {
  return "status " + std::to_string(s.code) + " (" + (s.message ? s.message : "") + ")";
}

}  // namespace

std::string check_shaped_run(const AttentionInstance& inst, const HostCase& c,
                             const std::vector<float>& eager, int64_t eager_scored) {
  const ts_attention_batch batch = c.batch();
  const int64_t T = c.n_tokens, rows = T + kPadding;
  const int64_t width = static_cast<int64_t>(eager.size()) / T;
  const bool csa = c.layer.compress_ratio == 4;
  // The batch's extent (plugin_abi.h, ts_attention_shape), then room to spare.
  int64_t slots = 0, visible = 0;
  for (int32_t s = 0; s < batch.n_sequences; ++s) {
    const ts_attention_sequence& seq = batch.sequences[s];
    const int64_t last = seq.first_position + seq.n_queries - 1;
    slots += last - seq.window_first_position + 1 +
             (c.layer.compress_ratio > 0 ? c.visible(s, last) : 0);
    for (int64_t p = seq.first_position; p <= last; ++p) {
      visible += c.visible(s, p);
    }
  }
  ts_attention_shape shape{sizeof(ts_attention_shape), static_cast<int32_t>(rows), 2 * slots + 1,
                           2 * visible + 1};

  // Padding rows hold finite values the kernels must not attend with.
  DeviceArray<float> q(padded(c.q, T, kPadding, 0.5f));
  DeviceArray<float> index_q, index_w;
  DeviceArray<uint8_t> main_pool(c.main_pool), index_pool;
  if (csa) {
    index_q = DeviceArray<float>(padded(c.index_q, T, kPadding, 0.25f));
    index_w = DeviceArray<float>(padded(c.index_w, T, kPadding, 1.0f));
    index_pool = DeviceArray<uint8_t>(c.index_pool);
  }
  size_t ws_bytes = 0, host_bytes = 0;
  const ts_attention_table& table = inst.table();
  ts_status s = table.plan_shape(inst.get(), &c.layer, &shape, AttentionInstance::device(),
                                 &ws_bytes, &host_bytes);
  if (s.code != TS_OK) {
    return "plan_shape: " + text(s);
  }
  DeviceArray<uint8_t> workspace(ws_bytes);
  std::vector<uint8_t> host(host_bytes);
  ts_attention_inputs in =
      case_inputs(c, q.get(), index_q.get(), index_w.get(), main_pool.get(), index_pool.get());
  in.host_workspace = host.data();
  in.host_workspace_bytes = host.size();
  DeviceArray<float> out(static_cast<size_t>(rows * width));

  auto run = [&](uint32_t stages, const ts_attention_shape& sh, ts_attention_inputs& inputs,
                 int64_t* scored) {
    ts_attention_outputs o{};
    o.struct_size = sizeof o;
    o.out = out.get();
    const ts_status st =
        table.run_shaped(inst.get(), &c.layer, &batch, &sh, &inputs, &o, workspace.get(), ws_bytes,
                         AttentionInstance::device(), stages);
    synchronize();
    if (scored != nullptr) {
      *scored = o.entries_scored;
    }
    return st;
  };
  for (const bool split : {false, true}) {
    out.upload(std::vector<float>(out.size(), std::numeric_limits<float>::quiet_NaN()));
    int64_t scored = -1;
    if (split) {
      s = run(TS_ATTENTION_DESCRIBE, shape, in, &scored);
      if (s.code == TS_OK) {
        s = run(TS_ATTENTION_LAUNCH, shape, in, nullptr);
      }
    } else {
      s = run(TS_ATTENTION_DESCRIBE | TS_ATTENTION_LAUNCH, shape, in, &scored);
    }
    const std::string how = split ? "describe then launch" : "one call";
    if (s.code != TS_OK) {
      return how + ": " + text(s);
    }
    if (scored != eager_scored) {
      return how + ": entries_scored " + std::to_string(scored) + ", run() " +
             std::to_string(eager_scored);
    }
    const std::vector<float> got = out.download();
    for (size_t i = 0; i < eager.size(); ++i) {  // the bits, NaN included
      if (std::bit_cast<uint32_t>(got[i]) != std::bit_cast<uint32_t>(eager[i])) {
        return how + ": element " + std::to_string(i) + " (token " +
               std::to_string(static_cast<int64_t>(i) / width) + ") is " + std::to_string(got[i]) +
               ", run() wrote " + std::to_string(eager[i]);
      }
    }
    for (size_t i = eager.size(); i < got.size(); ++i) {
      if (got[i] != 0.0f) {
        return how + ": padding token " + std::to_string(static_cast<int64_t>(i) / width) +
               " holds " + std::to_string(got[i]) + ", not 0";
      }
    }
  }

  // Refusals, by name.
  auto refused = [&](const char* what, const ts_attention_shape& sh, ts_attention_inputs& inputs,
                     const char* must_contain) -> std::string {
    const ts_status st = run(TS_ATTENTION_DESCRIBE | TS_ATTENTION_LAUNCH, sh, inputs, nullptr);
    const std::string m = st.message ? st.message : "";
    if (st.code == TS_ERR_INVALID_ARGUMENT && m.find(must_contain) != std::string::npos) {
      return "";
    }
    return std::string(what) + ": want TS_ERR_INVALID_ARGUMENT naming '" + must_contain +
           "', got " + text(st);
  };
  ts_attention_shape small = shape;
  small.n_tokens = static_cast<int32_t>(T - 1);
  std::string why = T > 1 ? refused("a shape of one token fewer", small, in, "query tokens") : "";
  if (!why.empty()) {
    return why;
  }
  small = shape;
  small.n_slots = slots - 1;
  if (why = refused("a shape of one slot fewer", small, in, "cache slots"); !why.empty()) {
    return why;
  }
  ts_attention_inputs no_host = in;
  no_host.host_workspace = nullptr;
  no_host.host_workspace_bytes = 0;
  return refused("no host workspace", shape, no_host, "host workspace");
}

}  // namespace tessera::cudatest
