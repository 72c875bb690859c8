# Runs PROBE under OMP_NUM_THREADS 1, 2, 3 and 4, with ACL_OPT_DETERMINISTIC on and off, and
# fails unless every run prints the same hash of its outputs. The probe's batch is 2, and the
# scan plan cuts each batch item into threads / gcd(threads, 2) slabs: 1, 1, 3 and 2 slabs
# for these counts, so every cut from none to three is compared.
set(reference "")
foreach(threads 1 2 3 4)
  foreach(deterministic 1 0)
    execute_process(COMMAND ${CMAKE_COMMAND} -E env OMP_NUM_THREADS=${threads} ${PROBE} ${deterministic}
                    OUTPUT_VARIABLE hash RESULT_VARIABLE rc OUTPUT_STRIP_TRAILING_WHITESPACE)
    if(NOT rc EQUAL 0)
      message(FATAL_ERROR "probe failed (${rc}) with OMP_NUM_THREADS=${threads}")
    endif()
    message(STATUS "OMP_NUM_THREADS=${threads} deterministic=${deterministic}: ${hash}")
    if(reference STREQUAL "")
      set(reference "${hash}")
    elseif(NOT hash STREQUAL reference)
      message(FATAL_ERROR "outputs differ: ${hash} != ${reference}")
    endif()
  endforeach()
endforeach()
