# Source lists of the CUDA tests, shared by tests/cuda/CMakeLists.txt (main build) and
# tools/gpu/CMakeLists.txt (standalone GPU build with nvcc and g++ only).
get_filename_component(TESSERA_CUDA_TEST_DIR ${CMAKE_CURRENT_LIST_DIR} ABSOLUTE)
get_filename_component(TESSERA_REFERENCE_DIR ${CMAKE_CURRENT_LIST_DIR}/../../plugins/attention_reference ABSOLUTE)
get_filename_component(TESSERA_KVFP8_DIR ${CMAKE_CURRENT_LIST_DIR}/../../plugins/kvcache_fp8 ABSOLUTE)
include(${CMAKE_CURRENT_LIST_DIR}/../../plugins/attention_mma/sources.cmake)
# Random problems + the CPU reference, compiled from plugins/attention_reference as is, and fp8
# pages written by plugins/kvcache_fp8's own codec.
set(TESSERA_CUDA_TEST_CASE_SOURCES
  ${TESSERA_CUDA_TEST_DIR}/attention_case.cpp
  ${TESSERA_KVFP8_DIR}/fp8_layout.cpp
  ${TESSERA_KVFP8_DIR}/latent_codec.cpp
  ${TESSERA_KVFP8_DIR}/indexer_codec.cpp
  ${TESSERA_REFERENCE_DIR}/lightning_indexer.cpp
  ${TESSERA_REFERENCE_DIR}/sparse_attention.cpp
  ${TESSERA_REFERENCE_DIR}/sparse_attention_avx512.cpp
  ${TESSERA_REFERENCE_DIR}/sparse_attention_avx2.cpp)
# Both bodies compute the operations their definition lists: no contraction (as in the plugin).
set_source_files_properties(${TESSERA_REFERENCE_DIR}/sparse_attention.cpp
  ${TESSERA_REFERENCE_DIR}/sparse_attention_avx512.cpp ${TESSERA_REFERENCE_DIR}/sparse_attention_avx2.cpp
  ${TESSERA_REFERENCE_DIR}/lightning_indexer.cpp
  PROPERTIES
  COMPILE_OPTIONS "-ffp-contract=off;-fno-trapping-math")
set(TESSERA_CUDA_TEST_INCLUDES ${TESSERA_CUDA_TEST_DIR} ${TESSERA_REFERENCE_DIR} ${TESSERA_MMA_DIR}
  ${TESSERA_KVFP8_DIR}
  ${TESSERA_KERNEL_COMMON_DIR})
