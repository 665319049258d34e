# tessera_add_plugin(<target> KIND <attention|kv_cache|sampler|frontend> SOURCES <src>...
#                    [OUTPUT_NAME <name>] [NO_INSTALL])
#
# Builds a plugin MODULE the way the registry expects it: hidden visibility, only the entry point
# `tessera_plugin_entry` exported (version script), no link to the core. Used in-tree and, through
# find_package(Tessera), by third parties.
set(_TESSERA_PLUGIN_CMAKE_DIR ${CMAKE_CURRENT_LIST_DIR})

function(tessera_add_plugin target)
  cmake_parse_arguments(ARG "NO_INSTALL" "KIND;OUTPUT_NAME" "SOURCES" ${ARGN})
  if(NOT ARG_KIND MATCHES "^(attention|kv_cache|sampler|frontend)$")
    message(FATAL_ERROR "tessera_add_plugin(${target}): KIND must be attention, kv_cache, sampler or frontend (got '${ARG_KIND}')")
  endif()
  if(NOT ARG_SOURCES)
    message(FATAL_ERROR "tessera_add_plugin(${target}): SOURCES is empty")
  endif()
  add_library(${target} MODULE ${ARG_SOURCES})
  set_target_properties(${target} PROPERTIES
    PREFIX "lib"
    CXX_VISIBILITY_PRESET hidden
    C_VISIBILITY_PRESET hidden
    CUDA_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON
    CXX_STANDARD 20
    CXX_STANDARD_REQUIRED ON)
  if(ARG_OUTPUT_NAME)
    set_target_properties(${target} PROPERTIES OUTPUT_NAME ${ARG_OUTPUT_NAME})
  endif()
  if(TARGET Tessera::sdk)
    target_link_libraries(${target} PRIVATE Tessera::sdk)
  elseif(TARGET tessera_sdk)
    target_link_libraries(${target} PRIVATE tessera_sdk)
  endif()
  set(_map ${_TESSERA_PLUGIN_CMAKE_DIR}/tessera_plugin.map)
  target_link_options(${target} PRIVATE "LINKER:--version-script=${_map}" "LINKER:--no-undefined")
  set_property(TARGET ${target} APPEND PROPERTY LINK_DEPENDS ${_map})
  set_property(TARGET ${target} PROPERTY TESSERA_PLUGIN_KIND ${ARG_KIND})
  set_property(GLOBAL APPEND PROPERTY TESSERA_PLUGIN_TARGETS ${target})
  if(NOT ARG_NO_INSTALL AND DEFINED TESSERA_PLUGIN_INSTALL_DIR)
    install(TARGETS ${target} LIBRARY DESTINATION ${TESSERA_PLUGIN_INSTALL_DIR})
  endif()
  if(DEFINED TESSERA_PLUGIN_OUTPUT_DIR)
    set_target_properties(${target} PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${TESSERA_PLUGIN_OUTPUT_DIR})
  endif()
endfunction()
