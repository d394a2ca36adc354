# kiln_library(NAME SRCS a.cc b.cc DEPS other_lib ...)
#   A static library rooted at src/ (headers are included as "kiln/<room>/<file>.h").
function(kiln_library name)
  cmake_parse_arguments(ARG "" "" "SRCS;DEPS;PUBLIC_DEFS" ${ARGN})
  add_library(${name} STATIC ${ARG_SRCS})
  target_include_directories(${name} PUBLIC ${PROJECT_SOURCE_DIR}/src)
  target_compile_options(${name} PRIVATE ${KILN_WARNINGS})
  target_link_libraries(${name} PUBLIC ${ARG_DEPS})
  if(ARG_PUBLIC_DEFS)
    target_compile_definitions(${name} PUBLIC ${ARG_PUBLIC_DEFS})
  endif()
endfunction()

# kiln_test(NAME SRCS a_test.cc DEPS lib ... [LABELS gpu])
#   A GoogleTest binary registered with CTest; tests run from the build directory with
#   KILN_SOURCE_DIR and KILN_SHARED_DIR in the environment.
function(kiln_test name)
  if(NOT KILN_BUILD_TESTS)
    return()
  endif()
  cmake_parse_arguments(ARG "" "TIMEOUT" "SRCS;DEPS;LABELS" ${ARGN})
  add_executable(${name} ${ARG_SRCS})
  target_compile_options(${name} PRIVATE ${KILN_WARNINGS})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} GTest::gtest GTest::gtest_main)
  add_test(NAME ${name} COMMAND ${name})
  set(labels ${ARG_LABELS})
  if(NOT labels)
    set(labels cpu)
  endif()
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 600)
  endif()
  set_tests_properties(${name} PROPERTIES
    LABELS "${labels}"
    TIMEOUT ${ARG_TIMEOUT}
    ENVIRONMENT "KILN_SOURCE_DIR=${PROJECT_SOURCE_DIR};KILN_SHARED_DIR=${KILN_SHARED_DIR}")
endfunction()
