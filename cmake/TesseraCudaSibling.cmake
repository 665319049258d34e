# tessera_add_cuda_sibling(<plugin target> HOST <.cpp...> KERNELS <.cu...> [INCLUDES <dir...>])
#
# The CUDA module of a plugin that loads on every machine (docs/plugins.md, "Plugins with device
# code"): the plugin links no NVIDIA library and dlopens, for a CUDA device only, one of
#   <plugin dir>/cuda/lib<plugin>_cuda.so           nvcc + the shared cudart (with TESSERA_CUDA)
#   <plugin dir>/cuda/lib<plugin>_cuda_emulated.so  the same sources as C++ for the SIMT emulator
# Kernels use core/cuda/kernels/device_primitives.cuh only, so they compile both ways. No fp
# contraction in either build: the kernels compute the plugin's CPU arithmetic, operation for
# operation, and fmas are written out where the CPU code has them.
get_filename_component(TESSERA_KERNEL_PRIMITIVES_DIR ${CMAKE_CURRENT_LIST_DIR}/../core/cuda/kernels
  ABSOLUTE)
# plugins/common/cuda_module_support.hpp: the modules' shared error text and device checks.
get_filename_component(TESSERA_PLUGIN_COMMON_DIR ${CMAKE_CURRENT_LIST_DIR}/../plugins/common ABSOLUTE)

function(tessera_add_cuda_sibling plugin)
  cmake_parse_arguments(ARG "" "" "HOST;KERNELS;INCLUDES" ${ARGN})
  set(_out ${TESSERA_PLUGIN_OUTPUT_DIR}/cuda)
  set(_install ${TESSERA_PLUGIN_INSTALL_DIR}/cuda)
  if(TARGET tessera_emulator)  # x86-64 (the emulator's fiber switch)
    set(_generated "")
    foreach(cu ${ARG_KERNELS})
      get_filename_component(name ${cu} NAME_WE)
      set(cpp ${CMAKE_CURRENT_BINARY_DIR}/${plugin}_emulated/${name}.cpp)
      file(CONFIGURE OUTPUT ${cpp} CONTENT
        "// Generated: ${cu} compiled for the SIMT emulator.\n#include \"${cu}\"\n")
      list(APPEND _generated ${cpp})
    endforeach()
    set(_emulated ${plugin}_cuda_emulated)
    add_library(${_emulated} MODULE ${ARG_HOST} ${_generated})
    set_target_properties(${_emulated} PROPERTIES PREFIX "lib" CXX_VISIBILITY_PRESET hidden
      VISIBILITY_INLINES_HIDDEN ON LIBRARY_OUTPUT_DIRECTORY ${_out})
    target_include_directories(${_emulated} PRIVATE ${TESSERA_KERNEL_PRIMITIVES_DIR}
      ${TESSERA_PLUGIN_COMMON_DIR} ${ARG_INCLUDES})
    target_link_libraries(${_emulated} PRIVATE tessera_sdk tessera_emulator)
    target_compile_options(${_emulated} PRIVATE -ffp-contract=off)
    target_link_options(${_emulated} PRIVATE "LINKER:--no-undefined")
    add_dependencies(${plugin} ${_emulated})
    install(TARGETS ${_emulated} LIBRARY DESTINATION ${_install})
  endif()
  if(TESSERA_CUDA)
    set(_native ${plugin}_cuda)
    add_library(${_native} MODULE ${ARG_HOST} ${ARG_KERNELS})
    set_target_properties(${_native} PROPERTIES PREFIX "lib" CXX_VISIBILITY_PRESET hidden
      CUDA_VISIBILITY_PRESET hidden VISIBILITY_INLINES_HIDDEN ON LIBRARY_OUTPUT_DIRECTORY ${_out})
    target_include_directories(${_native} PRIVATE ${TESSERA_KERNEL_PRIMITIVES_DIR}
      ${TESSERA_PLUGIN_COMMON_DIR} ${ARG_INCLUDES})
    # Shared cudart only (TOOLCHAIN.md §3), never the driver stub.
    target_link_libraries(${_native} PRIVATE tessera_sdk CUDA::cudart)
    target_compile_options(${_native} PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:-fmad=false -lineinfo>
      $<$<COMPILE_LANGUAGE:CXX>:-ffp-contract=off>)
    target_link_options(${_native} PRIVATE "LINKER:--no-undefined")
    add_dependencies(${plugin} ${_native})
    install(TARGETS ${_native} LIBRARY DESTINATION ${_install})
  endif()
endfunction()
