#include "kiln/rocm/code_object.h"

#include <cstring>
#include <map>
#include <memory>
#include <variant>

#include "kiln/base/strings.h"

namespace kiln::rocm {

namespace {

template <typename T>
bool ReadAt(std::string_view image, uint64_t offset, T* out) {
  if (offset > image.size() || image.size() - offset < sizeof(T)) return false;
  std::memcpy(out, image.data() + offset, sizeof(T));
  return true;
}

// ---- a MessagePack reader: just enough for NT_AMDGPU_METADATA ----

struct MsgValue;
using MsgMap = std::vector<std::pair<std::string, MsgValue>>;
struct MsgValue {
  enum class Kind { kNil, kBool, kInt, kFloat, kString, kArray, kMap } kind = Kind::kNil;
  bool b = false;
  int64_t i = 0;
  double f = 0;
  std::string s;
  std::vector<MsgValue> array;
  MsgMap map;
  const MsgValue* Get(std::string_view key) const {
    for (const auto& [k, v] : map)
      if (k == key) return &v;
    return nullptr;
  }
};

class MsgReader {
 public:
  explicit MsgReader(std::string_view data) : data_(data) {}
  Status Read(MsgValue* out, int depth = 0) {
    if (depth > 32) return InvalidArgument("metadata nests too deeply");
    uint8_t tag = 0;
    KILN_RETURN_IF_ERROR(Byte(&tag));
    if (tag <= 0x7f) return Int(out, tag);
    if (tag >= 0xe0) return Int(out, static_cast<int8_t>(tag));
    if ((tag & 0xe0) == 0xa0) return String(out, tag & 0x1f);
    if ((tag & 0xf0) == 0x90) return Array(out, tag & 0x0f, depth);
    if ((tag & 0xf0) == 0x80) return Map(out, tag & 0x0f, depth);
    switch (tag) {
      case 0xc0: out->kind = MsgValue::Kind::kNil; return OkStatus();
      case 0xc2: case 0xc3: out->kind = MsgValue::Kind::kBool; out->b = tag == 0xc3; return OkStatus();
      case 0xcc: return Unsigned(out, 1);
      case 0xcd: return Unsigned(out, 2);
      case 0xce: return Unsigned(out, 4);
      case 0xcf: return Unsigned(out, 8);
      case 0xd0: return Signed(out, 1);
      case 0xd1: return Signed(out, 2);
      case 0xd2: return Signed(out, 4);
      case 0xd3: return Signed(out, 8);
      case 0xca: { uint64_t v; KILN_RETURN_IF_ERROR(Big(4, &v)); float f; uint32_t u = static_cast<uint32_t>(v); std::memcpy(&f, &u, 4); out->kind = MsgValue::Kind::kFloat; out->f = f; return OkStatus(); }
      case 0xcb: { uint64_t v; KILN_RETURN_IF_ERROR(Big(8, &v)); std::memcpy(&out->f, &v, 8); out->kind = MsgValue::Kind::kFloat; return OkStatus(); }
      case 0xd9: case 0xc4: { uint64_t n; KILN_RETURN_IF_ERROR(Big(1, &n)); return String(out, n); }
      case 0xda: case 0xc5: { uint64_t n; KILN_RETURN_IF_ERROR(Big(2, &n)); return String(out, n); }
      case 0xdb: case 0xc6: { uint64_t n; KILN_RETURN_IF_ERROR(Big(4, &n)); return String(out, n); }
      case 0xdc: { uint64_t n; KILN_RETURN_IF_ERROR(Big(2, &n)); return Array(out, n, depth); }
      case 0xdd: { uint64_t n; KILN_RETURN_IF_ERROR(Big(4, &n)); return Array(out, n, depth); }
      case 0xde: { uint64_t n; KILN_RETURN_IF_ERROR(Big(2, &n)); return Map(out, n, depth); }
      case 0xdf: { uint64_t n; KILN_RETURN_IF_ERROR(Big(4, &n)); return Map(out, n, depth); }
      default: return InvalidArgument("metadata: unsupported MessagePack tag 0x", HexByte(tag));
    }
  }

 private:
  static std::string HexByte(uint8_t b) {
    const char* d = "0123456789abcdef";
    return std::string{d[b >> 4], d[b & 15]};
  }
  Status Byte(uint8_t* b) {
    if (pos_ >= data_.size()) return InvalidArgument("metadata ends early");
    *b = static_cast<uint8_t>(data_[pos_++]);
    return OkStatus();
  }
  Status Big(int n, uint64_t* v) {
    *v = 0;
    for (int k = 0; k < n; ++k) {
      uint8_t b;
      KILN_RETURN_IF_ERROR(Byte(&b));
      *v = (*v << 8) | b;
    }
    return OkStatus();
  }
  Status Int(MsgValue* out, int64_t v) {
    out->kind = MsgValue::Kind::kInt;
    out->i = v;
    return OkStatus();
  }
  Status Unsigned(MsgValue* out, int n) {
    uint64_t v;
    KILN_RETURN_IF_ERROR(Big(n, &v));
    return Int(out, static_cast<int64_t>(v));
  }
  Status Signed(MsgValue* out, int n) {
    uint64_t v;
    KILN_RETURN_IF_ERROR(Big(n, &v));
    const int shift = 64 - 8 * n;
    return Int(out, static_cast<int64_t>(v << shift) >> shift);
  }
  Status String(MsgValue* out, uint64_t n) {
    if (n > data_.size() - pos_) return InvalidArgument("metadata string runs past the note");
    out->kind = MsgValue::Kind::kString;
    out->s = std::string(data_.substr(pos_, n));
    pos_ += n;
    return OkStatus();
  }
  Status Array(MsgValue* out, uint64_t n, int depth) {
    if (n > data_.size() - pos_) return InvalidArgument("metadata array runs past the note");
    out->kind = MsgValue::Kind::kArray;
    out->array.resize(n);
    for (MsgValue& v : out->array) KILN_RETURN_IF_ERROR(Read(&v, depth + 1));
    return OkStatus();
  }
  Status Map(MsgValue* out, uint64_t n, int depth) {
    if (n > data_.size() - pos_) return InvalidArgument("metadata map runs past the note");
    out->kind = MsgValue::Kind::kMap;
    for (uint64_t k = 0; k < n; ++k) {
      MsgValue key, value;
      KILN_RETURN_IF_ERROR(Read(&key, depth + 1));
      KILN_RETURN_IF_ERROR(Read(&value, depth + 1));
      if (key.kind != MsgValue::Kind::kString) return InvalidArgument("metadata: a map key is not a string");
      out->map.emplace_back(std::move(key.s), std::move(value));
    }
    return OkStatus();
  }

  std::string_view data_;
  size_t pos_ = 0;
};

int64_t IntField(const MsgValue& m, std::string_view key) {
  const MsgValue* v = m.Get(key);
  return v != nullptr && v->kind == MsgValue::Kind::kInt ? v->i : 0;
}

Status Decode(std::string_view note, CodeObjectInfo* info) {
  MsgValue root;
  MsgReader reader(note);
  KILN_RETURN_IF_ERROR(reader.Read(&root));
  if (root.kind != MsgValue::Kind::kMap) return InvalidArgument("metadata is not a map");
  if (const MsgValue* t = root.Get("amdhsa.target"); t != nullptr) info->target = t->s;
  if (const MsgValue* v = root.Get("amdhsa.version"); v != nullptr)
    for (const MsgValue& x : v->array) info->metadata_version.push_back(x.i);
  if (const MsgValue* ks = root.Get("amdhsa.kernels"); ks != nullptr) {
    for (const MsgValue& k : ks->array) {
      KernelMetadata m;
      if (const MsgValue* n = k.Get(".name")) m.name = n->s;
      if (const MsgValue* s = k.Get(".symbol")) m.symbol = s->s;
      m.sgpr_count = IntField(k, ".sgpr_count");
      m.vgpr_count = IntField(k, ".vgpr_count");
      m.agpr_count = IntField(k, ".agpr_count");
      m.lds_bytes = IntField(k, ".group_segment_fixed_size");
      m.scratch_bytes = IntField(k, ".private_segment_fixed_size");
      m.kernarg_bytes = IntField(k, ".kernarg_segment_size");
      m.max_flat_workgroup_size = IntField(k, ".max_flat_workgroup_size");
      m.wavefront_size = IntField(k, ".wavefront_size");
      m.sgpr_spill_count = IntField(k, ".sgpr_spill_count");
      m.vgpr_spill_count = IntField(k, ".vgpr_spill_count");
      if (const MsgValue* d = k.Get(".uses_dynamic_stack")) m.uses_dynamic_stack = d->b;
      info->kernels.push_back(std::move(m));
    }
  }
  return OkStatus();
}

}  // namespace

std::string GfxArchForMach(uint32_t mach) {
  static const std::map<uint32_t, const char*> kMach = {
      {0x2c, "gfx900"},  {0x2d, "gfx902"},  {0x2e, "gfx904"},  {0x2f, "gfx906"},
      {0x30, "gfx908"},  {0x31, "gfx909"},  {0x32, "gfx90c"},  {0x33, "gfx1010"},
      {0x34, "gfx1011"}, {0x35, "gfx1012"}, {0x36, "gfx1030"}, {0x37, "gfx1031"},
      {0x38, "gfx1032"}, {0x39, "gfx1033"}, {0x3f, "gfx90a"},  {0x40, "gfx940"},
      {0x41, "gfx1100"}, {0x42, "gfx1013"}, {0x44, "gfx1103"}, {0x46, "gfx1101"},
      {0x4b, "gfx941"},  {0x4c, "gfx942"},  {0x4f, "gfx950"}};
  auto it = kMach.find(mach);
  return it == kMach.end() ? "" : it->second;
}

const KernelMetadata* CodeObjectInfo::Find(std::string_view name) const {
  for (const KernelMetadata& k : kernels)
    if (k.name == name) return &k;
  return nullptr;
}

std::string CodeObjectInfo::ToString() const {
  std::string s = StrCat("target ", target, " (", gfx_arch, ", code object ABI ", abi_version, ")\n");
  for (const KernelMetadata& k : kernels) {
    s += StrCat(k.name, ": sgpr ", k.sgpr_count, " vgpr ", k.vgpr_count, " agpr ", k.agpr_count,
                " lds ", k.lds_bytes, " scratch ", k.scratch_bytes, " max workgroup ",
                k.max_flat_workgroup_size, " wave ", k.wavefront_size, " spills ",
                k.sgpr_spill_count, "/", k.vgpr_spill_count, "\n");
  }
  return s;
}

StatusOr<CodeObjectInfo> InspectCodeObject(std::string_view image) {
  if (image.size() < 64 || std::memcmp(image.data(), "\x7f" "ELF", 4) != 0) {
    return InvalidArgument("not an ELF image (", image.size(), " bytes)");
  }
  if (image[4] != 2 || image[5] != 1) return InvalidArgument("not a little-endian ELF64 image");
  CodeObjectInfo info;
  info.abi_version = static_cast<uint8_t>(image[8]);
  uint16_t machine = 0, shentsize = 0, shnum = 0;
  uint64_t shoff = 0;
  ReadAt(image, 18, &machine);
  ReadAt(image, 48, &info.flags);
  ReadAt(image, 40, &shoff);
  ReadAt(image, 58, &shentsize);
  ReadAt(image, 60, &shnum);
  if (machine != 224) return InvalidArgument("not an AMDGPU code object (ELF machine ", machine, ")");
  info.gfx_arch = GfxArchForMach(info.flags & 0xff);
  // v4+: the feature field (bits 8-11) says "on" with 0x300 (xnack) and 0xc00 (sramecc).
  info.xnack = (info.flags & 0x300) == 0x300;
  info.sramecc = (info.flags & 0xc00) == 0xc00;
  if (shentsize < 64 || shoff > image.size() || (image.size() - shoff) / shentsize < shnum) {
    return InvalidArgument("code object: bad section header table");
  }
  for (uint16_t s = 0; s < shnum; ++s) {
    const uint64_t h = shoff + uint64_t{s} * shentsize;
    uint32_t type = 0;
    uint64_t offset = 0, size = 0;
    ReadAt(image, h + 4, &type);
    ReadAt(image, h + 24, &offset);
    ReadAt(image, h + 32, &size);
    if (type != 7) continue;  // SHT_NOTE
    if (offset > image.size() || size > image.size() - offset) return InvalidArgument("code object: bad note section");
    uint64_t p = offset, end = offset + size;
    while (p + 12 <= end) {
      uint32_t namesz = 0, descsz = 0, ntype = 0;
      ReadAt(image, p, &namesz);
      ReadAt(image, p + 4, &descsz);
      ReadAt(image, p + 8, &ntype);
      const uint64_t name_at = p + 12;
      const uint64_t desc_at = name_at + ((uint64_t{namesz} + 3) & ~uint64_t{3});
      const uint64_t next = desc_at + ((uint64_t{descsz} + 3) & ~uint64_t{3});
      if (desc_at + descsz > end) return InvalidArgument("code object: a note runs past its section");
      std::string_view name = image.substr(name_at, namesz);
      if (ntype == 32 && name.substr(0, 6) == "AMDGPU") {  // NT_AMDGPU_METADATA
        KILN_RETURN_IF_ERROR(Decode(image.substr(desc_at, descsz), &info));
        return info;
      }
      p = next;
    }
  }
  return InvalidArgument("code object has no NT_AMDGPU_METADATA note");
}

}  // namespace kiln::rocm
