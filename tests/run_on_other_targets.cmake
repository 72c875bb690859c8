# Runs SUITE once per SIMD target that LISTER prints (every target compiled into the kernels
# and supported by this CPU, except the best, which the suite's own test runs on), with
# GS3D_TEST_SIMD_TARGET naming it and one thread; fails if any run fails. A build with only
# one target (some compilers, some CPUs) has nothing more to run, and says so.
execute_process(COMMAND ${LISTER} OUTPUT_VARIABLE targets RESULT_VARIABLE rc OUTPUT_STRIP_TRAILING_WHITESPACE)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${LISTER} failed (${rc})")
endif()
if(targets STREQUAL "")
  message(STATUS "only one SIMD target is compiled and supported here: the suite's own run covered it")
endif()
foreach(target IN LISTS targets)
  execute_process(COMMAND ${CMAKE_COMMAND} -E env GS3D_TEST_SIMD_TARGET=${target} OMP_NUM_THREADS=1 ${SUITE}
                  OUTPUT_VARIABLE output ERROR_VARIABLE output RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message("${output}")
    message(FATAL_ERROR "${SUITE} failed on ${target} (${rc})")
  endif()
  string(REGEX MATCH "\\[  PASSED  \\] [0-9]+ tests?" passed "${output}")
  message(STATUS "${target}: ${passed}")
endforeach()
