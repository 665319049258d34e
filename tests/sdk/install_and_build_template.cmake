# cmake -P script run by CTest: the third-party path end to end.
#   1. `cmake --install` this build of Tessera into a fresh prefix;
#   2. configure, build and install examples/plugin-template out of tree against that prefix only;
#   3. run the installed `tessera plugins --json` and require the template plugin to be listed,
#      loaded from the prefix, with no refusal.
# Inputs: BUILD_DIR SOURCE_DIR WORK_DIR GENERATOR CXX_COMPILER PLUGIN_SUBDIR
cmake_minimum_required(VERSION 3.25)  # IN_LIST, string(JSON), file(REAL_PATH)
foreach(var BUILD_DIR SOURCE_DIR WORK_DIR GENERATOR CXX_COMPILER PLUGIN_SUBDIR)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "install_and_build_template.cmake: ${var} not set")
  endif()
endforeach()

function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    string(REPLACE ";" " " cmd "${ARGN}")
    message(FATAL_ERROR "`${cmd}` failed (${rc}):\n${out}\n${err}")
  endif()
  set(run_output "${out}" PARENT_SCOPE)
endfunction()

set(prefix ${WORK_DIR}/prefix)
file(REMOVE_RECURSE ${WORK_DIR})

run(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix})
foreach(installed bin/tessera include/tessera/plugin_abi.h include/tessera/plugin_sdk.hpp)
  if(NOT EXISTS ${prefix}/${installed})
    message(FATAL_ERROR "the install did not produce ${prefix}/${installed}")
  endif()
endforeach()

# Only the prefix may provide Tessera: no package registry, no build tree.
run(${CMAKE_COMMAND} -S ${SOURCE_DIR}/examples/plugin-template -B ${WORK_DIR}/build
    -G ${GENERATOR} -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER=${CXX_COMPILER}
    -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF
    -DCMAKE_FIND_USE_SYSTEM_PACKAGE_REGISTRY=OFF)
file(STRINGS ${WORK_DIR}/build/CMakeCache.txt tessera_dir REGEX "^Tessera_DIR:")
if(NOT tessera_dir MATCHES "${prefix}/")
  message(FATAL_ERROR "the template found Tessera outside the test prefix: ${tessera_dir}")
endif()
run(${CMAKE_COMMAND} --build ${WORK_DIR}/build)
run(${CMAKE_COMMAND} --install ${WORK_DIR}/build)
set(plugin ${prefix}/${PLUGIN_SUBDIR}/libtoken_bias.so)
if(NOT EXISTS ${plugin})
  message(FATAL_ERROR "the template did not install ${plugin}")
endif()

# The installed binary finds the plugin on its default path (<exe>/../lib/tessera/plugins).
execute_process(COMMAND ${CMAKE_COMMAND} -E env --unset=TESSERA_PLUGIN_PATH
                        ${prefix}/bin/tessera plugins --json
                RESULT_VARIABLE rc OUTPUT_VARIABLE listing ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "tessera plugins --json failed (${rc}): ${err}")
endif()
file(WRITE ${WORK_DIR}/plugins.json "${listing}")
string(JSON n_plugins LENGTH "${listing}" plugins)
set(found "")
if(n_plugins GREATER 0)
  math(EXPR last "${n_plugins} - 1")
  foreach(i RANGE ${last})
    string(JSON name GET "${listing}" plugins ${i} name)
    if(name STREQUAL "token_bias")
      string(JSON kind GET "${listing}" plugins ${i} kind)
      string(JSON path GET "${listing}" plugins ${i} path)
      string(JSON bias_default GET "${listing}" plugins ${i} options_schema properties bias default)
      set(found "${kind} ${path} ${bias_default}")
    endif()
  endforeach()
endif()
file(REAL_PATH ${plugin} plugin_real)
if(NOT found STREQUAL "sampler ${plugin_real} 0")
  message(FATAL_ERROR "token_bias not listed as a sampler from ${plugin_real} (got '${found}'):\n${listing}")
endif()
string(JSON n_failures LENGTH "${listing}" failures)
if(n_failures GREATER 0)
  math(EXPR last "${n_failures} - 1")
  foreach(i RANGE ${last})
    string(JSON path GET "${listing}" failures ${i} path)
    if(path MATCHES "token_bias")
      string(JSON reason GET "${listing}" failures ${i} reason)
      message(FATAL_ERROR "token_bias was refused: ${reason}")
    endif()
  endforeach()
endif()
message(STATUS "token_bias built against ${prefix} and listed by the installed tessera")
