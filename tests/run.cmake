# SPDX-License-Identifier: Zlib
# run(COMMAND...): runs a command in a ctest script (cmake -P), failing the test with its output
# when it fails; its stdout is then in last_output, its stderr in last_error.
function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed: ${ARGN}\n${out}\n${err}")
  endif()
  set(last_output "${out}" PARENT_SCOPE)
  set(last_error "${err}" PARENT_SCOPE)
endfunction()
