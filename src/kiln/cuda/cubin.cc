#include "kiln/cuda/cubin.h"

#include <cstring>

namespace kiln::cuda {

namespace {

constexpr uint16_t kMachineCuda = 190;
constexpr uint32_t kSectionSymtab = 2;
constexpr uint8_t kSymbolFunction = 2;
constexpr uint8_t kCudaEntry = 0x10;

template <typename T>
bool Read(std::string_view image, uint64_t offset, T* out) {
  if (offset > image.size() || image.size() - offset < sizeof(T)) return false;
  std::memcpy(out, image.data() + offset, sizeof(T));
  return true;
}

}  // namespace

std::vector<std::string> CubinInfo::Kernels() const {
  std::vector<std::string> out;
  for (const CubinSymbol& s : symbols) {
    if (s.type == kSymbolFunction && (s.other & kCudaEntry) != 0) out.push_back(s.name);
  }
  return out;
}

StatusOr<CubinInfo> InspectCubin(std::string_view image) {
  // ELF64 header fields used here (little-endian, as every cubin is).
  if (image.size() < 64 || std::memcmp(image.data(), "\x7f" "ELF", 4) != 0) {
    return InvalidArgument("cubin: not an ELF image");
  }
  if (image[4] != 2 || image[5] != 1) {
    return InvalidArgument("cubin: not a 64-bit little-endian ELF image");
  }
  CubinInfo info;
  info.abi_version = static_cast<uint8_t>(image[8]);
  uint16_t machine = 0, shentsize = 0, shnum = 0;
  uint64_t shoff = 0;
  Read(image, 18, &machine);
  Read(image, 40, &shoff);
  Read(image, 48, &info.flags);
  Read(image, 58, &shentsize);
  Read(image, 60, &shnum);
  if (machine != kMachineCuda) {
    return InvalidArgument("cubin: ELF machine ", machine, " is not EM_CUDA (190)");
  }
  // ABI version 8 onwards keeps the SM number in bits 8..15; older cubins in bits 0..7.
  info.sm_arch = info.abi_version >= 8 ? static_cast<int>((info.flags >> 8) & 0xff)
                                       : static_cast<int>(info.flags & 0xff);
  if (shentsize < 64) return InvalidArgument("cubin: bad section header size ", shentsize);
  struct Section {
    uint32_t type = 0;
    uint32_t link = 0;
    uint64_t offset = 0;
    uint64_t size = 0;
    uint64_t entsize = 0;
  };
  auto section = [&](uint32_t index, Section* out) {
    uint64_t base = shoff + uint64_t{index} * shentsize;
    return Read(image, base + 4, &out->type) && Read(image, base + 24, &out->offset) &&
           Read(image, base + 32, &out->size) && Read(image, base + 40, &out->link) &&
           Read(image, base + 56, &out->entsize);
  };
  for (uint32_t i = 0; i < shnum; ++i) {
    Section symtab;
    if (!section(i, &symtab)) return InvalidArgument("cubin: truncated section headers");
    if (symtab.type != kSectionSymtab) continue;
    Section strtab;
    if (symtab.link >= shnum || !section(symtab.link, &strtab) ||
        strtab.offset > image.size() || image.size() - strtab.offset < strtab.size) {
      return InvalidArgument("cubin: bad string table for the symbol table");
    }
    if (symtab.entsize < 24) return InvalidArgument("cubin: bad symbol entry size");
    std::string_view strings = image.substr(strtab.offset, strtab.size);
    for (uint64_t off = 0; off + symtab.entsize <= symtab.size; off += symtab.entsize) {
      uint64_t base = symtab.offset + off;
      uint32_t name = 0;
      uint8_t st_info = 0, st_other = 0;
      uint64_t size = 0;
      if (!Read(image, base, &name) || !Read(image, base + 4, &st_info) ||
          !Read(image, base + 5, &st_other) || !Read(image, base + 16, &size)) {
        return InvalidArgument("cubin: truncated symbol table");
      }
      if (name >= strings.size()) return InvalidArgument("cubin: bad symbol name offset");
      CubinSymbol symbol;
      std::string_view rest = strings.substr(name);
      symbol.name = std::string(rest.substr(0, rest.find('\0')));
      symbol.type = st_info & 0xf;
      symbol.binding = st_info >> 4;
      symbol.other = st_other;
      symbol.size = size;
      if (!symbol.name.empty()) info.symbols.push_back(std::move(symbol));
    }
  }
  return info;
}

}  // namespace kiln::cuda
