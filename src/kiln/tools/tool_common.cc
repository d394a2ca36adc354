#include "kiln/tools/tool_common.h"

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <iostream>
#include <optional>

#include "kiln/base/saturating.h"
#include "kiln/passes/shard_map_lowering.h"
#include "kiln/base/strings.h"
#include "kiln/eval/compare.h"
#include "kiln/hlo/npy_literal.h"
#include "kiln/api/client.h"
#include "kiln/hlo/random_literal.h"
#include "kiln/hlo/shape_inference.h"

namespace kiln {

void PrintError(std::string_view message) {
  std::cerr << "kiln: " << message << (EndsWith(message, "\n") ? "" : "\n");
}

void PrintLoadError(const std::string& path, std::string_view message) {
  if (StartsWith(message, path + ":")) {
    std::cerr << message << (EndsWith(message, "\n") ? "" : "\n");
  } else {
    PrintError(message);
  }
}

StatusOr<std::unique_ptr<HloModule>> LoadModule(const std::string& path, const LoadOptions& options) {
  ParseModuleOptions po;
  po.fill_elided_constants = options.fill_elided_constants;
  po.fill_seed = options.seed;
  po.verify = options.verify;
  KILN_ASSIGN_OR_RETURN(std::unique_ptr<HloModule> module, ParseModuleFile(path, po));
  // --no-verify skips the verifier, not the checks that keep every command (info's recursive
  // counts, the backends' kernels) inside the module: no call cycles, operands in range,
  // declared shapes the operands give.
  if (!options.verify) {
    Status s = CheckOperandsInRange(*module);
    if (!s.ok()) return InvalidArgument(path, ": the module is invalid (checked without the verifier too): ", s.message());
  }
  // A shard_map program becomes its per-device program here, so that every command sees the
  // participants' shapes and count (docs/collectives.md); the backends would lower it too.
  if (IsShardMapProgram(*module)) {
    Status s = LowerShardMap(*module).status();
    if (!s.ok()) return InvalidArgument(path, ": ", s.message());
  }
  return module;
}

StatusOr<std::vector<Literal>> MakeInputs(const HloModule& module, const InputOptions& options,
                                          std::vector<std::string>* notes) {
  const HloComputation* entry = module.entry_computation();
  if (!entry) return InvalidArgument("module ", module.name(), " has no entry computation");
  std::vector<Shape> shapes;
  for (const HloInstruction* p : entry->parameter_instructions()) shapes.push_back(p->shape());
  if (options.npz_path.empty() && !options.npz) {
    // Inputs larger than the host's memory could be allocated (the kernel overcommits) and the
    // process killed while filling them: refuse them first.
    int64_t total = 0;
    for (const Shape& s : shapes) total = SaturatingAdd(total, s.byte_size());
    const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
    if (pages > 0 && page > 0 && static_cast<uint64_t>(total) > static_cast<uint64_t>(pages) * static_cast<uint64_t>(page))
      return ResourceExhausted("out of memory allocating ", total, " bytes for the random inputs of ", module.name(),
                               " (more than this host's memory, ",
                               static_cast<uint64_t>(pages) * static_cast<uint64_t>(page), " bytes)");
    if (notes && !shapes.empty())
      notes->push_back(StrCat("inputs: random, seed ", options.seed));
    return CreateRandomArguments(shapes, options.seed);
  }
  std::optional<LoadedNpz> read;
  if (!options.npz) {
    KILN_ASSIGN_OR_RETURN(read, LoadedNpz::Read(options.npz_path));
  }
  const LoadedNpz& npz = options.npz ? *options.npz : *read;
  const std::string& path = npz.path();
  NpyToLiteralOptions conv;
  conv.allow_cast = options.allow_cast;
  std::vector<Literal> args;
  std::vector<bool> used;
  std::vector<std::string> names = npz.names();
  used.assign(names.size(), false);
  for (size_t i = 0; i < shapes.size(); ++i) {
    const HloInstruction* p = entry->parameter_instruction(static_cast<int64_t>(i));
    std::string key = StrCat("in", i);
    if (!npz.Has(key)) key = p->name();
    if (!npz.Has(key))
      return InvalidArgument(path, ": no input for parameter ", i, " (", p->name(), ": ",
                             shapes[i].ToString(false), "); expected a member 'in", i, "' or '",
                             p->name(), "' (members: ", StrJoin(names, ", "), ")");
    for (size_t k = 0; k < names.size(); ++k)
      if (names[k] == key) used[k] = true;
    auto lit = npz.ForParameter(key, shapes[i], conv);
    if (!lit.ok())
      return lit.status().WithContext(StrCat("parameter ", i, " (", p->name(), ")"));
    if (notes) notes->push_back(StrCat("in", i, " ", shapes[i].ToString(false), " <- ", path, ":", key));
    args.push_back(std::move(*lit));
  }
  for (size_t k = 0; k < names.size(); ++k)
    if (!used[k] && !StartsWith(names[k], "out") && notes)
      notes->push_back(StrCat("warning: ", path, ":", names[k], " is not an input of ", module.name(),
                              " (no parameter takes it: members in0, in1, ... or the parameters' names)"));
  return args;
}

namespace {

std::string Num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

std::string ElementString(const Literal& l, int64_t i) {
  PrimitiveType t = l.shape().element_type();
  if (t == PrimitiveType::kPred) return l.GetAsBool(i) ? "true" : "false";
  if (t == PrimitiveType::kU64) return std::to_string(l.data<uint64_t>()[i]);
  if (IsIntegralType(t)) return std::to_string(l.GetAsInt64(i));
  if (IsComplexType(t)) {
    auto c = l.GetAsComplex(i);
    return StrCat("(", Num(c.real()), c.imag() < 0 ? "" : "+", Num(c.imag()), "j)");
  }
  return Num(l.GetAsDouble(i));
}

}  // namespace

std::string SummarizeArray(const Literal& array, std::string_view name, int64_t max_values) {
  const Shape& shape = array.shape();
  std::string s = StrCat(name, " ", shape.ToString(false));
  if (!shape.IsArray()) return s;
  const int64_t n = array.element_count();
  s += StrCat("  ", HumanBytes(static_cast<uint64_t>(shape.byte_size())));
  PrimitiveType t = shape.element_type();
  if (n > 0 && !IsComplexType(t) && t != PrimitiveType::kPred) {
    double mn = INFINITY, mx = -INFINITY, sum = 0;
    int64_t nans = 0, infs = 0, finite = 0;
    for (int64_t i = 0; i < n; ++i) {
      double v = array.GetAsDouble(i);
      if (std::isnan(v)) {
        ++nans;
        continue;
      }
      mn = std::min(mn, v);
      mx = std::max(mx, v);
      if (std::isinf(v)) {
        ++infs;
      } else {
        sum += v;
        ++finite;
      }
    }
    if (nans < n) s += StrCat("  min ", Num(mn), " max ", Num(mx));
    if (finite > 0) s += StrCat(" mean ", Num(sum / finite));
    if (IsFloatingPointType(t)) s += StrCat("  NaN ", nans, " inf ", infs);
  } else if (t == PrimitiveType::kPred && n > 0) {
    int64_t trues = 0;
    for (int64_t i = 0; i < n; ++i) trues += array.GetAsBool(i);
    s += StrCat("  true ", trues, " of ", n);
  }
  s += "  {";
  for (int64_t i = 0; i < std::min(n, max_values); ++i) s += (i ? ", " : "") + ElementString(array, i);
  if (n > max_values) s += ", ...";
  return s + "}";
}

std::string FormatArrayValues(const Literal& array, int64_t limit) {
  const Shape& shape = array.shape();
  if (!shape.IsArray()) return shape.ToString(false);
  const std::vector<int64_t>& dims = shape.dimensions();
  const int64_t n = array.element_count();
  if (dims.empty()) return ElementString(array, 0);
  std::string s;
  int64_t printed = 0;
  // Walk elements in order, opening and closing brackets at dimension boundaries.
  std::vector<int64_t> idx(dims.size(), 0);
  s.append(dims.size(), '[');
  for (int64_t i = 0; i < n; ++i) {
    if (printed == limit) {
      s += "...";
      break;
    }
    s += ElementString(array, i);
    ++printed;
    // Advance the index; count how many dimensions wrapped.
    size_t wrapped = 0;
    for (size_t k = dims.size(); k-- > 0;) {
      if (++idx[k] < dims[k]) break;
      idx[k] = 0;
      ++wrapped;
    }
    if (i + 1 == n) break;
    s.append(wrapped, ']');
    s += wrapped ? ",\n" + std::string(dims.size() - wrapped, ' ') + std::string(wrapped, '[') : ", ";
  }
  s.append(dims.size(), ']');
  return s;
}

Status WriteOutputs(const std::string& path, const Literal& result, bool raw_bits) {
  std::vector<NpzMember> members;
  LiteralToNpyOptions opts;
  opts.raw_bits = raw_bits;
  std::vector<const Literal*> leaves = ArrayLeaves(result);
  for (size_t i = 0; i < leaves.size(); ++i)
    KILN_RETURN_IF_ERROR(AppendLiteralToNpz(*leaves[i], StrCat("out", i), opts, members));
  return WriteNpzFile(path, members);
}

StatusOr<std::vector<Literal>> ReadExpectedOutputs(const LoadedNpz& npz,
                                                   const std::vector<PrimitiveType>& result_types) {
  const std::string& path = npz.path();
  std::vector<Literal> out;
  for (int i = 0;; ++i) {
    std::string name = StrCat("out", i);
    if (!npz.Has(name)) break;
    const NpyArray* a = npz.Find(name);
    std::optional<PrimitiveType> raw = npz.RawType(name);
    if (!raw && a->dtype.kind == 'V' && i < static_cast<int>(result_types.size())) raw = result_types[i];
    KILN_ASSIGN_OR_RETURN(Literal l, NpyToLiteral(*a, raw, StrCat(path, ":", name)));
    out.push_back(std::move(l));
  }
  if (out.empty()) return InvalidArgument(path, ": no member 'out0' (expected outputs out0, out1, ...)");
  return out;
}

}  // namespace kiln
