// API-key check for the HTTP frontend: `Authorization: Bearer <key>` compared in constant time.
// The check itself is the SDK's (tessera/bearer_key.hpp), shared with the gRPC frontend.
#pragma once

#include "tessera/bearer_key.hpp"

namespace tessera::http {

using sdk::authorized;
using sdk::bearer_token;
using sdk::constant_time_equals;

}  // namespace tessera::http
