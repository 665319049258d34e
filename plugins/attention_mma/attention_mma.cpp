// Attention backend "mma" (CUDA), the implementation inside the plugin's CUDA module
// (mma_plugin.cpp forwards to it; tools/gpu builds it as a plugin of its own): the lightning
// indexer over the visible compressed entries, a top-k per token, then sparse attention with the
// sink over window + chosen compressed rows, as tensor-core kernels (mma.sync m16n8k16, bf16 x bf16
// -> fp32) reading the bf16 or fp8 latent cache pages in device memory. Same contract and results
// as the reference backend (docs/cuda.md):
//   - device.type CUDA: q, index_q, index_w, kv_pool, index_pool, layer->attn_sink, out->out,
//     out->selected and the workspace are device memory of device.ordinal; the batch and its
//     slot arrays are host memory (as for plan()).
//   - run() enqueues on device.stream and returns without waiting; the only host-to-device copy
//     is the work description (a few bytes per token and per slot), from pageable memory.
//   - The plugin allocates no device memory: the caller sizes the workspace with plan().
#include <cstddef>
#include <deque>
#include <string>
#include <utility>
#include <vector>

#include "attention_enqueue.hpp"
#include "device_probe.hpp"
#include "kernels/launch.hpp"
#include "mma_descriptor.hpp"
#include "tessera/plugin_sdk.hpp"
#include "work_plan.hpp"

namespace {

using tessera::sdk::fail;
using tessera::sdk::ok;
namespace mma = tessera::mma;
using mma::check_device_pointer;
using mma::cuda_error;
using mma::probe_device;

// What a work plan depends on besides the device limits: the layer's shapes and every
// sequence's extent (not its slots, which only fill_offsets reads).
std::vector<int64_t> plan_key(const ts_attention_layer& l, const ts_attention_batch& b) {
  std::vector<int64_t> key = {l.n_heads,        l.head_dim,      l.rope_dim,       l.window,
                              l.compress_ratio, l.index_n_heads, l.index_head_dim, l.index_topk,
                              b.n_sequences,    b.n_tokens};
  for (int32_t i = 0; i < b.n_sequences; ++i) {
    const ts_attention_sequence& q = b.sequences[i];
    key.insert(key.end(), {q.query_offset, q.n_queries, q.first_position, q.window_first_position,
                           q.n_compressed});
  }
  return key;
}

struct MmaAttention {
  tessera::sdk::Logger log;
  int32_t ordinal = 0;
  mma::DeviceLimits limits;
  // Host image of the workspace's metadata sections when the host gives no page-locked
  // workspace (ts_attention_inputs.host_workspace, ABI 1.4): pageable, so the runtime stages it.
  std::vector<uint8_t> staging;
  // The latest work plans by key, newest last: every layer of one ratio in a step has the same
  // key, so a step plans once per ratio (plan() and run() of each layer find it here).
  std::deque<std::pair<std::vector<int64_t>, mma::WorkPlan>> plans;
};

constexpr size_t kCachedPlans = 8;  // ratios 0, 4 and 128, eager and shaped, and spares

// The work plan of (layer, batch), built once per key; laid out in the shape's frame when one is
// given (a shaped run). Precondition: check_layer and check_batch returned "" (and check_shape).
// Null with *why set when the batch does not fit the shape.
mma::WorkPlan* plan_for(MmaAttention& impl, const ts_attention_layer& layer,
                        const ts_attention_batch& batch, const ts_attention_shape* shape = nullptr,
                        std::string* why = nullptr) {
  std::vector<int64_t> key = plan_key(layer, batch);
  if (shape != nullptr) {
    key.insert(key.end(), {-1, shape->n_tokens, shape->n_slots, shape->n_visible});
  }
  for (auto& [cached, plan] : impl.plans) {
    if (cached == key) {
      return &plan;
    }
  }
  mma::WorkPlan plan = mma::build_work_plan(layer, batch, impl.limits);
  if (shape != nullptr) {
    *why = mma::fit_to_shape(plan, mma::shaped_frame(layer, *shape, impl.limits), *shape);
    if (!why->empty()) {
      return nullptr;
    }
  }
  if (impl.plans.size() == kCachedPlans) {
    impl.plans.pop_front();
  }
  impl.plans.emplace_back(std::move(key), std::move(plan));
  return &impl.plans.back().second;
}

// The kv-cache formats into the plan: "bf16" and "fp8" records (kv_layouts.hpp;
// TS_ERR_UNSUPPORTED otherwise).
std::string read_layouts(const ts_attention_layer& layer, const ts_attention_inputs& in,
                         mma::WorkPlan& plan) {
  if (std::string why = mma::read_layout(in.kv.main_layout, layer.head_dim, "main", plan.kv_format);
      !why.empty()) {
    return why;
  }
  if (layer.compress_ratio == 4) {
    return mma::read_layout(in.kv.indexer_layout, layer.index_head_dim, "indexer", plan.key_format);
  }
  return "";
}

std::string check_pointers(const ts_attention_layer& layer, const ts_attention_inputs& in,
                           const ts_attention_outputs& out) {
  const bool csa = layer.compress_ratio == 4;
  struct Pointer {
    const void* p;
    const char* name;
    bool needed;
  };
  const Pointer pointers[] = {{in.q, "q", true},
                              {out.out, "out", true},
                              {in.kv_pool, "kv_pool", true},
                              {layer.attn_sink, "attn_sink", true},
                              {in.index_q, "index_q", csa},
                              {in.index_w, "index_w", csa},
                              {in.index_pool, "index_pool", csa}};
  for (const Pointer& ptr : pointers) {
    if (!ptr.needed) {
      continue;
    }
    if (ptr.p == nullptr) {
      return std::string(ptr.name) + " is null";
    }
    if (reinterpret_cast<uintptr_t>(ptr.p) % 16 != 0) {
      return std::string(ptr.name) + " must be 16-byte aligned";
    }
    if (std::string why = check_device_pointer(ptr.p, ptr.name); !why.empty()) {
      return why;
    }
  }
  return "";
}

ts_status check_support(const char*, ts_device device) {
  return tessera::sdk::guarded([&]() -> ts_status {
    if (device.type != TS_DEVICE_CUDA) {
      return fail(TS_ERR_UNSUPPORTED, "mma attention runs on CUDA devices only");
    }
    mma::DeviceLimits limits;
    if (std::string why = probe_device(device.ordinal, limits); !why.empty()) {
      return fail(TS_ERR_UNSUPPORTED, why);
    }
    return ok();
  });
}

ts_status create(const ts_host_api* host, const char*, ts_device device, ts_instance** out) {
  return tessera::sdk::guarded([&]() -> ts_status {
    if (device.type != TS_DEVICE_CUDA) {
      return fail(TS_ERR_UNSUPPORTED, "mma attention runs on CUDA devices only");
    }
    MmaAttention impl;
    impl.log = tessera::sdk::Logger(host, "mma");
    impl.ordinal = device.ordinal;
    if (std::string why = probe_device(device.ordinal, impl.limits); !why.empty()) {
      return fail(TS_ERR_UNSUPPORTED, why);
    }
    if (const cudaError_t e = cudaSetDevice(device.ordinal); e != cudaSuccess) {
      return fail(TS_ERR_UNSUPPORTED, cuda_error("cudaSetDevice", e));
    }
    if (const cudaError_t e = mma::kernel_image_status(); e != cudaSuccess) {
      return fail(TS_ERR_UNSUPPORTED, cuda_error("mma kernels cannot run on this device", e));
    }
    impl.log.info("CUDA device " + std::to_string(device.ordinal) + ": " +
                  std::to_string(impl.limits.sm_count) + " multiprocessors, " +
                  std::to_string(impl.limits.smem_per_block / 1024) +
                  " KiB shared memory per block");
    return tessera::sdk::create_instance<MmaAttention>(out, std::move(impl));
  });
}

void destroy(ts_instance* instance) { tessera::sdk::destroy_instance<MmaAttention>(instance); }

// The work plan of (layer, batch) after the checks plan() and plan_host() share.
ts_status checked_plan(ts_instance* self, const ts_attention_layer* layer,
                       const ts_attention_batch* batch, const void* out,
                       const mma::WorkPlan** plan) {
  if (layer == nullptr || batch == nullptr || out == nullptr) {
    return fail(TS_ERR_INVALID_ARGUMENT, "null layer, batch or output");
  }
  MmaAttention& impl = tessera::sdk::self<MmaAttention>(self);
  if (std::string why = mma::check_layer(*layer, impl.limits); !why.empty()) {
    return fail(TS_ERR_UNSUPPORTED, "mma attention: " + why);
  }
  if (std::string why = mma::check_batch(*layer, *batch); !why.empty()) {
    return fail(TS_ERR_INVALID_ARGUMENT, why);
  }
  *plan = plan_for(impl, *layer, *batch);
  return ok();
}

ts_status plan(ts_instance* self, const ts_attention_layer* layer, const ts_attention_batch* batch,
               size_t* workspace_bytes) {
  return tessera::sdk::guarded([&]() -> ts_status {
    const mma::WorkPlan* p = nullptr;
    if (ts_status s = checked_plan(self, layer, batch, workspace_bytes, &p); s.code != TS_OK) {
      return s;
    }
    *workspace_bytes = p->workspace.total;
    return ok();
  });
}

// The work description's bytes: run() copies them from the host workspace to the device.
ts_status plan_host(ts_instance* self, const ts_attention_layer* layer,
                    const ts_attention_batch* batch, ts_device, size_t* host_workspace_bytes) {
  return tessera::sdk::guarded([&]() -> ts_status {
    const mma::WorkPlan* p = nullptr;
    if (ts_status s = checked_plan(self, layer, batch, host_workspace_bytes, &p); s.code != TS_OK) {
      return s;
    }
    *host_workspace_bytes = p->workspace.metadata_bytes;
    return ok();
  });
}

// The checks every call on a layer shares: the device is this instance's, the layer supported.
ts_status check_call(const MmaAttention& impl, const ts_attention_layer& layer, ts_device device) {
  if (device.type != TS_DEVICE_CUDA) {
    return fail(TS_ERR_UNSUPPORTED, "mma attention runs on CUDA devices only");
  }
  if (device.ordinal != impl.ordinal) {
    return fail(TS_ERR_INVALID_ARGUMENT, "instance was created for CUDA device " +
                                             std::to_string(impl.ordinal) + ", run() got " +
                                             std::to_string(device.ordinal));
  }
  if (std::string why = mma::check_layer(layer, impl.limits); !why.empty()) {
    return fail(TS_ERR_UNSUPPORTED, "mma attention: " + why);
  }
  return ok();
}

// The caller's workspace holds `need` bytes of 256-byte aligned device memory.
ts_status check_workspace(const void* workspace, size_t bytes, size_t need) {
  if (bytes < need) {
    return fail(TS_ERR_INVALID_ARGUMENT, "workspace of " + std::to_string(bytes) +
                                             " bytes; the plan asked for " + std::to_string(need));
  }
  if (workspace == nullptr || reinterpret_cast<uintptr_t>(workspace) % 256 != 0) {
    return fail(TS_ERR_INVALID_ARGUMENT, "workspace must be 256-byte aligned device memory");
  }
  if (std::string why = check_device_pointer(workspace, "workspace"); !why.empty()) {
    return fail(TS_ERR_INVALID_ARGUMENT, why);
  }
  return ok();
}

// The host's page-locked workspace (ABI 1.4) when it gave one of at least `need` bytes; null
// when it gave none; *status set when it gave too little.
uint8_t* host_workspace(const ts_attention_inputs& in, size_t need, ts_status* status) {
  if (in.struct_size < offsetof(ts_attention_inputs, host_workspace_bytes) + sizeof(size_t) ||
      in.host_workspace == nullptr) {
    return nullptr;
  }
  if (in.host_workspace_bytes < need) {
    *status = fail(TS_ERR_INVALID_ARGUMENT,
                   "host workspace of " + std::to_string(in.host_workspace_bytes) +
                       " bytes; the plan asked for " + std::to_string(need));
    return nullptr;
  }
  return static_cast<uint8_t*>(in.host_workspace);
}

// The work description's copy from `image` and the kernels, on device.stream.
ts_status launch(const MmaAttention& impl, const mma::WorkPlan& plan,
                 const ts_attention_layer& layer, const ts_attention_inputs& in,
                 const ts_attention_outputs& out, void* workspace, ts_device device,
                 const uint8_t* image) {
  if (const cudaError_t e = cudaSetDevice(impl.ordinal); e != cudaSuccess) {
    return fail(TS_ERR_INTERNAL, cuda_error("cudaSetDevice", e));
  }
  auto* stream = static_cast<cudaStream_t>(device.stream);
  auto* base = static_cast<uint8_t*>(workspace);
  if (const cudaError_t e = cudaMemcpyAsync(base, image, plan.workspace.metadata_bytes,
                                            cudaMemcpyHostToDevice, stream);
      e != cudaSuccess) {
    return fail(TS_ERR_INTERNAL, cuda_error("copying the work description", e));
  }
  if (std::string why = mma::enqueue_attention(plan, layer, in, out, base, stream); !why.empty()) {
    return fail(TS_ERR_INTERNAL, why);
  }
  return ok();
}

ts_status run(ts_instance* self, const ts_attention_layer* layer, const ts_attention_batch* batch,
              const ts_attention_inputs* in, ts_attention_outputs* out, void* workspace,
              size_t workspace_bytes, ts_device device) {
  return tessera::sdk::guarded([&]() -> ts_status {
    MmaAttention& impl = tessera::sdk::self<MmaAttention>(self);
    if (layer == nullptr || batch == nullptr || in == nullptr || out == nullptr) {
      return fail(TS_ERR_INVALID_ARGUMENT, "null layer, batch, inputs or outputs");
    }
    if (ts_status s = check_call(impl, *layer, device); s.code != TS_OK) {
      return s;
    }
    if (std::string why = mma::check_batch(*layer, *batch); !why.empty()) {
      return fail(TS_ERR_INVALID_ARGUMENT, why);
    }
    mma::WorkPlan& plan = *plan_for(impl, *layer, *batch);
    if (std::string why = read_layouts(*layer, *in, plan); !why.empty()) {
      return fail(TS_ERR_UNSUPPORTED, why);
    }
    if (std::string why = check_pointers(*layer, *in, *out); !why.empty()) {
      return fail(TS_ERR_INVALID_ARGUMENT, why);
    }
    const bool csa = layer->compress_ratio == 4;
    if (std::string why = mma::fill_offsets(plan, *layer, *batch, *in->kv.main_layout,
                                            csa ? in->kv.indexer_layout : nullptr);
        !why.empty()) {
      return fail(TS_ERR_INVALID_ARGUMENT, why);
    }
    const mma::WorkspaceLayout& w = plan.workspace;
    out->entries_scored = 0;
    if (plan.tasks.empty() && workspace_bytes >= w.total) {
      return ok();
    }
    if (ts_status s = check_workspace(workspace, workspace_bytes, w.total); s.code != TS_OK) {
      return s;
    }
    // The work description: into the host's page-locked workspace when it gave one (the copy
    // reads it as the stream runs), else into the pageable staging vector.
    ts_status status = ok();
    uint8_t* image = host_workspace(*in, w.metadata_bytes, &status);
    if (status.code != TS_OK) {
      return status;
    }
    if (image == nullptr) {
      impl.staging.resize(w.metadata_bytes);
      image = impl.staging.data();
    }
    mma::pack_metadata(plan, image);
    if (ts_status s = launch(impl, plan, *layer, *in, *out, workspace, device, image);
        s.code != TS_OK) {
      return s;
    }
    out->entries_scored = plan.entries_scored;
    return ok();
  });
}

ts_status plan_shape(ts_instance* self, const ts_attention_layer* layer,
                     const ts_attention_shape* shape, ts_device device, size_t* workspace_bytes,
                     size_t* host_workspace_bytes) {
  return tessera::sdk::guarded([&]() -> ts_status {
    if (layer == nullptr || shape == nullptr || workspace_bytes == nullptr ||
        host_workspace_bytes == nullptr) {
      return fail(TS_ERR_INVALID_ARGUMENT, "null layer, shape or output");
    }
    const MmaAttention& impl = tessera::sdk::self<MmaAttention>(self);
    if (ts_status s = check_call(impl, *layer, device); s.code != TS_OK) {
      return s;
    }
    if (std::string why = mma::check_shape(*shape); !why.empty()) {
      return fail(TS_ERR_INVALID_ARGUMENT, why);
    }
    const mma::WorkPlan frame = mma::shaped_frame(*layer, *shape, impl.limits);
    *workspace_bytes = frame.workspace.total;
    *host_workspace_bytes = frame.workspace.metadata_bytes;
    return ok();
  });
}

// A shaped run (plugin_abi.h): DESCRIBE packs the batch's plan, laid out in the shape's frame,
// into the host workspace; LAUNCH copies that frame's metadata bytes and launches the frame's
// grids, whose spare blocks return at once (WorkCounts).
ts_status run_shaped(ts_instance* self, const ts_attention_layer* layer,
                     const ts_attention_batch* batch, const ts_attention_shape* shape,
                     const ts_attention_inputs* in, ts_attention_outputs* out, void* workspace,
                     size_t workspace_bytes, ts_device device, uint32_t stages) {
  return tessera::sdk::guarded([&]() -> ts_status {
    MmaAttention& impl = tessera::sdk::self<MmaAttention>(self);
    if (layer == nullptr || shape == nullptr || in == nullptr || out == nullptr) {
      return fail(TS_ERR_INVALID_ARGUMENT, "null layer, shape, inputs or outputs");
    }
    if (stages == 0 || (stages & ~(TS_ATTENTION_DESCRIBE | TS_ATTENTION_LAUNCH)) != 0) {
      return fail(TS_ERR_INVALID_ARGUMENT,
                  "stages must be TS_ATTENTION_DESCRIBE and/or TS_ATTENTION_LAUNCH, got " +
                      std::to_string(stages));
    }
    if (ts_status s = check_call(impl, *layer, device); s.code != TS_OK) {
      return s;
    }
    if (std::string why = mma::check_shape(*shape); !why.empty()) {
      return fail(TS_ERR_INVALID_ARGUMENT, why);
    }
    mma::WorkPlan frame = mma::shaped_frame(*layer, *shape, impl.limits);
    ts_status status = ok();
    uint8_t* image = host_workspace(*in, frame.workspace.metadata_bytes, &status);
    if (status.code != TS_OK) {
      return status;
    }
    if (image == nullptr) {
      return fail(TS_ERR_INVALID_ARGUMENT,
                  "a shaped run needs the page-locked host workspace plan_shape() asked for");
    }
    if ((stages & TS_ATTENTION_DESCRIBE) != 0) {
      if (batch == nullptr) {
        return fail(TS_ERR_INVALID_ARGUMENT, "null batch");
      }
      if (std::string why = mma::check_batch(*layer, *batch); !why.empty()) {
        return fail(TS_ERR_INVALID_ARGUMENT, why);
      }
      std::string why;
      mma::WorkPlan* plan = plan_for(impl, *layer, *batch, shape, &why);
      if (plan == nullptr) {
        return fail(TS_ERR_INVALID_ARGUMENT, "mma attention: " + why);
      }
      if (why = read_layouts(*layer, *in, *plan); !why.empty()) {
        return fail(TS_ERR_UNSUPPORTED, why);
      }
      const bool csa = layer->compress_ratio == 4;
      if (why = mma::fill_offsets(*plan, *layer, *batch, *in->kv.main_layout,
                                  csa ? in->kv.indexer_layout : nullptr);
          !why.empty()) {
        return fail(TS_ERR_INVALID_ARGUMENT, why);
      }
      mma::pack_metadata(*plan, image);
      out->entries_scored = plan->entries_scored;
    }
    if ((stages & TS_ATTENTION_LAUNCH) == 0) {
      return ok();
    }
    if (std::string why = read_layouts(*layer, *in, frame); !why.empty()) {
      return fail(TS_ERR_UNSUPPORTED, why);
    }
    if (std::string why = check_pointers(*layer, *in, *out); !why.empty()) {
      return fail(TS_ERR_INVALID_ARGUMENT, why);
    }
    if (ts_status s = check_workspace(workspace, workspace_bytes, frame.workspace.total);
        s.code != TS_OK) {
      return s;
    }
    return launch(impl, frame, *layer, *in, *out, workspace, device, image);
  });
}

std::string build_info_json() {
  std::string sm;
  const std::string archs = TESSERA_MMA_CUDA_ARCHS;
  for (size_t at = 0; at <= archs.size();) {
    const size_t end = std::min(archs.find_first_of(";, ", at), archs.size());
    if (end > at) {
      sm += (sm.empty() ? "\"" : ",\"") + archs.substr(at, end - at) + "\"";
    }
    at = end + 1;
  }
#ifdef TESSERA_DEVICE_EMULATION
  const std::string cuda = "\"emulated\"";
#else
  const std::string cuda = "\"" + std::to_string(CUDART_VERSION / 1000) + "." +
                           std::to_string(CUDART_VERSION % 1000 / 10) + "\"";
#endif
  return std::string("{\"compiler\":\"") + __VERSION__ + "\",\"cuda\":" + cuda + ",\"sm\":[" + sm +
         "]}";
}

const std::string kBuildInfo = build_info_json();

const ts_attention_table kTable = {
    sizeof(ts_attention_table), plan, run, plan_host, plan_shape, run_shaped};

const ts_plugin_descriptor kDescriptor = {
    sizeof(ts_plugin_descriptor),
    TS_ABI_MAJOR,
    TS_ABI_MINOR,
    TS_KIND_ATTENTION,
    tessera::mma::kPluginName,
    tessera::mma::kPluginVersion,
    kBuildInfo.c_str(),
    tessera::mma::kOptionsSchema,
    tessera::mma::kCapabilities,
    check_support,
    create,
    destroy,
    &kTable,
};

}  // namespace

TESSERA_DEFINE_PLUGIN(kDescriptor)
