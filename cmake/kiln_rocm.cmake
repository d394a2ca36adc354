# ROCm: kiln compiles its ROCm driver (src/kiln/rocm) against the HIP 6.x headers and the headers
# of rocBLAS, hipBLASLt, MIOpen and RCCL, and links none of their libraries: everything is reached
# through symbol tables loaded at run time (src/kiln/rocm/hip_api.h). Debian 12 has only HIP 5.2,
# and none of the library headers, so ./kiln.sh unpacks Debian's newer -dev packages (headers
# only, about 1 MB) and the gfx942-capable device libraries into KILN_ROCM_SDK_DIR; nothing
# there is installed, and the build itself never reaches the network.
#
# What is looked for (each missing piece is printed, and the ROCm parts are then skipped):
#   KILN_ROCM_SDK_DIR/usr/include/hip/hip_runtime_api.h with HIP_VERSION_MAJOR >= 6
#   KILN_ROCM_SDK_DIR/usr/include/{rocblas/rocblas.h,hipblaslt/hipblaslt.h,miopen/miopen.h,rccl/rccl.h}
#   amd_comgr.h (Debian 12's libamd-comgr-dev)
# Tools for compiling kernels offline (optional: kiln then compiles with hipRTC only):
#   KILN_ROCM_CLANG (clang-19 with the amdgcn target), KILN_ROCM_DEVICE_LIBS (bitcode
#   directories: Debian 12's rocm-device-libs, and the unpacked rocm-device-libs-17 for gfx942),
#   KILN_ROCM_READELF (llvm-readelf, for the tests' golden checks).
set(KILN_ROCM_SDK_DIR "${CMAKE_BINARY_DIR}/rocm-sdk/root" CACHE PATH
    "Root of the unpacked ROCm -dev packages (./kiln.sh build makes it)")

set(_kiln_rocm_missing)
set(_kiln_rocm_inc "${KILN_ROCM_SDK_DIR}/usr/include")
if(EXISTS "${_kiln_rocm_inc}/hip/hip_version.h")
  file(STRINGS "${_kiln_rocm_inc}/hip/hip_version.h" _kiln_hip_major REGEX "^#define HIP_VERSION_MAJOR [0-9]+")
  string(REGEX MATCH "[0-9]+$" KILN_ROCM_HIP_HEADER_MAJOR "${_kiln_hip_major}")
  if(NOT KILN_ROCM_HIP_HEADER_MAJOR OR KILN_ROCM_HIP_HEADER_MAJOR LESS 6)
    list(APPEND _kiln_rocm_missing "HIP >= 6 headers (found major ${KILN_ROCM_HIP_HEADER_MAJOR})")
  endif()
else()
  list(APPEND _kiln_rocm_missing "${_kiln_rocm_inc}/hip/hip_version.h")
endif()
foreach(_h rocblas/rocblas.h hipblaslt/hipblaslt.h miopen/miopen.h rccl/rccl.h hip/hiprtc.h)
  if(NOT EXISTS "${_kiln_rocm_inc}/${_h}")
    list(APPEND _kiln_rocm_missing "${_kiln_rocm_inc}/${_h}")
  endif()
endforeach()
find_path(KILN_ROCM_COMGR_INCLUDE_DIR amd_comgr.h DOC "Directory of amd_comgr.h (libamd-comgr-dev)")
if(NOT KILN_ROCM_COMGR_INCLUDE_DIR)
  list(APPEND _kiln_rocm_missing "amd_comgr.h (apt-get install libamd-comgr-dev)")
endif()

set(_kiln_rocm_found ON)
if(_kiln_rocm_missing)
  set(_kiln_rocm_found OFF)
endif()
option(KILN_ENABLE_ROCM "Build the ROCm driver and backend (needs the unpacked ROCm headers)" ${_kiln_rocm_found})
if(KILN_ENABLE_ROCM AND NOT _kiln_rocm_found)
  message(WARNING "KILN_ENABLE_ROCM is ON but pieces are missing: ${_kiln_rocm_missing}")
  set(KILN_ENABLE_ROCM OFF CACHE BOOL "" FORCE)
endif()

find_program(KILN_ROCM_CLANG NAMES clang++-19 clang++-18 clang++-17
             DOC "clang with the amdgcn target, for offline HSACO compiles (gfx942 needs >= 17)")
find_program(KILN_ROCM_READELF NAMES llvm-readelf-19 llvm-readelf-18 llvm-readelf-17 llvm-readelf-15 llvm-readelf
             DOC "llvm-readelf, for the tests' golden checks of code-object metadata")
set(KILN_ROCM_DEVICE_LIBS "")
foreach(_d "${KILN_ROCM_SDK_DIR}/usr/lib/llvm-17/lib/clang/17/amdgcn/bitcode"
           /usr/lib/x86_64-linux-gnu/amdgcn/bitcode)
  if(EXISTS "${_d}/ockl.bc")
    list(APPEND KILN_ROCM_DEVICE_LIBS "${_d}")
  endif()
endforeach()

if(KILN_ENABLE_ROCM)
  message(STATUS "kiln: ROCm driver enabled (HIP ${KILN_ROCM_HIP_HEADER_MAJOR}.x headers in ${_kiln_rocm_inc}; "
                 "clang: ${KILN_ROCM_CLANG}; device libraries: ${KILN_ROCM_DEVICE_LIBS})")
else()
  message(STATUS "kiln: ROCm driver skipped: missing ${_kiln_rocm_missing} "
                 "(./kiln.sh build unpacks the ROCm headers; see docs/rocm.md)")
endif()
