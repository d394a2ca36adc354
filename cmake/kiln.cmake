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

# kiln_register_backend(NAME cpu RANK 30 TARGET kiln_cpu_backend
#                       HEADER kiln/cpu/cpu_backend.h FACTORY kiln::cpu::CreateCpuBackend)
#   Declares a backend of the public API (src/kiln/backend/backend.h) from its own folder:
#   FACTORY(const kiln::BackendFlags&) (declared in HEADER, defined in TARGET) returns
#   std::unique_ptr<kiln::Backend>; the flags are ClientOptions::flags (platform-level settings).
#   kiln_generate_registrations() writes RegisterBuiltinBackends from every declaration, best
#   (lowest RANK) first, so adding a backend touches no neutral file.
function(kiln_register_backend)
  cmake_parse_arguments(ARG "" "NAME;RANK;TARGET;HEADER;FACTORY" "" ${ARGN})
  foreach(field NAME RANK TARGET HEADER FACTORY)
    if(NOT ARG_${field})
      message(FATAL_ERROR "kiln_register_backend: ${field} missing")
    endif()
  endforeach()
  string(LENGTH "${ARG_RANK}" len)
  math(EXPR pad "4 - ${len}")
  string(REPEAT "0" ${pad} zeros)
  set_property(GLOBAL APPEND PROPERTY KILN_BACKENDS
    "${zeros}${ARG_RANK}|${ARG_NAME}|${ARG_TARGET}|${ARG_HEADER}|${ARG_FACTORY}")
endfunction()

# kiln_register_platform(NAME cuda TARGET kiln_cuda HEADER kiln/cuda/cuda_platform.h
#                        REGISTRAR kiln::cuda::RegisterCudaPlatform)
#   Declares a runtime driver (src/kiln/runtime/platform.h) besides the always-built host one:
#   REGISTRAR(kiln::runtime::PlatformRegistry&) -> kiln::Status. Platforms kiln knows but this
#   build lacks are registered as unavailable, saying why (runtime::RegisterBuiltinPlatforms).
function(kiln_register_platform)
  cmake_parse_arguments(ARG "" "NAME;TARGET;HEADER;REGISTRAR" "" ${ARGN})
  set_property(GLOBAL APPEND PROPERTY KILN_PLATFORMS
    "${ARG_NAME}|${ARG_TARGET}|${ARG_HEADER}|${ARG_REGISTRAR}")
endfunction()

# kiln_generate_registrations(): called once, after every folder was added. Generates
#   kiln_builtin_backends   RegisterBuiltinBackends (backend/registry.h)
#   kiln_runtime_drivers    runtime::RegisterBuiltinPlatforms (runtime/drivers.h)
# into ${CMAKE_BINARY_DIR}/generated.
function(kiln_generate_registrations)
  set(gen ${CMAKE_BINARY_DIR}/generated/kiln)
  get_property(backends GLOBAL PROPERTY KILN_BACKENDS)
  list(SORT backends)
  set(includes "")
  set(calls "")
  set(targets "")
  foreach(entry ${backends})
    string(REPLACE "|" ";" f "${entry}")
    list(GET f 1 name)
    list(GET f 2 target)
    list(GET f 3 header)
    list(GET f 4 factory)
    string(APPEND includes "#include \"${header}\"\n")
    string(APPEND calls "  registry.Register(${factory}(flags));  // ${name}\n")
    list(APPEND targets ${target})
  endforeach()
  file(CONFIGURE OUTPUT ${gen}/backend/builtin_backends.cc CONTENT
"// Generated by kiln_generate_registrations (cmake/kiln.cmake) from the kiln_register_backend
// declarations of this build. Do not edit.
#include \"kiln/backend/registry.h\"
${includes}
namespace kiln {

void RegisterBuiltinBackends(BackendRegistry& registry, const BackendFlags& flags) {
${calls}}

}  // namespace kiln
" @ONLY)
  kiln_library(kiln_builtin_backends SRCS ${gen}/backend/builtin_backends.cc DEPS kiln_backend ${targets})

  get_property(platforms GLOBAL PROPERTY KILN_PLATFORMS)
  set(includes "")
  set(calls "")
  set(targets "")
  set(built "")
  foreach(entry ${platforms})
    string(REPLACE "|" ";" f "${entry}")
    list(GET f 0 name)
    list(GET f 1 target)
    list(GET f 2 header)
    list(GET f 3 registrar)
    string(APPEND includes "#include \"${header}\"\n")
    string(APPEND calls "  KILN_RETURN_IF_ERROR(${registrar}(registry));\n")
    list(APPEND targets ${target})
    list(APPEND built ${name})
  endforeach()
  # Drivers kiln has (or will have) that this build lacks, with the reason.
  foreach(name cuda rocm)
    if(NOT name IN_LIST built)
      if(name STREQUAL "cuda")
        set(why "cuda: not built (this kiln was configured without the CUDA toolkit headers; reconfigure with CUDA_HOME set and -DKILN_ENABLE_CUDA=ON)")
      else()
        set(why "${name}: not built into this kiln")
      endif()
      string(APPEND calls "  KILN_RETURN_IF_ERROR(registry.RegisterUnavailable(\"${name}\", Unavailable(\"${why}\")));\n")
    endif()
  endforeach()
  file(CONFIGURE OUTPUT ${gen}/runtime/builtin_platforms.cc CONTENT
"// Generated by kiln_generate_registrations (cmake/kiln.cmake) from the kiln_register_platform
// declarations of this build. Do not edit.
#include \"kiln/runtime/drivers.h\"
#include \"kiln/runtime/host/host_platform.h\"
${includes}
namespace kiln::runtime {

Status RegisterBuiltinPlatforms(PlatformRegistry& registry) {
  KILN_RETURN_IF_ERROR(RegisterHostPlatform(registry));
${calls}  return OkStatus();
}

}  // namespace kiln::runtime
" @ONLY)
  kiln_library(kiln_runtime_drivers SRCS ${PROJECT_SOURCE_DIR}/src/kiln/runtime/drivers.cc
    ${gen}/runtime/builtin_platforms.cc DEPS kiln_runtime ${targets})
endfunction()
