#include "kiln/codegen/kernel_spec.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "kiln/base/strings.h"
#include "kiln/codegen/code_builder.h"

namespace kiln::codegen {

namespace {

struct Field {
  char key;
  int KernelConfig::*member;
};
constexpr Field kFields[] = {
    {'b', &KernelConfig::block_size}, {'v', &KernelConfig::vector_width},
    {'u', &KernelConfig::unroll},     {'r', &KernelConfig::rows_per_block},
    {'s', &KernelConfig::split},      {'t', &KernelConfig::tile},
};

}  // namespace

std::string KernelConfig::ToString() const {
  std::string s;
  for (const Field& f : kFields) {
    int v = this->*f.member;
    if (v == 0) continue;
    if (!s.empty()) s += '.';
    s += f.key;
    s += std::to_string(v);
  }
  return s.empty() ? "default" : s;
}

StatusOr<KernelConfig> KernelConfig::Parse(std::string_view text) {
  KernelConfig c;
  if (text == "default") return c;
  size_t next_field = 0;
  for (std::string_view part : StrSplit(text, '.')) {
    if (part.size() < 2) return InvalidArgument("kernel config '", text, "': bad field '", part, "'");
    size_t f = next_field;
    while (f < std::size(kFields) && kFields[f].key != part[0]) ++f;
    if (f == std::size(kFields))
      return InvalidArgument("kernel config '", text, "': unknown or out-of-order field '", part,
                             "' (expected the order b v u r s t)");
    int64_t v = 0;
    for (char ch : part.substr(1)) {
      if (ch < '0' || ch > '9' || v > 1'000'000'000)
        return InvalidArgument("kernel config '", text, "': bad number in '", part, "'");
      v = v * 10 + (ch - '0');
    }
    if (v <= 0) return InvalidArgument("kernel config '", text, "': '", part, "' must be positive");
    c.*kFields[f].member = static_cast<int>(v);
    next_field = f + 1;
  }
  return c;
}

std::string_view KernelParamKindName(KernelParam::Kind kind) {
  switch (kind) {
    case KernelParam::Kind::kOperand: return "operand";
    case KernelParam::Kind::kOutput: return "output";
    case KernelParam::Kind::kScratch: return "scratch";
    case KernelParam::Kind::kScalar: return "scalar";
  }
  return "?";
}

std::vector<std::string> KernelSpec::Entries() const {
  std::vector<std::string> entries;
  for (const KernelLaunch& l : launches)
    if (std::find(entries.begin(), entries.end(), l.entry) == entries.end()) entries.push_back(l.entry);
  return entries;
}

std::string KernelSpec::Summary() const {
  std::ostringstream os;
  os << name << ": emitter " << emitter << ", config " << config.ToString() << ", align "
     << buffer_alignment << ", min bytes " << min_bytes;
  if (scratch_bytes > 0) os << ", scratch " << scratch_bytes << " bytes";
  os << "\n";
  for (const KernelLaunch& l : launches)
    os << "  launch " << l.entry << " grid " << l.dims.grid.ToString() << " block "
       << l.dims.block.ToString() << " shared " << l.dims.shared_memory_bytes << "\n";
  for (const KernelParam& p : params) {
    os << "  param " << p.name << ": " << KernelParamKindName(p.kind) << " " << p.index;
    if (p.kind == KernelParam::Kind::kScalar) {
      os << " = " << p.scalar_value;
    } else {
      os << " " << p.shape.ToString() << (p.read ? " read" : "") << (p.written ? " written" : "");
    }
    os << "\n";
  }
  for (const auto& [out, operand] : in_place)
    os << "  in place: output " << out << " is operand " << operand << "\n";
  return os.str();
}

Status DumpKernels(std::span<const KernelSpec> kernels, const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return Unavailable("cannot create ", dir, ": ", ec.message());
  auto write = [&](const fs::path& path, const std::string& text) -> Status {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << text;
    out.close();
    if (!out) return Unavailable("cannot write ", path.string(), ": ", std::strerror(errno));
    return OkStatus();
  };
  std::set<std::string> used;
  std::set<std::string> headers_written;
  std::string index;
  for (const KernelSpec& k : kernels) {
    std::string base = SanitizeIdentifier(k.name);
    std::string file = base;
    for (int i = 2; used.count(file); ++i) file = base + "_" + std::to_string(i);
    used.insert(file);
    std::string text = k.source;
    if (!k.hlo.empty()) {
      // Keep "*/" inside HLO text from closing the comment early.
      size_t pos = 0;
      std::string body = k.hlo;
      while ((pos = body.find("*/", pos)) != std::string::npos) body.replace(pos, 2, "* /");
      text = "/* HLO:\n" + body + "\n*/\n" + text;
    }
    KILN_RETURN_IF_ERROR(write(fs::path(dir) / (file + ".cu"), text));
    for (const auto& [name, contents] : k.headers) {
      if (!headers_written.insert(name).second) continue;
      KILN_RETURN_IF_ERROR(write(fs::path(dir) / name, contents));
    }
    index += file + ".cu  " + k.Summary();
  }
  return write(fs::path(dir) / "kernels.txt", index);
}

}  // namespace kiln::codegen
