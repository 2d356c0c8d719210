# SPDX-License-Identifier: Zlib
# A shared library that links spawnpool's static library exports none of spawnpool's symbols
# (SP_STATIC_HIDDEN): two such libraries in one process must not call into each other's copy.
#   cmake -DNM=<nm> -DLIB=<the .so> -P check_exports.cmake
execute_process(COMMAND ${NM} -D --defined-only ${LIB} OUTPUT_VARIABLE symbols RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${NM} -D failed on ${LIB}")
endif()
string(REGEX MATCHALL "[^ \n]+ sp_[^\n]*|[^ \n]+ sp__[^\n]*" exported "${symbols}")
string(REGEX MATCHALL "embed_[a-z_]+" own "${symbols}")
list(LENGTH exported n)
list(LENGTH own n_own)
if(n GREATER 0)
  string(REPLACE ";" "\n  " listed "${exported}")
  message(FATAL_ERROR "${LIB} exports ${n} of spawnpool's symbols:\n  ${listed}")
endif()
if(n_own LESS 3)
  message(FATAL_ERROR "${LIB} does not export its own functions: is this the right library?\n${symbols}")
endif()
message(STATUS "${LIB}: exports its ${n_own} own functions and none of spawnpool's")
