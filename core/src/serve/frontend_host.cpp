#include "serve/frontend_host.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <thread>

#include "device/plugin_device.hpp"
#include "util/check.hpp"

namespace tessera::serve {

namespace {

const ts_frontend_table& frontend_table(const PluginInstance& instance) {
  return instance.table<ts_frontend_table>();
}

}  // namespace

FrontendHost::FrontendHost(const PluginRegistry& registry, const Config& config) {
  const auto uses = config.plugin_uses();
  for (const PluginUse& use : uses) {
    if (use.kind != TS_KIND_FRONTEND) continue;
    const std::string label = fmt::format("{} (plugin \"{}\") at {}", use.section, use.name,
                                          use.name_location.to_string());
    try {
      const LoadedPlugin& plugin = registry.find(TS_KIND_FRONTEND, use.name);
      entries_.push_back(Entry{
          label, registry.create(plugin, use.options_json, device::kHostPluginDevice), false});
    } catch (const Error& e) {
      throw Error(fmt::format("{}: {}", label, e.what()));
    }
  }
}

FrontendHost::~FrontendHost() {
  // Normally stop_all ran; a start-up failure may leave some started.
  for (auto& e : entries_) {
    if (e.started) (void)frontend_table(e.instance).stop(e.instance.get(), 0);
  }
}

void FrontendHost::start_all(const ts_engine_api* engine) {
  for (auto& e : entries_) {
    const ts_status s = frontend_table(e.instance).start(e.instance.get(), engine);
    if (s.code != TS_OK) {
      const std::string why = s.message != nullptr ? s.message : "(no message)";
      stop_all(std::chrono::milliseconds(0));
      throw Error(fmt::format("{}: start failed: {} [{}]", e.label, why, status_code_name(s.code)));
    }
    e.started = true;
  }
}

void FrontendHost::stop_all(std::chrono::milliseconds deadline) {
  std::vector<std::thread> stoppers;
  for (auto& e : entries_) {
    if (!e.started) continue;
    e.started = false;
    stoppers.emplace_back([&e, deadline] {
      const ts_status s = frontend_table(e.instance).stop(e.instance.get(), deadline.count());
      if (s.code != TS_OK) {
        spdlog::warn("{}: stop: {}", e.label, s.message != nullptr ? s.message : "(no message)");
      }
    });
  }
  for (auto& t : stoppers) t.join();
}

std::vector<std::string> FrontendHost::labels() const {
  std::vector<std::string> out;
  for (const auto& e : entries_) out.push_back(e.label);
  return out;
}

}  // namespace tessera::serve
