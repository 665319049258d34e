#include "plugins/host_services.hpp"

#include <spdlog/spdlog.h>

#include "device/cuda_build.hpp"
#include "ops/compute_threads.hpp"

namespace tessera {

namespace {

spdlog::level::level_enum to_spdlog(int32_t level) {
  switch (level) {
    case TS_LOG_DEBUG:
      return spdlog::level::debug;
    case TS_LOG_INFO:
      return spdlog::level::info;
    case TS_LOG_WARN:
      return spdlog::level::warn;
    default:
      return spdlog::level::err;
  }
}

// Called from plugin threads: must not throw back across the C boundary.
void log_from_plugin(void* ctx, int32_t level, const char* /*plugin_name*/,
                     const char* message) noexcept {
  try {
    const auto* name = static_cast<const std::string*>(ctx);
    spdlog::default_logger_raw()->log(to_spdlog(level), "[{}] {}", name ? *name : "plugin",
                                      message ? message : "");
  } catch (...) {
  }
}

void parallel_for_plugin(void* /*ctx*/, int64_t n, void (*fn)(void*, int64_t), void* arg) {
  ops::parallel_for(n, ops::compute_threads(), [&](int64_t item) { fn(arg, item); });
}

int32_t cuda_build_of_process(void* /*ctx*/) noexcept { return device::process_cuda_build(); }

}  // namespace

ts_host_api make_host_api(const std::string* plugin_name) noexcept {
  ts_host_api api{};
  api.struct_size = sizeof(ts_host_api);
  api.abi_major = TS_ABI_MAJOR;
  api.abi_minor = TS_ABI_MINOR;
  api.ctx = const_cast<std::string*>(plugin_name);
  api.log = &log_from_plugin;
  api.parallel_for = &parallel_for_plugin;
  api.cuda_build = &cuda_build_of_process;
  return api;
}

}  // namespace tessera
