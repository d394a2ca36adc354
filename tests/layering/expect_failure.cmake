# expect_failure.cmake: runs the layering check on a tree with planted wrong-way includes and
# passes only when the check FAILS and its output names what was planted.
#
#   cmake -DCHECKER=<check_layering.cmake> -DTABLE=<md> -DROOT=<dir holding kiln/>
#         -DEXPECT_1=<regex> [-DEXPECT_2=<regex> ... -DEXPECT_9=<regex>] -P expect_failure.cmake
#
# Each EXPECT_<i> must match the check's output (stdout and stderr together).
foreach(v CHECKER TABLE ROOT EXPECT_1)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "expect_failure.cmake: -D${v}=... is required")
  endif()
endforeach()

execute_process(
  COMMAND "${CMAKE_COMMAND}" "-DTABLE=${TABLE}" "-DROOT=${ROOT}" -P "${CHECKER}"
  RESULT_VARIABLE rc
  OUTPUT_VARIABLE out
  ERROR_VARIABLE err)
set(all "${out}${err}")
message("${all}")

if(rc EQUAL 0)
  message(FATAL_ERROR "the layering check passed ${ROOT}, which has planted wrong-way includes")
endif()
foreach(i RANGE 1 9)
  if(DEFINED EXPECT_${i})
    if(NOT all MATCHES "${EXPECT_${i}}")
      message(FATAL_ERROR "the layering check failed (exit ${rc}), but its output does not match "
                          "EXPECT_${i}: '${EXPECT_${i}}'")
    endif()
  endif()
endforeach()
message("expected failure: the layering check rejected ${ROOT} (exit ${rc}), naming every planted include")
