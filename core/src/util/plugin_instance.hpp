// Host-side RAII handle for a plugin instance, plus typed access to its function table and a
// status check that turns a failing ts_status into tessera::Error tagged with the plugin name.
#pragma once

#include <string>
#include <utility>

#include "tessera/plugin_abi.h"
#include "util/check.hpp"

namespace tessera {

// "TS_ERR_UNSUPPORTED" etc.; "status 42" for codes this host does not know.
[[nodiscard]] inline std::string status_code_name(int32_t code) {
  switch (code) {
    case TS_OK:
      return "TS_OK";
    case TS_ERR_INVALID_ARGUMENT:
      return "TS_ERR_INVALID_ARGUMENT";
    case TS_ERR_UNSUPPORTED:
      return "TS_ERR_UNSUPPORTED";
    case TS_ERR_OUT_OF_MEMORY:
      return "TS_ERR_OUT_OF_MEMORY";
    case TS_ERR_NUMERIC:
      return "TS_ERR_NUMERIC";
    case TS_ERR_INTERNAL:
      return "TS_ERR_INTERNAL";
    default:
      return "status " + std::to_string(code);
  }
}

class PluginInstance {
 public:
  PluginInstance() = default;
  PluginInstance(const ts_plugin_descriptor* descriptor, ts_instance* instance)
      : descriptor_(descriptor), instance_(instance) {}
  PluginInstance(PluginInstance&& other) noexcept
      : descriptor_(std::exchange(other.descriptor_, nullptr)),
        instance_(std::exchange(other.instance_, nullptr)) {}
  PluginInstance& operator=(PluginInstance&& other) noexcept {
    if (this != &other) {
      reset();
      descriptor_ = std::exchange(other.descriptor_, nullptr);
      instance_ = std::exchange(other.instance_, nullptr);
    }
    return *this;
  }
  PluginInstance(const PluginInstance&) = delete;
  PluginInstance& operator=(const PluginInstance&) = delete;
  ~PluginInstance() { reset(); }

  void reset() noexcept {
    if (descriptor_ != nullptr && instance_ != nullptr) {
      descriptor_->destroy(instance_);
    }
    instance_ = nullptr;
  }

  [[nodiscard]] ts_instance* get() const noexcept { return instance_; }
  [[nodiscard]] const ts_plugin_descriptor* descriptor() const noexcept { return descriptor_; }
  [[nodiscard]] const char* name() const noexcept { return descriptor_ ? descriptor_->name : ""; }
  explicit operator bool() const noexcept { return instance_ != nullptr; }

  // Typed function table; checks the kind and that the table is at least as large as the host's
  // view of it (tables are append-only; a smaller one is refused at load).
  template <class Table>
  [[nodiscard]] const Table& table() const {
    TS_CHECK(descriptor_ != nullptr && descriptor_->functions != nullptr,
             "plugin instance has no function table");
    return *static_cast<const Table*>(descriptor_->functions);
  }

  // Throws tessera::Error("<plugin>: <what>: <message>") unless status is TS_OK.
  void check(ts_status status, const char* what) const {
    if (status.code == TS_OK) {
      return;
    }
    throw Error(std::string(name()) + ": " + what + ": " +
                (status.message ? status.message : "(no message)") + " [" +
                status_code_name(status.code) + "]");
  }

 private:
  const ts_plugin_descriptor* descriptor_ = nullptr;
  ts_instance* instance_ = nullptr;
};

}  // namespace tessera
