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

# kiln_test(NAME SRCS a_test.cc DEPS lib ... [LABELS gpu] [TIMEOUT s] [SHARDS n])
#   A GoogleTest binary registered with CTest; tests run from the build directory with
#   KILN_SOURCE_DIR and KILN_SHARED_DIR in the environment. With SHARDS n > 1 the binary is
#   registered as n tests NAME.0 .. NAME.<n-1> (GoogleTest sharding), so `ctest -j` spreads a
#   long binary over several processes.
function(kiln_test name)
  if(NOT KILN_BUILD_TESTS)
    return()
  endif()
  cmake_parse_arguments(ARG "" "TIMEOUT;SHARDS" "SRCS;DEPS;LABELS" ${ARGN})
  add_executable(${name} ${ARG_SRCS})
  target_compile_options(${name} PRIVATE ${KILN_WARNINGS})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} GTest::gtest GTest::gtest_main)
  set(labels ${ARG_LABELS})
  if(NOT labels)
    set(labels cpu)
  endif()
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 600)
  endif()
  set(env "KILN_SOURCE_DIR=${PROJECT_SOURCE_DIR};KILN_SHARED_DIR=${KILN_SHARED_DIR}")
  if(ARG_SHARDS AND ARG_SHARDS GREATER 1)
    kiln_add_sharded_test(${name} ${name} ${ARG_SHARDS} "${labels}" ${ARG_TIMEOUT} "${env}")
  else()
    add_test(NAME ${name} COMMAND ${name})
    set_tests_properties(${name} PROPERTIES
      LABELS "${labels}"
      TIMEOUT ${ARG_TIMEOUT}
      ENVIRONMENT "${env}")
  endif()
endfunction()

# kiln_add_sharded_test(TEST_NAME TARGET SHARDS LABELS TIMEOUT ENV)
#   Registers TARGET as SHARDS tests TEST_NAME.0 .. TEST_NAME.<SHARDS-1>, each running one
#   GoogleTest shard (GTEST_TOTAL_SHARDS / GTEST_SHARD_INDEX) with ENV added.
function(kiln_add_sharded_test test_name target shards labels timeout env)
  math(EXPR last "${shards} - 1")
  foreach(i RANGE ${last})
    add_test(NAME ${test_name}.${i} COMMAND ${target})
    set_tests_properties(${test_name}.${i} PROPERTIES
      LABELS "${labels}"
      TIMEOUT ${timeout}
      ENVIRONMENT "${env};GTEST_TOTAL_SHARDS=${shards};GTEST_SHARD_INDEX=${i}")
  endforeach()
endfunction()
