// Reading CUDA cubins (ELF64 images for EM_CUDA) without cuobjdump: the target architecture
// and the symbol table, so that compiled kernels can be checked without a GPU.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/base/status.h"

namespace kiln::cuda {

struct CubinSymbol {
  std::string name;
  uint8_t type = 0;     // STT_*: 1 object, 2 function
  uint8_t binding = 0;  // STB_*: 0 local, 1 global, 2 weak
  uint8_t other = 0;    // st_other; CUDA marks kernel entry points with 0x10
  uint64_t size = 0;
};

struct CubinInfo {
  uint8_t abi_version = 0;  // e_ident[EI_ABIVERSION]
  uint32_t flags = 0;       // e_flags
  int sm_arch = 0;          // SASS architecture decoded from e_flags: 80, 90, 100...
  std::vector<CubinSymbol> symbols;

  // Names of the kernel entry points (function symbols marked as CUDA entries).
  std::vector<std::string> Kernels() const;
};

// Parses `image`; InvalidArgument when it is not a well-formed 64-bit little-endian ELF for
// the CUDA machine (EM_CUDA = 190).
StatusOr<CubinInfo> InspectCubin(std::string_view image);

}  // namespace kiln::cuda
