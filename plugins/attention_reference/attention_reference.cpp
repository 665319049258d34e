// Attention backend "reference" (CPU): the lightning indexer over the *visible* compressed
// entries only, then sparse attention with the sink over window + selected compressed entries.
// Reads any kv-cache format through the format plugin's load() (ts_kv_reader), so it is the
// yardstick for every cache format and every faster backend. On a CUDA device the same arithmetic
// runs as kernels of the plugin's CUDA module (device_run.hpp), loaded only for a CUDA device.
#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "cuda_sibling.hpp"
#include "device_run.hpp"
#include "reference_kernels.hpp"
#include "sequence_extent.hpp"
#include "tessera/plugin_sdk.hpp"

namespace {

using tessera::sdk::fail;
using tessera::sdk::ok;

// Below this much work (query x key x head x dim multiply-adds) a batch runs on the caller's
// thread alone: handing sequences to the host's threads costs a few microseconds, and this much
// work (plus the kv loads and the indexer that come with it) ~25 us. (At 2^21, ~0.8 ms, a
// 64-sequence decode of short contexts would run on one thread while the other core waits.)
constexpr int64_t kDefaultParallelMinWork = int64_t{1} << 16;  // = the schema's default below

using CudaModule = tessera::sdk::CudaSibling<ts_reference_cuda_api>;

struct ReferenceAttention {
  tessera::sdk::Logger log;
  int64_t parallel_min_work = kDefaultParallelMinWork;  // option "parallel_min_work"
  const ts_host_api* host = nullptr;                    // its parallel_for runs the sequences
  ts_device device{TS_DEVICE_CPU, 0, nullptr};          // the device of create()
  const ts_reference_cuda_api* cuda = nullptr;          // CUDA instances: the plugin's module
  int64_t cuda_max_rows = 0;                            // rows one query may attend there
};

// Loads the plugin's CUDA module of the host's build, once per process (kept for its life).
ts_status cuda_module(const ts_host_api* host, int32_t ordinal, const ts_reference_cuda_api** api,
                      int64_t* max_rows) {
  static CudaModule native("tessera_attention_reference", TS_REFERENCE_CUDA_ENTRY_SYMBOL);
  static CudaModule emulated("tessera_attention_reference", TS_REFERENCE_CUDA_ENTRY_SYMBOL);
  const int32_t build = tessera::sdk::cuda_build_of(host);
  std::string why;
  *api = (build == TS_CUDA_BUILD_EMULATED ? emulated : native)
             .get(reinterpret_cast<const void*>(&cuda_module), build, why);
  if (*api == nullptr) {
    return fail(TS_ERR_UNSUPPORTED, "reference attention on CUDA: " + why);
  }
  if (const char* e = (*api)->check_device(ordinal); e != nullptr) {
    return fail(TS_ERR_UNSUPPORTED, std::string("reference attention: ") + e);
  }
  if (const char* e = (*api)->max_rows(ordinal, max_rows); e != nullptr) {
    return fail(TS_ERR_UNSUPPORTED, std::string("reference attention: ") + e);
  }
  return ok();
}

// Options: {"parallel_min_work": integer >= 0} (0 splits every batch of >= 2 sequences; tests).
ts_status parse_options(const char* options_json, int64_t& parallel_min_work) {
  parallel_min_work = kDefaultParallelMinWork;
  if (options_json == nullptr || options_json[0] == '\0') {
    return ok();
  }
  const auto json = nlohmann::json::parse(options_json, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded() || !(json.is_object() || json.is_null())) {
    return fail(TS_ERR_INVALID_ARGUMENT,
                std::string("reference attention options must be a JSON object: ") + options_json);
  }
  if (json.is_null()) {
    return ok();
  }
  for (const auto& [key, value] : json.items()) {
    if (key != "parallel_min_work") {
      return fail(TS_ERR_INVALID_ARGUMENT,
                  "unknown reference attention option '" + key + "' (known: parallel_min_work)");
    }
    if (!value.is_number_integer() || value.get<int64_t>() < 0) {
      return fail(TS_ERR_INVALID_ARGUMENT,
                  "option 'parallel_min_work' must be an integer >= 0, got " + value.dump());
    }
    parallel_min_work = value.get<int64_t>();
  }
  return ok();
}

std::string describe_current_exception() {
  try {
    throw;
  } catch (const std::exception& e) {
    return std::string("attention failed: ") + e.what();
  } catch (...) {
    return "attention failed: unknown exception";
  }
}

using tessera::reference::extent_of;
using tessera::reference::SequenceExtent;

ts_status validate(const ts_attention_layer* layer, const ts_attention_batch* batch) {
  if (layer == nullptr || batch == nullptr) {
    return fail(TS_ERR_INVALID_ARGUMENT, "null layer or batch");
  }
  if (layer->compress_ratio != 0 && layer->compress_ratio != 4 && layer->compress_ratio != 128) {
    return fail(TS_ERR_UNSUPPORTED,
                "compress_ratio must be 0, 4 or 128, got " + std::to_string(layer->compress_ratio));
  }
  for (int32_t s = 0; s < batch->n_sequences; ++s) {
    const ts_attention_sequence& seq = batch->sequences[s];
    const int64_t lowest = std::max<int64_t>(0, seq.first_position - layer->window + 1);
    if (seq.window_first_position > lowest || seq.n_queries <= 0) {
      return fail(TS_ERR_INVALID_ARGUMENT,
                  "sequence " + std::to_string(s) + ": window slots start at position " +
                      std::to_string(seq.window_first_position) + " but position " +
                      std::to_string(lowest) + " is needed");
    }
    if (seq.query_offset < 0 || seq.query_offset + seq.n_queries > batch->n_tokens) {
      return fail(TS_ERR_INVALID_ARGUMENT,
                  "sequence " + std::to_string(s) + ": queries out of range");
    }
  }
  return ok();
}

ts_status plan(ts_instance* self, const ts_attention_layer* layer, const ts_attention_batch* batch,
               size_t* workspace_bytes) {
  return tessera::sdk::guarded([&]() -> ts_status {
    if (ts_status s = validate(layer, batch); s.code != TS_OK) {
      return s;
    }
    const ReferenceAttention& impl = tessera::sdk::self<ReferenceAttention>(self);
    if (impl.cuda != nullptr) {
      if (std::string why = tessera::reference::check_rows_fit(*layer, *batch, impl.cuda_max_rows);
          !why.empty()) {
        return fail(TS_ERR_UNSUPPORTED, "reference attention on CUDA: " + why);
      }
      *workspace_bytes = tessera::reference::device_workspace_bytes(*layer, *batch);
      return ok();
    }
    size_t most = 0;
    for (int32_t s = 0; s < batch->n_sequences; ++s) {
      const SequenceExtent e = extent_of(*layer, batch->sequences[s]);
      const size_t floats = static_cast<size_t>((e.n_window + e.n_compressed) * layer->head_dim +
                                                e.n_compressed * layer->index_head_dim);
      most = std::max(most, floats * sizeof(float));
    }
    *workspace_bytes = most;
    return ok();
  });
}

ts_status load_rows(const ts_kv_reader& kv, const ts_kv_layout* layout, const uint8_t* pool,
                    const int64_t* slots, int64_t n, float* out, ts_device device) {
  if (n == 0) {
    return ok();
  }
  return kv.table->load(kv.instance, layout, pool, slots, n, out, device);
}

// Attends the sequences [begin, end) of the batch; ws is this caller's scratch (plan()'s size).
ts_status run_sequences(const ts_attention_layer* layer, const ts_attention_batch* batch,
                        const ts_attention_inputs* in, ts_attention_outputs* out, int32_t begin,
                        int32_t end, float* ws, size_t workspace_bytes, ts_device device,
                        int64_t* entries_scored) {
  const int32_t H = layer->n_heads, D = layer->head_dim, m = layer->compress_ratio;
  const int32_t IH = layer->index_n_heads, ID = layer->index_head_dim;
  std::vector<const float*> rows;
  for (int32_t s = begin; s < end; ++s) {
    const ts_attention_sequence& seq = batch->sequences[s];
    const SequenceExtent e = extent_of(*layer, seq);
    const size_t need =
        static_cast<size_t>((e.n_window + e.n_compressed) * D + e.n_compressed * ID) *
        sizeof(float);
    if (need > workspace_bytes) {
      return fail(TS_ERR_INVALID_ARGUMENT, "workspace smaller than plan()");
    }
    float* window_rows = ws;                             // [n_window, D]
    float* comp_rows = ws + e.n_window * D;              // [n_compressed, D]
    float* index_keys = comp_rows + e.n_compressed * D;  // [n_compressed, ID]
    ts_status st = load_rows(in->kv, in->kv.main_layout, in->kv_pool, seq.window_slots, e.n_window,
                             window_rows, device);
    if (st.code != TS_OK) {
      return st;
    }
    st = load_rows(in->kv, in->kv.main_layout, in->kv_pool, seq.compressed_slots, e.n_compressed,
                   comp_rows, device);
    if (st.code != TS_OK) {
      return st;
    }
    if (m == 4) {
      st = load_rows(in->kv, in->kv.indexer_layout, in->index_pool, seq.indexer_slots,
                     e.n_compressed, index_keys, device);
      if (st.code != TS_OK) {
        return st;
      }
    }
    for (int32_t i = 0; i < seq.n_queries; ++i) {
      const int64_t p = seq.first_position + i;
      const int64_t token = seq.query_offset + i;
      rows.clear();
      const int64_t lo = std::max<int64_t>(0, p - layer->window + 1);
      for (int64_t pos = lo; pos <= p; ++pos) {
        rows.push_back(window_rows + (pos - seq.window_first_position) * D);
      }
      const int64_t visible = m > 0 ? std::min<int64_t>(e.n_compressed, (p + 1) / m) : 0;
      int32_t* selected = out->selected ? out->selected + token * layer->index_topk : nullptr;
      if (m == 4) {
        const auto pick = tessera::reference::indexer_select(
            in->index_q + token * IH * ID, in->index_w + token * IH, IH, ID, index_keys, visible,
            layer->index_topk);
        *entries_scored += visible;
        for (int32_t k : pick) {
          rows.push_back(comp_rows + static_cast<int64_t>(k) * D);
        }
        if (selected) {
          for (int32_t j = 0; j < layer->index_topk; ++j) {
            selected[j] = j < static_cast<int32_t>(pick.size()) ? pick[j] : -1;
          }
        }
      } else {
        for (int64_t k = 0; k < visible; ++k) {
          rows.push_back(comp_rows + k * D);
        }
      }
      tessera::reference::attend_with_sink(in->q + token * H * D, H, D, rows.data(),
                                           static_cast<int64_t>(rows.size()), layer->softmax_scale,
                                           layer->attn_sink, out->out + token * H * D);
    }
  }
  return ok();
}

ts_status run(ts_instance* self, const ts_attention_layer* layer, const ts_attention_batch* batch,
              const ts_attention_inputs* in, ts_attention_outputs* out, void* workspace,
              size_t workspace_bytes, ts_device device) {
  return tessera::sdk::guarded([&]() -> ts_status {
    if (ts_status s = validate(layer, batch); s.code != TS_OK) {
      return s;
    }
    if (in == nullptr || out == nullptr) {
      return fail(TS_ERR_INVALID_ARGUMENT, "null inputs or outputs");
    }
    const ReferenceAttention& impl = tessera::sdk::self<ReferenceAttention>(self);
    if (device.type != impl.device.type || device.ordinal != impl.device.ordinal) {
      const std::string created = impl.device.type == TS_DEVICE_CUDA
                                      ? "CUDA device " + std::to_string(impl.device.ordinal)
                                      : std::string("the CPU");
      return fail(TS_ERR_INVALID_ARGUMENT, "reference attention: the instance was created for " +
                                               created +
                                               "; run() got another device (plan() sizes the "
                                               "workspace per device)");
    }
    out->entries_scored = 0;
    if (impl.cuda != nullptr) {
      if (std::string why = tessera::reference::check_rows_fit(*layer, *batch, impl.cuda_max_rows);
          !why.empty()) {
        return fail(TS_ERR_UNSUPPORTED, "reference attention on CUDA: " + why);
      }
      return tessera::reference::run_on_device(*impl.cuda, *layer, *batch, *in, *out, workspace,
                                               workspace_bytes, device);
    }
    auto* ws = static_cast<float*>(workspace);
    const int32_t n = batch->n_sequences;
    // Sequences are independent (each writes only its own query rows), so a large batch is shared
    // out by sequence over the host's compute threads (the ones its GEMMs use). Every token's
    // arithmetic is the same on any thread, so the output is bit-identical to one thread's.
    int64_t total = 0;
    for (int32_t s = 0; s < n; ++s) {
      const SequenceExtent e = extent_of(*layer, batch->sequences[s]);
      total += int64_t{batch->sequences[s].n_queries} * (e.n_window + e.n_compressed) *
               layer->n_heads * layer->head_dim;
    }
    if (n < 2 || total < impl.parallel_min_work) {
      return run_sequences(layer, batch, in, out, 0, n, ws, workspace_bytes, device,
                           &out->entries_scored);
    }
    // The caller's workspace serves the calling thread; other threads keep their own.
    const std::thread::id caller = std::this_thread::get_id();
    std::atomic<int64_t> scored{0};
    std::mutex failure_mutex;
    ts_status_code failure_code = TS_OK;
    std::string failure_message;
    tessera::sdk::parallel_for(impl.host, n, [&](int64_t s) {
      try {
        thread_local std::vector<float> own;
        float* w = ws;
        if (std::this_thread::get_id() != caller) {
          own.resize(workspace_bytes / sizeof(float) + 1);
          w = own.data();
        }
        int64_t mine = 0;
        const auto seq = static_cast<int32_t>(s);
        const ts_status st =
            run_sequences(layer, batch, in, out, seq, seq + 1, w, workspace_bytes, device, &mine);
        scored += mine;
        if (st.code != TS_OK) {
          const std::lock_guard<std::mutex> lock(failure_mutex);
          if (failure_code == TS_OK) {
            failure_code = static_cast<ts_status_code>(st.code);
            failure_message = st.message ? st.message : "attention failed";
          }
        }
      } catch (...) {  // bad_alloc of a workspace, most likely; the first failure is reported
        const std::lock_guard<std::mutex> lock(failure_mutex);
        if (failure_code == TS_OK) {
          failure_code = TS_ERR_INTERNAL;
          failure_message = describe_current_exception();
        }
      }
    });
    if (failure_code != TS_OK) {
      return fail(failure_code, failure_message);
    }
    out->entries_scored = scored.load();
    return ok();
  });
}

ts_status check_support(const char* options_json, ts_device device) {
  return tessera::sdk::guarded([&]() -> ts_status {
    if (device.type == TS_DEVICE_CUDA) {
      // Which build serves CUDA is known at create() (from the host): either file will do here.
      const std::string looked = tessera::sdk::find_cuda_sibling(
          reinterpret_cast<const void*>(&cuda_module), "tessera_attention_reference");
      if (!looked.empty())
        return fail(TS_ERR_UNSUPPORTED,
                    "reference attention: its CUDA module is not installed: looked for " + looked);
    } else if (device.type != TS_DEVICE_CPU) {
      return fail(TS_ERR_UNSUPPORTED, "reference attention: CPU and CUDA devices only");
    }
    int64_t parallel_min_work = 0;
    return parse_options(options_json, parallel_min_work);
  });
}

ts_status create(const ts_host_api* host, const char* options_json, ts_device device,
                 ts_instance** out) {
  return tessera::sdk::guarded([&]() -> ts_status {
    int64_t parallel_min_work = 0;
    if (ts_status s = parse_options(options_json, parallel_min_work); s.code != TS_OK) {
      return s;
    }
    ReferenceAttention impl{tessera::sdk::Logger(host, "reference"), parallel_min_work, host};
    impl.device = ts_device{device.type, device.ordinal, nullptr};
    if (device.type == TS_DEVICE_CUDA) {
      if (ts_status s = cuda_module(host, device.ordinal, &impl.cuda, &impl.cuda_max_rows);
          s.code != TS_OK) {
        return s;
      }
    } else if (device.type != TS_DEVICE_CPU) {
      return fail(TS_ERR_UNSUPPORTED, "reference attention: CPU and CUDA devices only");
    }
    return tessera::sdk::create_instance<ReferenceAttention>(out, std::move(impl));
  });
}

void destroy(ts_instance* instance) {
  tessera::sdk::destroy_instance<ReferenceAttention>(instance);
}

const ts_attention_table kTable = {sizeof(ts_attention_table), plan, run};

const ts_plugin_descriptor kDescriptor = {
    sizeof(ts_plugin_descriptor),
    TS_ABI_MAJOR,
    TS_ABI_MINOR,
    TS_KIND_ATTENTION,
    "reference",
    "1.0.0",
    "{\"compiler\":\"" __VERSION__ "\",\"cuda\":null,\"sm\":[]}",
    R"({"type":"object","properties":{"parallel_min_work":{"type":"integer","minimum":0,)"
    R"("default":65536,"description":"batches with less attention work (multiply-adds) run )"
    R"(on one thread; larger ones are shared out by sequence over the host compute threads"}},"additionalProperties":false})",
    R"({"devices":["cpu","cuda"],"kv_formats":["any"],"cuda_graph":false})",
    check_support,
    create,
    destroy,
    &kTable,
};

}  // namespace

TESSERA_DEFINE_PLUGIN(kDescriptor)
