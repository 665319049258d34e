#include "model/device_weight_views.hpp"

#include <fmt/format.h>

#include "util/check.hpp"

namespace tessera::dsv4 {
namespace {

using weights::DType;

class Binder {
 public:
  explicit Binder(const DeviceModelWeights& w) : w_(w) {}

  const DeviceTensor& tensor(const std::string& name) const {
    const DeviceTensor* t = w_.find(name);
    TS_CHECK(t != nullptr, "device forward: tensor '{}' is not on the device", name);
    return *t;
  }
  const std::string& key(const std::string& name) const { return w_.tensors.find(name)->first; }

  DeviceWeight weight(const std::string& name) const {
    const DeviceTensor& t = tensor(name);
    TS_CHECK(t.shape.size() == 2, "device forward: '{}' is not a matrix", name);
    DeviceWeight out;
    out.name = &key(name);
    out.data = t.data.data();
    out.out = t.shape[0];
    out.in = t.shape[1];
    switch (t.dtype) {
      case DType::BF16:
        out.format = DeviceWeight::Format::kBf16;
        break;
      case DType::F32:
        out.format = DeviceWeight::Format::kF32;
        break;
      case DType::F8_E4M3:
        out.format = DeviceWeight::Format::kFp8;
        break;
      case DType::I8:
        out.format = DeviceWeight::Format::kFp4;
        out.in *= 2;
        break;  // packed
      case DType::F4:
        out.format = DeviceWeight::Format::kFp4;
        break;
      default:
        TS_CHECK(false, "device forward: '{}' is {}, which no device kernel multiplies by", name,
                 weights::dtype_name(t.dtype));
    }
    if (out.format == DeviceWeight::Format::kFp8 || out.format == DeviceWeight::Format::kFp4) {
      TS_CHECK(t.scale.data() != nullptr && t.scale_dtype == DType::F8_E8M0,
               "device forward: '{}' needs UE8M0 (F8_E8M0) block scales, found {}", name,
               t.scale.data() == nullptr ? "none" : weights::dtype_name(t.scale_dtype));
      out.scale = t.scale.as<uint8_t>();
    }
    return out;
  }

  DeviceVector vector(const std::string& name) const {
    const DeviceTensor& t = tensor(name);
    TS_CHECK(t.dtype == DType::BF16 || t.dtype == DType::F32,
             "device forward: '{}' is {}; norms and the embedding must be BF16 or F32", name,
             weights::dtype_name(t.dtype));
    return {t.dtype == DType::BF16, t.data.data()};
  }

  const float* f32(const std::string& name) const {
    const DeviceTensor& t = tensor(name);
    TS_CHECK(t.dtype == DType::F32, "device forward: '{}' is {}, F32 expected", name,
             weights::dtype_name(t.dtype));
    return t.data.as<float>();
  }

  DeviceHyperConnection hyper_connection(const std::string& prefix) const {
    const DeviceTensor& fn = tensor(prefix + "_fn");
    return {f32(prefix + "_fn"), f32(prefix + "_base"), f32(prefix + "_scale"), fn.shape.at(0)};
  }

  DeviceCompressor compressor(const std::string& prefix) const {
    return {weight(prefix + "wkv.weight"), weight(prefix + "wgate.weight"), f32(prefix + "ape"),
            vector(prefix + "norm.weight")};
  }

  DeviceExpert expert(const std::string& prefix) const {
    return {weight(prefix + "w1.weight"), weight(prefix + "w2.weight"),
            weight(prefix + "w3.weight")};
  }

 private:
  const DeviceModelWeights& w_;
};

}  // namespace

DeviceWeight DeviceWeight::rows(int64_t first, int64_t count) const {
  TS_CHECK(first >= 0 && count > 0 && first + count <= out, "{}: rows [{}, {}) of {}",
           name ? *name : "weight", first, first + count, out);
  DeviceWeight s = *this;
  s.out = count;
  const auto* bytes = static_cast<const uint8_t*>(data);
  switch (format) {
    case Format::kBf16:
      s.data = bytes + first * in * 2;
      break;
    case Format::kF32:
      s.data = bytes + first * in * 4;
      break;
    case Format::kFp8:
      TS_CHECK(first % 128 == 0, "{}: FP8 rows from {} split a 128-row scale block",
               name ? *name : "weight", first);
      s.data = bytes + first * in;
      s.scale = scale + first / 128 * ((in + 127) / 128);
      break;
    case Format::kFp4:
      s.data = bytes + first * in / 2;
      s.scale = scale + first * (in / 32);
      break;
  }
  return s;
}

void linear(const device::DeviceOps& ops, const device::Stream& stream, const float* x,
            int64_t rows, const DeviceWeight& w, float* y) {
  switch (w.format) {
    case DeviceWeight::Format::kBf16:
      ops.linear_bf16(stream, x, rows, w.in, static_cast<const uint16_t*>(w.data), w.out, y);
      return;
    case DeviceWeight::Format::kF32:
      ops.linear_f32(stream, x, rows, w.in, static_cast<const float*>(w.data), w.out, y);
      return;
    case DeviceWeight::Format::kFp8:
      ops.linear_fp8(stream, x, rows, w.in, static_cast<const uint8_t*>(w.data), w.scale, w.out, y);
      return;
    case DeviceWeight::Format::kFp4:
      ops.linear_fp4(stream, x, rows, w.in, static_cast<const uint8_t*>(w.data), w.scale, w.out, y);
      return;
  }
}

void grouped_linear(const device::DeviceOps& ops, const device::Stream& stream, const float* x,
                    const DeviceExpertTable& table, int64_t experts, const int64_t* offsets,
                    float* y) {
  ops.grouped_linear(stream, table.format, x, table.in, table.weights, table.scales, experts,
                     offsets, table.out, y);
}

void rms_norm(const device::DeviceOps& ops, const device::Stream& stream, float* x, int64_t rows,
              int64_t width, const DeviceVector& w, float eps) {
  if (w.bf16) {
    ops.rms_norm_bf16(stream, x, rows, width, static_cast<const uint16_t*>(w.data), eps);
  } else {
    ops.rms_norm(stream, x, rows, width, static_cast<const float*>(w.data), eps);
  }
}

namespace {

// The pointer arrays of one projection of every expert, in device memory kept in `owned`.
DeviceExpertTable expert_table(const std::vector<DeviceExpert>& experts,
                               DeviceWeight DeviceExpert::*projection, device::Device& device,
                               const device::Stream& stream,
                               std::vector<device::DeviceBuffer>& owned) {
  DeviceExpertTable t;
  if (experts.empty()) return t;
  const DeviceWeight& first = experts.front().*projection;
  t.format = first.format;
  t.out = first.out;
  t.in = first.in;
  std::vector<const void*> pointers(2 * experts.size());
  for (size_t e = 0; e < experts.size(); ++e) {
    const DeviceWeight& w = experts[e].*projection;
    TS_CHECK(w.format == first.format && w.out == first.out && w.in == first.in,
             "{}: the routed experts differ in format or shape (expert 0: [{}, {}]; this one: "
             "[{}, {}]): the grouped expert product needs them alike",
             w.name ? *w.name : std::string("an expert weight"), first.out, first.in, w.out, w.in);
    pointers[e] = w.data;
    pointers[experts.size() + e] = w.scale;
  }
  device::DeviceBuffer& b = owned.emplace_back(device.allocate(pointers.size() * sizeof(void*)));
  device.copy(b.data(), pointers.data(), pointers.size() * sizeof(void*),
              device::CopyKind::kHostToDevice, stream);
  t.weights = static_cast<const void* const*>(b.data());
  t.scales = reinterpret_cast<const uint8_t* const*>(static_cast<const void* const*>(b.data()) +
                                                     experts.size());
  return t;
}

}  // namespace

DeviceModelView view_device_weights(const DeviceModelWeights& weights, const ModelConfig& c,
                                    device::Device& device, const device::Stream& stream,
                                    ExpertRange experts) {
  if (experts.count < 0) experts = {0, c.n_routed_experts};
  const Binder b(weights);
  DeviceModelView v;
  v.embed = b.vector("embed.weight");
  v.head = b.weight("head.weight");
  v.norm = b.vector("norm.weight");
  v.hc_head = {b.f32("hc_head_fn"), b.f32("hc_head_base"), b.f32("hc_head_scale"), c.hc_mult};
  for (int64_t i = 0; i < c.num_layers; ++i) {
    const std::string p = fmt::format("layers.{}.", i);
    DeviceLayerWeights& l = v.layers.emplace_back();
    l.attn_norm = b.vector(p + "attn_norm.weight");
    l.ffn_norm = b.vector(p + "ffn_norm.weight");
    l.hc_attn = b.hyper_connection(p + "hc_attn");
    l.hc_ffn = b.hyper_connection(p + "hc_ffn");
    DeviceAttentionWeights& a = l.attn;
    a.attn_sink = b.f32(p + "attn.attn_sink");
    a.wq_a = b.weight(p + "attn.wq_a.weight");
    a.q_norm = b.vector(p + "attn.q_norm.weight");
    a.wq_b = b.weight(p + "attn.wq_b.weight");
    a.wkv = b.weight(p + "attn.wkv.weight");
    a.kv_norm = b.vector(p + "attn.kv_norm.weight");
    a.wo_a = b.weight(p + "attn.wo_a.weight");
    a.wo_b = b.weight(p + "attn.wo_b.weight");
    const int64_t ratio = c.compress_ratio(i);
    if (ratio != 0) a.compressor = b.compressor(p + "attn.compressor.");
    if (ratio == 4) {
      a.index_wq_b = b.weight(p + "attn.indexer.wq_b.weight");
      a.index_weights_proj = b.weight(p + "attn.indexer.weights_proj.weight");
      a.index_compressor = b.compressor(p + "attn.indexer.compressor.");
    }
    DeviceMoeWeights& m = l.ffn;
    m.gate = b.weight(p + "ffn.gate.weight");
    if (c.is_hash_layer(i)) {
      const DeviceTensor& table = b.tensor(p + "ffn.gate.tid2eid");
      m.tid2eid = table.data.as<int32_t>();
      m.table_size = static_cast<int64_t>(table.data.bytes() / sizeof(int32_t));
    } else {
      m.bias = b.f32(p + "ffn.gate.bias");
    }
    m.shared = b.expert(p + "ffn.shared_experts.");
    m.first_expert = experts.first;
    for (int64_t e = experts.first; e < experts.first + experts.count; ++e)
      m.experts.push_back(b.expert(fmt::format("{}ffn.experts.{}.", p, e)));
    m.w1 = expert_table(m.experts, &DeviceExpert::w1, device, stream, v.expert_tables);
    m.w2 = expert_table(m.experts, &DeviceExpert::w2, device, stream, v.expert_tables);
    m.w3 = expert_table(m.experts, &DeviceExpert::w3, device, stream, v.expert_tables);
  }
  return v;
}

}  // namespace tessera::dsv4
