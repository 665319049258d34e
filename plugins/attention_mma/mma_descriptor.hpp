// What the "mma" plugin says about itself, shared by the plugin the registry loads
// (mma_plugin.cpp) and the implementation in its CUDA module (attention_mma.cpp), so the two
// descriptors cannot drift apart.
#pragma once

namespace tessera::mma {

inline constexpr const char* kPluginName = "mma";
inline constexpr const char* kPluginVersion = "1.2.0";
inline constexpr const char* kOptionsSchema =
    R"({"type":"object","properties":{},"additionalProperties":false})";
inline constexpr const char* kCapabilities =
    R"({"devices":["cuda"],"kv_formats":["bf16","fp8"],"kv_payload_dtypes":["bf16","fp8_e4m3"],)"
    R"("cuda_graph":true,"head_dims":[64,128,256,512],)"
    R"("index_head_dims":[32,64,128],"max_index_n_heads":64,"max_index_topk":4096})";

}  // namespace tessera::mma
