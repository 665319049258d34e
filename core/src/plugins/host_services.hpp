// The ts_host_api table handed to every plugin's create(): logging through spdlog, each line
// tagged with the plugin's registered name (the host's, not whatever the plugin passes).
#pragma once

#include <string>

#include "tessera/plugin_abi.h"

namespace tessera {

// `plugin_name` must outlive every instance created with the table (the registry keeps both).
// Logs go to spdlog's default logger at the time of the call.
[[nodiscard]] ts_host_api make_host_api(const std::string* plugin_name) noexcept;

}  // namespace tessera
