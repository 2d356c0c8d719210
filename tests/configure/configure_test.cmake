# SPDX-License-Identifier: Zlib
# A newcomer's first two commands, `cmake -S . -B build && cmake --build build`, on a machine
# without the test dependencies: pkg-config looks only into an empty directory (no cmocka, SDL2
# or stb) and CXX names no compiler. The configure must succeed and say in one line why the
# tests are off, the build must give the library and the C examples, and the fountain must run
# in the terminal. Run by ctest with -DSOURCE_DIR, -DWORK_DIR and -DCC.
file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR}/empty-pkgconfig)
set(ENV{PKG_CONFIG_LIBDIR} ${WORK_DIR}/empty-pkgconfig)
set(ENV{PKG_CONFIG_PATH} "")
set(ENV{CC} ${CC})
set(ENV{CXX} ${WORK_DIR}/no-such-c++)
include(${CMAKE_CURRENT_LIST_DIR}/../run.cmake)

run(${CMAKE_COMMAND} -S ${SOURCE_DIR} -B ${WORK_DIR}/build)
set(last_output "${last_output}${last_error}")
foreach(note "spawnpool: tests off: cmocka not found \\(libcmocka-dev\\), no C\\+\\+ compiler"
             "SP_BUILD_TESTS=OFF silences this line" "examples/cpp/bullets is not built"
             "SDL2 not found")
  if(NOT last_output MATCHES "${note}")
    message(FATAL_ERROR "configure without test dependencies: no line matching '${note}' in:\n${last_output}")
  endif()
endforeach()
if(last_output MATCHES "CMake Warning|CMake Error")
  message(FATAL_ERROR "configure without test dependencies warned:\n${last_output}")
endif()
run(${CMAKE_COMMAND} --build ${WORK_DIR}/build)
foreach(exe examples/fountain examples/particles examples/use_after_release)
  if(NOT EXISTS ${WORK_DIR}/build/${exe})
    message(FATAL_ERROR "configure without test dependencies: ${exe} was not built")
  endif()
endforeach()
run(${WORK_DIR}/build/examples/fountain --terminal --seconds 1)
if(NOT last_output MATCHES "summary:")
  message(FATAL_ERROR "fountain printed no summary:\n${last_output}")
endif()
message(STATUS "configure and build without cmocka, SDL2 or C++: ok")
