# SPDX-License-Identifier: Zlib
# What the manuals say that the code decides, checked against the code:
# - the C++ wrapper's THREADS paragraph names what options::threads offers (it once said the
#   options did not offer SP_THREADS_SAFE, beside an option that did);
# - the line the header's THREADS section quotes for a plain pool entered by two threads is the
#   library's (src/sp_internal.h, MSG_TWO_THREADS), word for word.
#   cmake -DSRC=<source dir> -P docs_claims.cmake
file(READ ${SRC}/include/spawnpool.hpp hpp)
string(REGEX MATCH "THREADS: [^*]*\\*/" hpp_threads "${hpp}")
if(NOT hpp_threads MATCHES "options::threads" OR NOT hpp_threads MATCHES "SP_THREADS_SAFE"
   OR hpp_threads MATCHES "do not offer")
  message(FATAL_ERROR "spawnpool.hpp's THREADS paragraph does not describe options::threads:\n${hpp_threads}")
endif()
if(NOT hpp MATCHES "sp_threads threads = SP_THREADS_NONE")
  message(FATAL_ERROR "spawnpool.hpp: options::threads is gone; update this check and its manual")
endif()

# The message, its C string pieces joined, the printf conversions cut off at the count.
file(READ ${SRC}/src/sp_internal.h internal)
string(REGEX MATCH "X\\(MSG_TWO_THREADS, SP_LOG_ERROR,[^)]*SP_THREADS_SAFE\\)[^)]*\\)" msg "${internal}")
string(REGEX MATCHALL "\"[^\"]*\"" pieces "${msg}")
string(REPLACE "\";\"" "" joined "${pieces}")
string(REPLACE "\"" "" joined "${joined}")
string(REPLACE "%s " "" joined "${joined}")
string(REGEX REPLACE " \\(%llu so far\\)$" "" joined "${joined}")
if(joined STREQUAL "")
  message(FATAL_ERROR "src/sp_internal.h: MSG_TWO_THREADS not found")
endif()
file(READ ${SRC}/include/spawnpool.h header)
string(REGEX MATCH "THREADS\n    =======\n.*    A pool without SP_THREADS_SAFE" header_threads "${header}")
string(REGEX REPLACE "[ \n]+" " " header_threads "${header_threads}")
string(FIND "${header_threads}" "${joined}" at)
if(at LESS 0)
  message(FATAL_ERROR "spawnpool.h's THREADS section does not quote the line the library logs:\n  ${joined}")
endif()
message(STATUS "docs_claims: the manuals agree with the code")
