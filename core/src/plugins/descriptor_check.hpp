// The host's acceptance rules for a plugin descriptor (ARCHITECTURE.md, "The plugin boundary"):
// struct size, ABI major equal and minor not newer than the host's, a known kind, a usable name,
// every entry point present, and a kind-specific function table at least as large as the host's.
#pragma once

#include <cstddef>
#include <string>

#include "tessera/plugin_abi.h"

namespace tessera {

// The smallest function table of the kind this host accepts: its size as compiled, less the
// optional slots it checks for before calling (the sampler's sample_scanned, ABI 1.1); 0 for an
// unknown kind. Tables are append-only; a plugin's table must be at least this large so no slot
// the host calls unconditionally is missing.
[[nodiscard]] std::size_t host_table_size(int32_t kind) noexcept;

// Why the host refuses `descriptor` — one sentence, then "Fix: ..." — or "" when it is acceptable.
// Reads only the fields the checked struct_size and ABI version guarantee to exist.
[[nodiscard]] std::string descriptor_refusal(const ts_plugin_descriptor* descriptor);

}  // namespace tessera
