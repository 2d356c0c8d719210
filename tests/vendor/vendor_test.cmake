# SPDX-License-Identifier: Zlib
# Configures, builds and runs tests/vendor (a game that vendors spawnpool) three times:
# add_subdirectory with no build type (the parent's cache must stay without one), FetchContent
# static Release, add_subdirectory shared Debug.
# pkg-config looks only into an empty directory, so cmocka is out of the parent's view. Nothing
# may be installed by `cmake --install` (the parent has no install rules and spawnpool's are off).
# Run by ctest with -DSOURCE_DIR, -DPARENT_DIR, -DWORK_DIR and -DCC.
file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR}/empty-pkgconfig)
set(ENV{PKG_CONFIG_LIBDIR} ${WORK_DIR}/empty-pkgconfig)
set(ENV{PKG_CONFIG_PATH} "")
set(ENV{CC} ${CC})
include(${CMAKE_CURRENT_LIST_DIR}/../run.cmake)

foreach(setup "none;OFF;add_subdirectory" "Release;OFF;FetchContent" "Debug;ON;add_subdirectory")
  list(GET setup 0 type)
  list(GET setup 1 shared)
  list(GET setup 2 with)
  set(dir ${WORK_DIR}/${type}-shared-${shared})
  set(type_arg "")
  if(NOT type STREQUAL "none")
    set(type_arg -DCMAKE_BUILD_TYPE=${type})
  endif()
  run(${CMAKE_COMMAND} -S ${PARENT_DIR} -B ${dir} -DSPAWNPOOL_DIR=${SOURCE_DIR}
    -DBUILD_SHARED_LIBS=${shared} -DVENDOR_WITH=${with} ${type_arg})
  run(${CMAKE_COMMAND} --build ${dir})
  run(${dir}/game)
  message(STATUS "vendored with ${with}, build type ${type}, shared ${shared}: ${last_output}")
  if(type STREQUAL "none")
    file(STRINGS ${dir}/CMakeCache.txt cached REGEX "^CMAKE_BUILD_TYPE:")
    if(NOT cached MATCHES "^CMAKE_BUILD_TYPE:[A-Z]+=$")
      message(FATAL_ERROR "vendor test: the parent's cache has ${cached}")
    endif()
    run(${CMAKE_COMMAND} --install ${dir} --prefix ${dir}/prefix)
    file(GLOB_RECURSE installed ${dir}/prefix/*)
    if(installed)
      message(FATAL_ERROR "vendor test: a vendored spawnpool installed files: ${installed}")
    endif()
  endif()
endforeach()
