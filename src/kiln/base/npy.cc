#include "kiln/base/npy.h"

#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>

#include "kiln/base/strings.h"

namespace kiln {

static_assert(std::endian::native == std::endian::little,
              "kiln's npy layer assumes a little-endian host");

// ---------------------------------------------------------------------------------------------
// dtypes

std::string NpyDtype::Descr() const {
  char order = itemsize == 1 || kind == 'V' || kind == 'S' ? '|' : '<';
  return StrCat(order, kind, itemsize);
}

StatusOr<NpyDtype> ParseNpyDescr(std::string_view descr, bool* big_endian) {
  std::string_view s = descr;
  char order = '=';
  if (!s.empty() && (s[0] == '<' || s[0] == '>' || s[0] == '|' || s[0] == '=')) {
    order = s[0];
    s.remove_prefix(1);
  }
  if (s.empty()) return InvalidArgument("npy: empty dtype descr");
  NpyDtype d;
  d.kind = s[0] == '?' ? 'b' : s[0];
  s.remove_prefix(1);
  if (s.empty() || s.size() > 6 || !std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return InvalidArgument("npy: unsupported dtype descr '", descr, "'");
  d.itemsize = std::stoi(std::string(s));
  bool ok = false;
  switch (d.kind) {
    case 'b': ok = d.itemsize == 1; break;
    case 'i':
    case 'u': ok = d.itemsize == 1 || d.itemsize == 2 || d.itemsize == 4 || d.itemsize == 8; break;
    case 'f': ok = d.itemsize == 2 || d.itemsize == 4 || d.itemsize == 8; break;
    case 'c': ok = d.itemsize == 8 || d.itemsize == 16; break;
    case 'V':
    case 'S': ok = d.itemsize >= 1; break;
    default: ok = false;
  }
  if (!ok)
    return InvalidArgument("npy: unsupported dtype descr '", descr,
                           "' (kiln reads b1, i1..i8, u1..u8, f2, f4, f8, c8, c16, V<n>, S<n>)");
  if (big_endian) *big_endian = order == '>' && d.itemsize > 1 && d.kind != 'V' && d.kind != 'S';
  return d;
}

int64_t NpyArray::num_elements() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

static std::string ShapeTuple(const std::vector<int64_t>& shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  if (shape.size() == 1) s += ",";
  return s + ")";
}

std::string NpyArray::Describe() const { return dtype.Descr() + " " + ShapeTuple(shape); }

// Product of dims with overflow and sign checks.
static StatusOr<int64_t> CheckedElementCount(const std::vector<int64_t>& shape, int itemsize,
                                             std::string_view what) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) return InvalidArgument(what, ": negative dimension in shape ", ShapeTuple(shape));
    if (d != 0 && n > std::numeric_limits<int64_t>::max() / d / std::max(itemsize, 1))
      return InvalidArgument(what, ": shape ", ShapeTuple(shape), " is too large");
    n *= d;
  }
  return n;
}

StatusOr<NpyArray> MakeNpyArray(NpyDtype dtype, std::vector<int64_t> shape,
                                std::string_view bytes) {
  KILN_ASSIGN_OR_RETURN(int64_t n, CheckedElementCount(shape, dtype.itemsize, "npy"));
  if (static_cast<uint64_t>(n) * dtype.itemsize != bytes.size())
    return InvalidArgument("npy: ", n, " elements of ", dtype.Descr(), " need ",
                           n * dtype.itemsize, " bytes, got ", bytes.size());
  NpyArray a;
  a.dtype = dtype;
  a.shape = std::move(shape);
  a.data.assign(bytes.begin(), bytes.end());
  return a;
}

// ---------------------------------------------------------------------------------------------
// .npy header: a Python dict literal such as
//   {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }

namespace {

class HeaderParser {
 public:
  HeaderParser(std::string_view text, std::string_view what) : s_(text), what_(what) {}

  // header ::= '{' (key ':' value ','?)* '}'
  Status Parse(std::string* descr, bool* fortran, std::vector<int64_t>* shape) {
    bool have_descr = false, have_fortran = false, have_shape = false;
    Skip();
    if (!Eat('{')) return Error("expected '{'");
    while (true) {
      Skip();
      if (Eat('}')) break;
      std::string key;
      KILN_RETURN_IF_ERROR(ParseString(&key));
      Skip();
      if (!Eat(':')) return Error("expected ':' after '" + key + "'");
      Skip();
      if (key == "descr") {
        if (Peek() == '[') return Error("structured dtypes are not supported");
        KILN_RETURN_IF_ERROR(ParseString(descr));
        have_descr = true;
      } else if (key == "fortran_order") {
        if (EatWord("True")) {
          *fortran = true;
        } else if (EatWord("False")) {
          *fortran = false;
        } else {
          return Error("expected True or False for fortran_order");
        }
        have_fortran = true;
      } else if (key == "shape") {
        KILN_RETURN_IF_ERROR(ParseTuple(shape));
        have_shape = true;
      } else {
        return Error("unexpected key '" + key + "'");
      }
      Skip();
      if (Eat(',')) continue;
      Skip();
      if (Eat('}')) break;
      return Error("expected ',' or '}'");
    }
    if (!have_descr || !have_fortran || !have_shape)
      return Error("header lacks one of 'descr', 'fortran_order', 'shape'");
    return OkStatus();
  }

 private:
  char Peek() const { return pos_ < s_.size() ? s_[pos_] : '\0'; }
  bool Eat(char c) {
    if (Peek() != c) return false;
    ++pos_;
    return true;
  }
  bool EatWord(std::string_view w) {
    if (s_.substr(pos_, w.size()) != w) return false;
    pos_ += w.size();
    return true;
  }
  void Skip() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\n' || s_[pos_] == '\t' || s_[pos_] == '\r'))
      ++pos_;
  }
  Status Error(std::string_view msg) const {
    return InvalidArgument(what_, ": bad .npy header at offset ", pos_, ": ", msg, " in ",
                           CEscapeQuoted(s_.substr(0, 200)));
  }
  Status ParseString(std::string* out) {
    char q = Peek();
    if (q != '\'' && q != '"') return Error("expected a quoted string");
    ++pos_;
    size_t end = s_.find(q, pos_);
    if (end == std::string_view::npos) return Error("unterminated string");
    *out = std::string(s_.substr(pos_, end - pos_));
    pos_ = end + 1;
    return OkStatus();
  }
  // tuple ::= '(' (int 'L'? (',' int 'L'?)* ','?)? ')'    (also accepts '[' ... ']')
  Status ParseTuple(std::vector<int64_t>* out) {
    out->clear();
    char close = Eat('(') ? ')' : Eat('[') ? ']' : '\0';
    if (!close) return Error("expected a shape tuple");
    while (true) {
      Skip();
      if (Eat(close)) return OkStatus();
      size_t start = pos_;
      while (Peek() >= '0' && Peek() <= '9') ++pos_;
      if (start == pos_) return Error("expected a dimension size");
      if (pos_ - start > 18) return Error("dimension size too large");
      out->push_back(std::stoll(std::string(s_.substr(start, pos_ - start))));
      Eat('L');  // Python 2 long suffix
      Skip();
      if (Eat(',')) continue;
      Skip();
      if (Eat(close)) return OkStatus();
      return Error("expected ',' or the end of the shape");
    }
  }

  std::string_view s_;
  std::string_view what_;
  size_t pos_ = 0;
};

uint16_t Load16(const uint8_t* p) { return uint16_t(p[0] | (p[1] << 8)); }
uint32_t Load32(const uint8_t* p) {
  return uint32_t(p[0]) | (uint32_t(p[1]) << 8) | (uint32_t(p[2]) << 16) | (uint32_t(p[3]) << 24);
}
uint64_t Load64(const uint8_t* p) { return uint64_t(Load32(p)) | (uint64_t(Load32(p + 4)) << 32); }

void Put16(std::string& s, uint16_t v) {
  s.push_back(char(v & 0xff));
  s.push_back(char(v >> 8));
}
void Put32(std::string& s, uint32_t v) {
  Put16(s, uint16_t(v & 0xffff));
  Put16(s, uint16_t(v >> 16));
}
void Put64(std::string& s, uint64_t v) {
  Put32(s, uint32_t(v & 0xffffffffu));
  Put32(s, uint32_t(v >> 32));
}

// Reverses the bytes of each `unit`-byte group.
void ByteSwap(std::vector<uint8_t>& data, int unit) {
  for (size_t i = 0; i + unit <= data.size(); i += unit) std::reverse(&data[i], &data[i + unit]);
}

// Reorders Fortran-order (column-major) data into C order.
std::vector<uint8_t> FortranToC(const std::vector<uint8_t>& in, const std::vector<int64_t>& shape,
                                int itemsize) {
  int64_t rank = static_cast<int64_t>(shape.size());
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  std::vector<uint8_t> out(in.size());
  if (n == 0) return out;
  std::vector<int64_t> fstride(rank);
  int64_t st = 1;
  for (int64_t k = 0; k < rank; ++k) {
    fstride[k] = st;
    st *= shape[k];
  }
  std::vector<int64_t> idx(rank, 0);
  int64_t src = 0;  // Fortran offset of idx, in elements
  for (int64_t i = 0; i < n; ++i) {
    std::memcpy(&out[i * itemsize], &in[src * itemsize], itemsize);
    // Advance the C-order multi-index (last dimension fastest), keeping src in step.
    for (int64_t k = rank - 1; k >= 0; --k) {
      if (++idx[k] < shape[k]) {
        src += fstride[k];
        break;
      }
      src -= (shape[k] - 1) * fstride[k];
      idx[k] = 0;
    }
  }
  return out;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// .npy

StatusOr<NpyArray> ParseNpy(std::string_view bytes, std::string_view what) {
  const auto* p = reinterpret_cast<const uint8_t*>(bytes.data());
  if (bytes.size() < 10 || std::memcmp(p, "\x93NUMPY", 6) != 0)
    return InvalidArgument(what, ": not a .npy file (no \\x93NUMPY magic)");
  int major = p[6], minor = p[7];
  size_t header_len, header_start;
  if (major == 1) {
    header_len = Load16(p + 8);
    header_start = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) return InvalidArgument(what, ": truncated .npy header");
    header_len = Load32(p + 8);
    header_start = 12;
  } else {
    return InvalidArgument(what, ": unsupported .npy format version ", major, ".", minor);
  }
  if (header_start + header_len > bytes.size())
    return InvalidArgument(what, ": truncated .npy header (", header_len, " bytes declared)");
  std::string descr;
  bool fortran = false;
  std::vector<int64_t> shape;
  KILN_RETURN_IF_ERROR(HeaderParser(bytes.substr(header_start, header_len), what)
                           .Parse(&descr, &fortran, &shape));
  bool big_endian = false;
  auto dtype = ParseNpyDescr(descr, &big_endian);
  if (!dtype.ok()) return dtype.status().WithContext(what);
  KILN_ASSIGN_OR_RETURN(int64_t n, CheckedElementCount(shape, dtype->itemsize, what));
  uint64_t need = static_cast<uint64_t>(n) * dtype->itemsize;
  size_t data_start = header_start + header_len;
  if (bytes.size() - data_start != need)
    return DataLoss(what, ": ", descr, " ", ShapeTuple(shape), " needs ", need,
                    " bytes of data, the file holds ", bytes.size() - data_start);
  NpyArray a;
  a.dtype = *dtype;
  a.shape = std::move(shape);
  a.data.assign(p + data_start, p + data_start + need);
  if (big_endian) ByteSwap(a.data, a.dtype.kind == 'c' ? a.dtype.itemsize / 2 : a.dtype.itemsize);
  if (fortran && a.shape.size() > 1) a.data = FortranToC(a.data, a.shape, a.dtype.itemsize);
  return a;
}

std::string SerializeNpy(const NpyArray& array) {
  std::string dict = StrCat("{'descr': '", array.dtype.Descr(),
                            "', 'fortran_order': False, 'shape': ", ShapeTuple(array.shape), ", }");
  // magic(6) + version(2) + length(2 or 4) + dict + padding + '\n', total a multiple of 64.
  size_t prefix = 10;
  size_t total = (prefix + dict.size() + 1 + 63) / 64 * 64;
  int major = 1;
  if (total - prefix > 65535) {
    major = 2;
    prefix = 12;
    total = (prefix + dict.size() + 1 + 63) / 64 * 64;
  }
  std::string out("\x93NUMPY", 6);
  out.push_back(char(major));
  out.push_back(0);
  size_t header_len = total - prefix;
  if (major == 1) {
    Put16(out, uint16_t(header_len));
  } else {
    Put32(out, uint32_t(header_len));
  }
  out += dict;
  out.append(header_len - dict.size() - 1, ' ');
  out.push_back('\n');
  out.append(reinterpret_cast<const char*>(array.data.data()), array.data.size());
  return out;
}

namespace {

// Physical memory of this host in bytes (a large figure when it cannot be known).
uint64_t HostMemoryBytes() {
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0) return uint64_t{1} << 48;
  return static_cast<uint64_t>(pages) * static_cast<uint64_t>(page);
}

}  // namespace

StatusOr<std::string> ReadFileToString(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (ec || !fs::exists(st)) return NotFound("cannot open ", path, ": no such file");
  if (fs::is_directory(st)) return InvalidArgument(path, " is a directory, not a file");
  // Regular files and pipes (`<(...)` on a shell); never devices such as /dev/zero, which read
  // forever.
  if (!fs::is_regular_file(st) && !fs::is_fifo(st))
    return InvalidArgument(path, " is not a regular file (a device or socket)");
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFound("cannot open ", path, ": ", std::strerror(errno));
  // A file (or what a pipe brings) larger than this host's memory cannot be read into it: say so
  // before trying, instead of swapping or being killed on the way.
  const uint64_t limit = HostMemoryBytes();
  std::string data;
  try {
    if (fs::is_regular_file(st)) {
      const uintmax_t size = fs::file_size(path, ec);
      if (ec) return DataLoss("cannot size ", path, ": ", ec.message());
      if (size > limit)
        return InvalidArgument(path, " is ", size, " bytes, more than this host's memory (", limit, " bytes)");
      data.resize(static_cast<size_t>(size));
      in.read(data.data(), static_cast<std::streamsize>(size));
      if (static_cast<uintmax_t>(in.gcount()) != size) return DataLoss("error reading ", path, " (it shrank while read?)");
    } else {
      char chunk[1 << 16];
      while (in.read(chunk, sizeof chunk) || in.gcount() > 0) {
        data.append(chunk, static_cast<size_t>(in.gcount()));
        if (data.size() > limit)
          return InvalidArgument(path, " brings more than this host's memory (", limit, " bytes)");
      }
    }
  } catch (const std::bad_alloc&) {
    return ResourceExhausted("out of memory reading ", path);
  } catch (const std::length_error&) {
    return ResourceExhausted("out of memory reading ", path);
  }
  if (in.bad()) return DataLoss("error reading ", path);
  return data;
}

Status WriteStringToFile(const std::string& path, std::string_view data) {
  std::string tmp = StrCat(path, ".tmp.", ::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) return FailedPrecondition("cannot write ", path, ": ", std::strerror(errno));
    out.write(data.data(), static_cast<std::streamsize>(data.size()));
    out.flush();
    if (!out) {
      std::remove(tmp.c_str());
      return DataLoss("error writing ", path);
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    return FailedPrecondition("cannot write ", path, ": ", std::strerror(errno));
  }
  return OkStatus();
}

StatusOr<NpyArray> ReadNpyFile(const std::string& path) {
  KILN_ASSIGN_OR_RETURN(std::string bytes, ReadFileToString(path));
  return ParseNpy(bytes, path);
}

Status WriteNpyFile(const std::string& path, const NpyArray& array) {
  return WriteStringToFile(path, SerializeNpy(array));
}

// ---------------------------------------------------------------------------------------------
// .npz (zip)

namespace {

constexpr uint32_t kLocalSig = 0x04034b50;
constexpr uint32_t kCentralSig = 0x02014b50;
constexpr uint32_t kEndSig = 0x06054b50;
constexpr uint32_t kEnd64Sig = 0x06064b50;
constexpr uint32_t kEnd64LocatorSig = 0x07064b50;
constexpr uint32_t k32Max = 0xffffffffu;
constexpr uint16_t k16Max = 0xffff;

struct CentralEntry {
  std::string name;
  uint16_t flags = 0;
  uint16_t method = 0;
  uint32_t crc = 0;
  uint64_t compressed_size = 0;
  uint64_t uncompressed_size = 0;
  uint64_t local_offset = 0;
};

StatusOr<std::string> Inflate(std::string_view in, uint64_t out_size, std::string_view what) {
  // Deflate cannot expand data by more than ~1032:1; a larger claim is a corrupt (or hostile)
  // header, and we refuse it before allocating.
  if (out_size > in.size() * 1040ull + 1024)
    return DataLoss(what, ": declared size ", out_size, " is impossible for ", in.size(),
                    " compressed bytes");
  std::string out;
  try {
    out.assign(out_size, '\0');
  } catch (const std::bad_alloc&) {
    return ResourceExhausted("out of memory allocating ", out_size, " bytes for ", what);
  } catch (const std::length_error&) {
    return ResourceExhausted("out of memory allocating ", out_size, " bytes for ", what);
  }
  z_stream zs{};
  if (inflateInit2(&zs, -MAX_WBITS) != Z_OK) return Internal(what, ": inflateInit2 failed");
  // zlib's avail_in/avail_out are 32-bit: feed in chunks.
  size_t in_pos = 0, out_pos = 0;
  int rc = Z_OK;
  while (rc == Z_OK) {
    size_t in_chunk = std::min<size_t>(in.size() - in_pos, 1u << 30);
    size_t out_chunk = std::min<size_t>(out.size() - out_pos, 1u << 30);
    zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data() + in_pos));
    zs.avail_in = static_cast<uInt>(in_chunk);
    zs.next_out = reinterpret_cast<Bytef*>(out.data() + out_pos);
    zs.avail_out = static_cast<uInt>(out_chunk);
    rc = inflate(&zs, Z_NO_FLUSH);
    in_pos += in_chunk - zs.avail_in;
    out_pos += out_chunk - zs.avail_out;
    if (rc == Z_BUF_ERROR && (in_pos == in.size() || out_pos == out.size())) break;
  }
  inflateEnd(&zs);
  if (rc != Z_STREAM_END || out_pos != out.size())
    return DataLoss(what, ": corrupt deflate data (zlib status ", rc, ", ", out_pos, " of ",
                    out.size(), " bytes)");
  return out;
}

uint32_t Crc32(std::string_view data) {
  uLong crc = crc32(0L, Z_NULL, 0);
  size_t pos = 0;
  while (pos < data.size()) {
    size_t chunk = std::min<size_t>(data.size() - pos, 1u << 30);
    crc = crc32(crc, reinterpret_cast<const Bytef*>(data.data() + pos), static_cast<uInt>(chunk));
    pos += chunk;
  }
  return static_cast<uint32_t>(crc);
}

}  // namespace

StatusOr<std::vector<NpzMember>> ParseNpz(std::string_view bytes, std::string_view what) {
  const auto* p = reinterpret_cast<const uint8_t*>(bytes.data());
  const size_t size = bytes.size();
  auto corrupt = [&](auto... msg) { return DataLoss(what, ": not a valid .npz (zip) file: ", msg...); };
  if (size < 22) return corrupt("too short");

  // End of central directory: the last record, followed only by a comment of <= 64 KiB.
  size_t eocd = std::string_view::npos;
  size_t lowest = size >= 22 + 65535 ? size - 22 - 65535 : 0;
  for (size_t i = size - 22 + 1; i-- > lowest;) {
    if (Load32(p + i) == kEndSig) {
      eocd = i;
      break;
    }
  }
  if (eocd == std::string_view::npos) return corrupt("no end-of-central-directory record");
  uint64_t entries = Load16(p + eocd + 10);
  uint64_t cd_size = Load32(p + eocd + 12);
  uint64_t cd_offset = Load32(p + eocd + 16);
  if (eocd >= 20 && Load32(p + eocd - 20) == kEnd64LocatorSig) {
    uint64_t off64 = Load64(p + eocd - 20 + 8);
    if (off64 > size || size - off64 < 56 || Load32(p + off64) != kEnd64Sig)
      return corrupt("bad zip64 end-of-central-directory record");
    entries = Load64(p + off64 + 32);
    cd_size = Load64(p + off64 + 40);
    cd_offset = Load64(p + off64 + 48);
  }
  if (cd_offset > size || cd_size > size - cd_offset) return corrupt("central directory out of range");

  std::vector<CentralEntry> central;
  size_t pos = cd_offset;
  for (uint64_t e = 0; e < entries; ++e) {
    if (pos + 46 > size || Load32(p + pos) != kCentralSig)
      return corrupt("bad central directory entry ", e);
    CentralEntry ce;
    ce.flags = Load16(p + pos + 8);
    ce.method = Load16(p + pos + 10);
    ce.crc = Load32(p + pos + 16);
    ce.compressed_size = Load32(p + pos + 20);
    ce.uncompressed_size = Load32(p + pos + 24);
    size_t name_len = Load16(p + pos + 28), extra_len = Load16(p + pos + 30),
           comment_len = Load16(p + pos + 32);
    uint16_t disk = Load16(p + pos + 34);
    ce.local_offset = Load32(p + pos + 42);
    if (pos + 46 + name_len + extra_len + comment_len > size)
      return corrupt("central directory entry ", e, " runs past the end");
    ce.name.assign(reinterpret_cast<const char*>(p + pos + 46), name_len);
    // zip64 extended information: present fields are those whose 32-bit value is saturated.
    const uint8_t* x = p + pos + 46 + name_len;
    const uint8_t* xend = x + extra_len;
    while (x + 4 <= xend) {
      uint16_t id = Load16(x), len = Load16(x + 2);
      const uint8_t* v = x + 4;
      if (v + len > xend) break;
      if (id == 0x0001) {
        const uint8_t* f = v;
        auto take = [&](uint64_t& field) -> bool {
          if (f + 8 > v + len) return false;
          field = Load64(f);
          f += 8;
          return true;
        };
        if (ce.uncompressed_size == k32Max && !take(ce.uncompressed_size)) return corrupt("short zip64 field");
        if (ce.compressed_size == k32Max && !take(ce.compressed_size)) return corrupt("short zip64 field");
        if (ce.local_offset == k32Max && !take(ce.local_offset)) return corrupt("short zip64 field");
      }
      x = v + len;
    }
    (void)disk;
    central.push_back(std::move(ce));
    pos += 46 + name_len + extra_len + comment_len;
  }

  std::vector<NpzMember> members;
  std::set<std::string> seen;
  for (const CentralEntry& ce : central) {
    std::string member_what = StrCat(what, ":", ce.name);
    if (ce.flags & 1) return InvalidArgument(member_what, ": encrypted zip members are not supported");
    size_t lo = ce.local_offset;
    if (lo > size || size - lo < 30 || Load32(p + lo) != kLocalSig)
      return corrupt("bad local header for ", ce.name);
    size_t data_start = lo + 30 + Load16(p + lo + 26) + Load16(p + lo + 28);
    if (data_start > size || ce.compressed_size > size - data_start)
      return corrupt("member ", ce.name, " runs past the end");
    std::string_view raw = bytes.substr(data_start, ce.compressed_size);
    std::string inflated;
    std::string_view content;
    if (ce.method == 0) {
      if (ce.compressed_size != ce.uncompressed_size) return corrupt("stored member ", ce.name, " has two sizes");
      content = raw;
    } else if (ce.method == 8) {
      KILN_ASSIGN_OR_RETURN(inflated, Inflate(raw, ce.uncompressed_size, member_what));
      content = inflated;
    } else {
      return InvalidArgument(member_what, ": unsupported zip compression method ", ce.method,
                             " (kiln reads stored and deflated members)");
    }
    if (Crc32(content) != ce.crc) return DataLoss(member_what, ": CRC-32 mismatch");
    if (!EndsWith(ce.name, ".npy"))
      return InvalidArgument(member_what, ": not a .npy member (an .npz holds only .npy files)");
    NpzMember m;
    m.name = ce.name.substr(0, ce.name.size() - 4);
    if (!seen.insert(m.name).second) return InvalidArgument(member_what, ": duplicate member");
    KILN_ASSIGN_OR_RETURN(m.array, ParseNpy(content, member_what));
    members.push_back(std::move(m));
  }
  return members;
}

std::string SerializeNpz(const std::vector<NpzMember>& members, const NpzWriteOptions& options) {
  const bool force = options.force_zip64;
  // DOS date 1980-01-01 00:00: a fixed timestamp keeps archives byte-for-byte reproducible.
  constexpr uint16_t kDosTime = 0, kDosDate = (0 << 9) | (1 << 5) | 1;
  std::string out, central;
  for (const NpzMember& m : members) {
    std::string name = m.name + ".npy";
    std::string body = SerializeNpy(m.array);
    uint32_t crc = Crc32(body);
    uint64_t offset = out.size();
    bool big = body.size() >= k32Max;
    bool local64 = force || big;
    uint16_t version = local64 || offset >= k32Max ? 45 : 20;

    Put32(out, kLocalSig);
    Put16(out, version);
    Put16(out, 0);  // flags
    Put16(out, 0);  // method: stored
    Put16(out, kDosTime);
    Put16(out, kDosDate);
    Put32(out, crc);
    Put32(out, local64 ? k32Max : uint32_t(body.size()));
    Put32(out, local64 ? k32Max : uint32_t(body.size()));
    Put16(out, uint16_t(name.size()));
    Put16(out, local64 ? 20 : 0);
    out += name;
    if (local64) {
      Put16(out, 0x0001);
      Put16(out, 16);
      Put64(out, body.size());
      Put64(out, body.size());
    }
    out += body;

    bool size64 = force || big;
    bool offset64 = force || offset >= k32Max;
    uint16_t extra = (size64 ? 16 : 0) + (offset64 ? 8 : 0);
    Put32(central, kCentralSig);
    Put16(central, version);  // made by (MS-DOS attributes)
    Put16(central, version);  // needed
    Put16(central, 0);
    Put16(central, 0);
    Put16(central, kDosTime);
    Put16(central, kDosDate);
    Put32(central, crc);
    Put32(central, size64 ? k32Max : uint32_t(body.size()));
    Put32(central, size64 ? k32Max : uint32_t(body.size()));
    Put16(central, uint16_t(name.size()));
    Put16(central, extra ? uint16_t(extra + 4) : 0);
    Put16(central, 0);  // comment
    Put16(central, 0);  // disk
    Put16(central, 0);  // internal attributes
    Put32(central, 0);  // external attributes
    Put32(central, offset64 ? k32Max : uint32_t(offset));
    central += name;
    if (extra) {
      Put16(central, 0x0001);
      Put16(central, extra);
      if (size64) {
        Put64(central, body.size());
        Put64(central, body.size());
      }
      if (offset64) Put64(central, offset);
    }
  }
  uint64_t cd_offset = out.size(), cd_size = central.size(), n = members.size();
  out += central;
  bool end64 = force || n >= k16Max || cd_offset >= k32Max || cd_size >= k32Max;
  if (end64) {
    uint64_t end64_offset = out.size();
    Put32(out, kEnd64Sig);
    Put64(out, 44);  // size of the rest of this record
    Put16(out, 45);
    Put16(out, 45);
    Put32(out, 0);
    Put32(out, 0);
    Put64(out, n);
    Put64(out, n);
    Put64(out, cd_size);
    Put64(out, cd_offset);
    Put32(out, kEnd64LocatorSig);
    Put32(out, 0);
    Put64(out, end64_offset);
    Put32(out, 1);
  }
  Put32(out, kEndSig);
  Put16(out, 0);
  Put16(out, 0);
  Put16(out, end64 ? k16Max : uint16_t(n));
  Put16(out, end64 ? k16Max : uint16_t(n));
  Put32(out, end64 ? k32Max : uint32_t(cd_size));
  Put32(out, end64 ? k32Max : uint32_t(cd_offset));
  Put16(out, 0);
  return out;
}

StatusOr<std::vector<NpzMember>> ReadNpzFile(const std::string& path) {
  KILN_ASSIGN_OR_RETURN(std::string bytes, ReadFileToString(path));
  return ParseNpz(bytes, path);
}

Status WriteNpzFile(const std::string& path, const std::vector<NpzMember>& members,
                    const NpzWriteOptions& options) {
  std::set<std::string> seen;
  for (const NpzMember& m : members)
    if (!seen.insert(m.name).second) return InvalidArgument(path, ": duplicate member name '", m.name, "'");
  return WriteStringToFile(path, SerializeNpz(members, options));
}

}  // namespace kiln
