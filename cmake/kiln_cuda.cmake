# CUDA toolkit headers: kiln compiles its CUDA driver against cuda.h / nvrtc.h (types and
# prototypes only) and reaches every vendor library through a symbol table loaded at run time
# (src/kiln/cuda/library_loader.h). Nothing links libcuda or libcudart at build time, and no
# .cu file is compiled: kernels go through NVRTC at run time.
#
# KILN_ENABLE_CUDA defaults to ON when the headers are found; when they are absent the
# src/kiln/cuda folder is not built and everything else still is.
set(_kiln_cuda_hints)
foreach(_var CUDA_HOME CUDA_PATH CUDA_ROOT CUDAToolkit_ROOT)
  if(DEFINED ENV{${_var}})
    list(APPEND _kiln_cuda_hints "$ENV{${_var}}/include")
  endif()
endforeach()
find_path(KILN_CUDA_INCLUDE_DIR cuda.h
  HINTS ${_kiln_cuda_hints}
  PATHS /usr/local/cuda/include /opt/cuda/include /usr/include
  DOC "Directory holding the CUDA toolkit headers (cuda.h, nvrtc.h)")

set(_kiln_cuda_found OFF)
if(KILN_CUDA_INCLUDE_DIR AND EXISTS "${KILN_CUDA_INCLUDE_DIR}/nvrtc.h")
  file(STRINGS "${KILN_CUDA_INCLUDE_DIR}/cuda.h" _kiln_cuda_version_line
       REGEX "^#define CUDA_VERSION [0-9]+")
  string(REGEX MATCH "[0-9]+" KILN_CUDA_HEADER_VERSION "${_kiln_cuda_version_line}")
  if(KILN_CUDA_HEADER_VERSION AND KILN_CUDA_HEADER_VERSION GREATER_EQUAL 12000)
    set(_kiln_cuda_found ON)
  endif()
endif()

option(KILN_ENABLE_CUDA "Build the CUDA driver (needs CUDA >= 12.0 toolkit headers)" ${_kiln_cuda_found})
if(KILN_ENABLE_CUDA AND NOT _kiln_cuda_found)
  message(WARNING "KILN_ENABLE_CUDA is ON but no CUDA >= 12.0 headers (cuda.h + nvrtc.h) were "
                  "found (set CUDA_HOME); building without the CUDA driver")
  set(KILN_ENABLE_CUDA OFF CACHE BOOL "" FORCE)
endif()
if(KILN_ENABLE_CUDA)
  message(STATUS "kiln: CUDA driver enabled (headers ${KILN_CUDA_INCLUDE_DIR}, CUDA_VERSION ${KILN_CUDA_HEADER_VERSION})")
else()
  message(STATUS "kiln: CUDA driver disabled")
endif()
