// Header-only C++ helpers for plugin authors: statuses with plugin-owned messages, an exception
// guard for every C entry, a tagged logger and the entry-point macro. Include this in a plugin;
// never link the core. See docs/plugins.md and examples/plugin-template.
#pragma once

#include <cstddef>
#include <exception>
#include <memory>
#include <new>
#include <string>
#include <string_view>
#include <utility>

#include "tessera/plugin_abi.h"

namespace tessera::sdk {

[[nodiscard]] inline ts_status ok() noexcept { return ts_status{TS_OK, nullptr}; }

// The message lives in a thread-local buffer of this plugin: valid until the next failing call
// from the same thread, as the ABI promises.
[[nodiscard]] inline ts_status fail(ts_status_code code, std::string message) noexcept {
  thread_local std::string buffer;
  try {
    buffer = std::move(message);
  } catch (...) {
    return ts_status{code, "out of memory while formatting an error"};
  }
  return ts_status{code, buffer.c_str()};
}

// Runs f (which returns ts_status) and turns any exception into a status: nothing unwinds across
// the C boundary.
template <class F>
[[nodiscard]] ts_status guarded(F&& f) noexcept {
  try {
    return std::forward<F>(f)();
  } catch (const std::bad_alloc&) {
    return fail(TS_ERR_OUT_OF_MEMORY, "out of memory");
  } catch (const std::exception& e) {
    return fail(TS_ERR_INTERNAL, std::string("exception inside plugin: ") + e.what());
  } catch (...) {
    return fail(TS_ERR_INTERNAL, "unknown exception inside plugin");
  }
}

// Logs through the host's table; silently does nothing when the host gave no logger.
class Logger {
 public:
  Logger() = default;
  Logger(const ts_host_api* host, const char* plugin_name) : host_(host), name_(plugin_name) {}
  void log(ts_log_level level, std::string_view message) const noexcept {
    if (host_ == nullptr || host_->log == nullptr) { return;
}
    try {
      const std::string text(message);
      host_->log(host_->ctx, level, name_, text.c_str());
    } catch (...) {
    }
  }
  void info(std::string_view m) const noexcept { log(TS_LOG_INFO, m); }
  void warn(std::string_view m) const noexcept { log(TS_LOG_WARN, m); }
  void error(std::string_view m) const noexcept { log(TS_LOG_ERROR, m); }

 private:
  const ts_host_api* host_ = nullptr;
  const char* name_ = "";
};

// Runs f(i) for every i in [0, n) through the host's parallel_for when it has one (the host's
// compute threads), else on this thread. f must not throw (catch inside and record the failure).
template <class F>
void parallel_for(const ts_host_api* host, int64_t n, const F& f) {
  constexpr size_t kNeeded = offsetof(ts_host_api, parallel_for) + sizeof(host->parallel_for);
  if (host != nullptr && host->struct_size >= kNeeded && host->parallel_for != nullptr) {
    host->parallel_for(
        host->ctx, n, [](void* arg, int64_t i) { (*static_cast<const F*>(arg))(i); },
        const_cast<F*>(&f));
    return;
  }
  for (int64_t i = 0; i < n; ++i) { f(i);
}
}

// Instance <-> implementation object. Impl is owned by the ts_instance handle.
template <class Impl>
[[nodiscard]] Impl& self(ts_instance* instance) noexcept {
  return *reinterpret_cast<Impl*>(instance);
}

// create() helper: builds Impl(args...) inside the guard and hands ownership to *out.
template <class Impl, class... Args>
[[nodiscard]] ts_status create_instance(ts_instance** out, Args&&... args) noexcept {
  return guarded([&]() -> ts_status {
    if (out == nullptr) { return fail(TS_ERR_INVALID_ARGUMENT, "create: out is null");
}
    auto impl = std::make_unique<Impl>(std::forward<Args>(args)...);
    *out = reinterpret_cast<ts_instance*>(impl.release());
    return ok();
  });
}

template <class Impl>
void destroy_instance(ts_instance* instance) noexcept {
  std::unique_ptr<Impl> owned(reinterpret_cast<Impl*>(instance));
}

}  // namespace tessera::sdk

// Defines the single exported entry point. Use once per plugin, at namespace scope:
//   TESSERA_DEFINE_PLUGIN(kMyDescriptor)
#define TESSERA_DEFINE_PLUGIN(descriptor)                                       \
  extern "C" __attribute__((visibility("default"))) const ts_plugin_descriptor* \
  tessera_plugin_entry(void) {                                                  \
    return &(descriptor);                                                       \
  }
