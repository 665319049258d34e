// The "mma" attention plugin as the registry loads it. It loads on every machine and links no
// NVIDIA library: the implementation (attention_mma.cpp, the work plan and the kernels) is its
// CUDA module, cuda/libtessera_attention_mma_cuda.so (nvcc) or
// cuda/libtessera_attention_mma_cuda_emulated.so (the same sources on the SIMT emulator), itself
// a complete plugin (it exports TS_PLUGIN_ENTRY_SYMBOL). create() opens the build the host asks
// for (ts_host_api.cuda_build) and every call of the instance is forwarded to the module's
// instance, statuses included. Modules are opened once per build and never unloaded.
#include <string>

#include "cuda_sibling.hpp"
#include "mma_descriptor.hpp"
#include "tessera/plugin_sdk.hpp"

namespace {

using tessera::sdk::fail;
using tessera::sdk::ok;
using Module = tessera::sdk::CudaSibling<ts_plugin_descriptor>;

struct Forwarded {
  const ts_plugin_descriptor* module = nullptr;
  ts_instance* inner = nullptr;
};

const char kBase[] = "tessera_attention_mma";

void anchor() {}  // an address inside this plugin: its module sits in cuda/ beside it

// The implementation of build `build`, or a refusal naming what was looked for.
ts_status open_module(int32_t build, const ts_plugin_descriptor** out) {
  static Module native(kBase, TS_PLUGIN_ENTRY_SYMBOL);
  static Module emulated(kBase, TS_PLUGIN_ENTRY_SYMBOL);
  std::string why;
  const ts_plugin_descriptor* d = (build == TS_CUDA_BUILD_EMULATED ? emulated : native)
                                      .get(reinterpret_cast<const void*>(&anchor), build, why);
  if (d == nullptr) {
    return fail(TS_ERR_UNSUPPORTED, "mma attention: " + why);
  }
  if (d->abi_major != TS_ABI_MAJOR || d->kind != TS_KIND_ATTENTION || d->functions == nullptr ||
      static_cast<const ts_attention_table*>(d->functions)->struct_size <
          sizeof(ts_attention_table)) {
    return fail(TS_ERR_UNSUPPORTED,
                "mma attention: its CUDA module is not an attention plugin of ABI " +
                    std::to_string(TS_ABI_MAJOR));
  }
  *out = d;
  return ok();
}

const ts_attention_table& table_of(const Forwarded& f) {
  return *static_cast<const ts_attention_table*>(f.module->functions);
}

// Which build serves CUDA is known at create() (from the host): either file will do here.
ts_status check_support(const char*, ts_device device) {
  return tessera::sdk::guarded([&]() -> ts_status {
    if (device.type != TS_DEVICE_CUDA) {
      return fail(TS_ERR_UNSUPPORTED, "mma attention runs on CUDA devices only");
    }
    const std::string looked =
        tessera::sdk::find_cuda_sibling(reinterpret_cast<const void*>(&anchor), kBase);
    if (!looked.empty()) {
      return fail(TS_ERR_UNSUPPORTED,
                  "mma attention: its CUDA module is not installed: looked for " + looked);
    }
    return ok();
  });
}

ts_status create(const ts_host_api* host, const char* options, ts_device device,
                 ts_instance** out) {
  return tessera::sdk::guarded([&]() -> ts_status {
    if (device.type != TS_DEVICE_CUDA) {
      return fail(TS_ERR_UNSUPPORTED, "mma attention runs on CUDA devices only");
    }
    Forwarded f;
    if (ts_status s = open_module(tessera::sdk::cuda_build_of(host), &f.module); s.code != TS_OK) {
      return s;
    }
    if (ts_status s = f.module->check_support(options, device); s.code != TS_OK) {
      return s;
    }
    if (ts_status s = f.module->create(host, options, device, &f.inner); s.code != TS_OK) {
      return s;
    }
    const ts_status s = tessera::sdk::create_instance<Forwarded>(out, f);
    if (s.code != TS_OK) {
      f.module->destroy(f.inner);
    }
    return s;
  });
}

void destroy(ts_instance* instance) {
  if (instance == nullptr) {
    return;
  }
  const Forwarded& f = tessera::sdk::self<Forwarded>(instance);
  f.module->destroy(f.inner);
  tessera::sdk::destroy_instance<Forwarded>(instance);
}

ts_status plan(ts_instance* self, const ts_attention_layer* layer, const ts_attention_batch* batch,
               size_t* workspace_bytes) {
  const Forwarded& f = tessera::sdk::self<Forwarded>(self);
  return table_of(f).plan(f.inner, layer, batch, workspace_bytes);
}

ts_status run(ts_instance* self, const ts_attention_layer* layer, const ts_attention_batch* batch,
              const ts_attention_inputs* in, ts_attention_outputs* out, void* workspace,
              size_t workspace_bytes, ts_device device) {
  const Forwarded& f = tessera::sdk::self<Forwarded>(self);
  return table_of(f).run(f.inner, layer, batch, in, out, workspace, workspace_bytes, device);
}

ts_status plan_host(ts_instance* self, const ts_attention_layer* layer,
                    const ts_attention_batch* batch, ts_device device,
                    size_t* host_workspace_bytes) {
  const Forwarded& f = tessera::sdk::self<Forwarded>(self);
  return table_of(f).plan_host(f.inner, layer, batch, device, host_workspace_bytes);
}

ts_status plan_shape(ts_instance* self, const ts_attention_layer* layer,
                     const ts_attention_shape* shape, ts_device device, size_t* workspace_bytes,
                     size_t* host_workspace_bytes) {
  const Forwarded& f = tessera::sdk::self<Forwarded>(self);
  return table_of(f).plan_shape(f.inner, layer, shape, device, workspace_bytes,
                                host_workspace_bytes);
}

ts_status run_shaped(ts_instance* self, const ts_attention_layer* layer,
                     const ts_attention_batch* batch, const ts_attention_shape* shape,
                     const ts_attention_inputs* in, ts_attention_outputs* out, void* workspace,
                     size_t workspace_bytes, ts_device device, uint32_t stages) {
  const Forwarded& f = tessera::sdk::self<Forwarded>(self);
  return table_of(f).run_shaped(f.inner, layer, batch, shape, in, out, workspace, workspace_bytes,
                                device, stages);
}

const ts_attention_table kTable = {
    sizeof(ts_attention_table), plan, run, plan_host, plan_shape, run_shaped};

const ts_plugin_descriptor kDescriptor = {
    sizeof(ts_plugin_descriptor),
    TS_ABI_MAJOR,
    TS_ABI_MINOR,
    TS_KIND_ATTENTION,
    tessera::mma::kPluginName,
    tessera::mma::kPluginVersion,
    "{\"compiler\":\"" __VERSION__ "\",\"cuda\":\"module\",\"sm\":[]}",
    tessera::mma::kOptionsSchema,
    tessera::mma::kCapabilities,
    check_support,
    create,
    destroy,
    &kTable,
};

}  // namespace

TESSERA_DEFINE_PLUGIN(kDescriptor)
