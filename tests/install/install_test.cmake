# SPDX-License-Identifier: Zlib
# Installs the build tree into a scratch prefix, then builds tests/install/consumer.c through
# find_package(spawnpool) in a Debug and a Release configuration (spawnpool::spawnpool must pick
# the debug library in Debug only), and through pkg-config as spawnpool and spawnpool-debug.
# Checks the shared library's soname carries the minor version for 0.x. Run by ctest with
# -DBUILD_DIR, -DSRC_DIR, -DWORK_DIR, -DCC, -DVERSION (major.minor.patch) and -DRELEASE_LIB_DEBUG
# (1 when this build's plain library has debug checks anyway: a Debug build or SP_DEBUG>0).
file(REMOVE_RECURSE ${WORK_DIR})
include(${CMAKE_CURRENT_LIST_DIR}/../run.cmake)
run(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${WORK_DIR}/prefix)
file(GLOB lib_dirs ${WORK_DIR}/prefix/lib*)

# For 0.x the soname changes with the minor version: libspawnpool.so.0.MINOR (SameMinorVersion).
string(REGEX MATCH "^[0-9]+\\.[0-9]+" major_minor "${VERSION}")
string(REGEX MATCH "^[0-9]+" major "${VERSION}")
if(major EQUAL 0)
  set(soname_suffix ${major_minor})
else()
  set(soname_suffix ${major})
endif()
foreach(lib spawnpool spawnpool-debug)
  file(GLOB found ${WORK_DIR}/prefix/lib*/lib${lib}.so.${soname_suffix})
  if(NOT found)
    file(GLOB_RECURSE all RELATIVE ${WORK_DIR}/prefix ${WORK_DIR}/prefix/lib*/*)
    message(FATAL_ERROR "no lib${lib}.so.${soname_suffix} installed; found: ${all}")
  endif()
  find_program(READELF readelf)
  if(READELF)
    run(${READELF} -d ${found})
    if(NOT last_output MATCHES "SONAME[^\n]*lib${lib}\\.so\\.${soname_suffix}]")
      message(FATAL_ERROR "lib${lib}: soname is not lib${lib}.so.${soname_suffix}:\n${last_output}")
    endif()
  endif()
endforeach()
message(STATUS "soname: libspawnpool.so.${soname_suffix}, libspawnpool-debug.so.${soname_suffix}")

set(ENV{LD_LIBRARY_PATH} "${lib_dirs}")
foreach(config Debug Release)
  run(${CMAKE_COMMAND} -S ${SRC_DIR} -B ${WORK_DIR}/consumer-${config}
    -DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix -DCMAKE_BUILD_TYPE=${config})
  run(${CMAKE_COMMAND} --build ${WORK_DIR}/consumer-${config})
  foreach(exe consumer consumer_shared consumer_debug_shared)
    if(RELEASE_LIB_DEBUG AND NOT exe STREQUAL "consumer_debug_shared")
      # The plain library has debug checks in this build: only the debug one is checked here.
      continue()
    endif()
    run(${WORK_DIR}/consumer-${config}/${exe})
    message(STATUS "find_package, ${config}, ${exe}: ${last_output}")
  endforeach()
endforeach()

find_program(PKG_CONFIG pkg-config REQUIRED)
file(GLOB pc_dirs ${WORK_DIR}/prefix/lib*/pkgconfig ${WORK_DIR}/prefix/lib/*/pkgconfig)
set(ENV{PKG_CONFIG_PATH} "${pc_dirs}")
foreach(pc spawnpool spawnpool-debug)
  run(${PKG_CONFIG} --cflags --libs ${pc})
  string(STRIP "${last_output}" flags)
  separate_arguments(flags UNIX_COMMAND "${flags}")
  if(pc STREQUAL "spawnpool-debug")
    set(expect -DSP_EXPECT_DEBUG_LIB=1)
  elseif(RELEASE_LIB_DEBUG)
    set(expect "")
  else()
    set(expect -DSP_EXPECT_DEBUG_LIB=0 -DNDEBUG)
  endif()
  run(${CC} ${SRC_DIR}/consumer.c ${expect} ${flags} -o ${WORK_DIR}/consumer_${pc})
  run(${WORK_DIR}/consumer_${pc})
  message(STATUS "pkg-config ${pc}: ${last_output}")
endforeach()
