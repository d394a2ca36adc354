// The scatter emitter. Scatter updates its operands in place (KernelSpec::in_place: output i is
// operand i's buffer, already holding the operand's values); the kernel only applies the
// updates, with XLA's semantics as eval/gather_scatter.cc states them: an update window that
// does not fit in the operand entirely is skipped whole; the combiner (to_apply) takes
// (operand values..., update values...).
//
// Modes (ScatterMode):
//   atomic      one thread per update element; the combine is an atomic read-modify-write:
//               the hardware's atomicAdd/Min/Max/And/Or/Xor where the combiner is that op on a
//               type the hardware has (f32/f64/f16/bf16 add, 32/64-bit integer add/min/max and
//               bitwise ops), else a compare-and-swap loop around the combiner for elements of
//               1, 2, 4 or 8 bytes. Windows that hit the same element combine in an
//               unspecified order (XLA allows it), so float sums may differ in rounding.
//   unique      `unique_indices=true`: no two updates hit the same element; one thread per
//               update element with plain loads and stores.
//   serialized  deterministic: one block applies the windows one after another in row-major
//               order of the scatter dimensions (its threads share each window), exactly the
//               evaluator's order. Variadic scatters and 16-byte elements always use it.
#include <algorithm>

#include "kiln/base/strings.h"
#include "kiln/codegen/device_types.h"
#include "kiln/codegen/elemental_emitter.h"
#include "kiln/codegen/emitter_common.h"
#include "kiln/codegen/emitters.h"
#include "kiln/codegen/kernel_source.h"

namespace kiln::codegen {

std::string_view ScatterModeName(ScatterMode mode) {
  switch (mode) {
    case ScatterMode::kAuto: return "auto";
    case ScatterMode::kAtomic: return "atomic";
    case ScatterMode::kUnique: return "unique";
    case ScatterMode::kSerialized: return "serialized";
  }
  return "?";
}

namespace {

bool Contains(const std::vector<int64_t>& v, int64_t x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

// The hardware atomic for a combiner `op(p0, p1)` on type t, or "" when there is none.
std::string NativeAtomic(const HloComputation& c, PrimitiveType t, const DeviceSpec& device) {
  if (c.num_parameters() != 2) return "";
  const HloInstruction* root = c.root_instruction();
  if (root->operand_count() != 2 || root->shape().element_type() != t) return "";
  const HloInstruction* a = root->operand(0);
  const HloInstruction* b = root->operand(1);
  if (a->opcode() != HloOpcode::kParameter || b->opcode() != HloOpcode::kParameter || a == b)
    return "";
  const int cc = device.compute_capability_major * 10 + device.compute_capability_minor;
  const bool int32 = t == PrimitiveType::kS32 || t == PrimitiveType::kU32;
  const bool int64 = t == PrimitiveType::kS64 || t == PrimitiveType::kU64;
  switch (root->opcode()) {
    case HloOpcode::kAdd:
      if (t == PrimitiveType::kF32 || t == PrimitiveType::kF64 || int32 || int64) return "atomicAdd";
      if (t == PrimitiveType::kF16 && cc >= 70) return "atomicAdd";
      if (t == PrimitiveType::kBF16 && cc >= 80) return "atomicAdd";
      return "";
    case HloOpcode::kMinimum: return int32 || int64 ? "atomicMin" : "";
    case HloOpcode::kMaximum: return int32 || int64 ? "atomicMax" : "";
    case HloOpcode::kAnd: return int32 || int64 ? "atomicAnd" : "";
    case HloOpcode::kOr: return int32 || int64 ? "atomicOr" : "";
    case HloOpcode::kXor: return int32 || int64 ? "atomicXor" : "";
    default: return "";
  }
}

// Whether combining colliding updates in any order gives one result (up to float rounding):
// a single commutative, associative op of the combiner's two distinct parameters.
bool OrderIndependentCombiner(const HloComputation& c) {
  const HloInstruction* r = c.root_instruction();
  if (c.num_parameters() != 2 || r->operand_count() != 2 ||
      r->operand(0)->opcode() != HloOpcode::kParameter ||
      r->operand(1)->opcode() != HloOpcode::kParameter || r->operand(0) == r->operand(1))
    return false;
  switch (r->opcode()) {
    case HloOpcode::kAdd: case HloOpcode::kMultiply: case HloOpcode::kMinimum:
    case HloOpcode::kMaximum: case HloOpcode::kAnd: case HloOpcode::kOr: case HloOpcode::kXor:
      return true;
    default:
      return false;
  }
}

// kAuto serializes scatters whose combiner depends on the order of colliding updates (an
// overwrite) when they have at most this many windows: the evaluator's order, deterministic,
// and at most about a millisecond. Larger ones use atomics (any order, as XLA allows).
constexpr int64_t kMaxAutoSerializedWindows = 1024;

// The pointer type and value cast the CUDA atomic overloads take for t.
std::pair<std::string, std::string> AtomicTypes(PrimitiveType t, const std::string& op) {
  switch (t) {
    case PrimitiveType::kS32: return {"int", "int"};
    case PrimitiveType::kU32: return {"unsigned int", "unsigned int"};
    case PrimitiveType::kS64:
      // atomicAdd has no signed 64-bit overload; two's complement addition is the same.
      if (op == "atomicMin" || op == "atomicMax") return {"long long", "long long"};
      return {"unsigned long long", "unsigned long long"};
    case PrimitiveType::kU64: return {"unsigned long long", "unsigned long long"};
    case PrimitiveType::kF32: return {"float", "float"};
    case PrimitiveType::kF64: return {"double", "double"};
    case PrimitiveType::kF16: return {"__half", "__half"};
    case PrimitiveType::kBF16: return {"__nv_bfloat16", "__nv_bfloat16"};
    default: return {"", ""};
  }
}

}  // namespace

StatusOr<KernelSpec> EmitScatter(const HloInstruction& instr, const DeviceSpec& device,
                                 const KernelConfig& config, ScatterMode mode) {
  if (instr.opcode() != HloOpcode::kScatter)
    return Unimplemented("scatter emitter: %", instr.name(), " is ", HloOpcodeString(instr.opcode()));
  const HloAttributes& at = instr.attrs();
  if (!at.scatter_dimension_numbers || instr.to_apply() == nullptr)
    return InvalidArgument("scatter %", instr.name(), ": missing dimension numbers or to_apply");
  if (instr.operand_count() < 3 || instr.operand_count() % 2 == 0)
    return InvalidArgument("scatter %", instr.name(), " takes 2N+1 operands");
  const ScatterDimensionNumbers& dn = *at.scatter_dimension_numbers;
  const int64_t nops = (instr.operand_count() - 1) / 2;
  const HloInstruction& indices = *instr.operand(nops);
  const Shape os = WithLayout(instr.operand(0)->shape());
  const Shape& us = instr.operand(nops + 1)->shape();
  const Shape& is = indices.shape();
  const int64_t orank = os.rank(), urank = us.rank(), irank = is.rank();
  const int64_t ivd = dn.index_vector_dim;
  if (ivd < 0 || ivd > irank || !IsIntegralType(is.element_type()) ||
      dn.input_batching_dims.size() != dn.scatter_indices_batching_dims.size())
    return InvalidArgument("scatter %", instr.name(), ": malformed dimension numbers");
  const int64_t vector_size = ivd == irank ? 1 : is.dimensions(ivd);
  if (vector_size != int64_t(dn.scatter_dims_to_operand_dims.size()))
    return InvalidArgument("scatter %", instr.name(), ": index vectors do not match scatter_dims_to_operand_dims");
  for (int64_t i = 1; i < nops; ++i)
    if (instr.operand(i)->shape().dimensions() != os.dimensions() ||
        instr.operand(nops + 1 + i)->shape().dimensions() != us.dimensions())
      return InvalidArgument("scatter %", instr.name(), ": operands or updates differ in shape");
  std::vector<int64_t> window_operand_dims;
  for (int64_t d = 0; d < orank; ++d)
    if (!Contains(dn.inserted_window_dims, d) && !Contains(dn.input_batching_dims, d))
      window_operand_dims.push_back(d);
  std::vector<int64_t> uw = dn.update_window_dims;
  std::sort(uw.begin(), uw.end());
  if (uw.size() != window_operand_dims.size() ||
      urank != int64_t(uw.size()) + irank - (ivd < irank ? 1 : 0))
    return InvalidArgument("scatter %", instr.name(), ": updates do not match the dimension numbers");
  std::vector<int64_t> scatter_dims, scatter_sizes, window_sizes;  // update dims by role
  for (int64_t d = 0; d < urank; ++d) {
    if (Contains(uw, d)) {
      window_sizes.push_back(us.dimensions(d));
    } else {
      scatter_dims.push_back(d);
      scatter_sizes.push_back(us.dimensions(d));
    }
  }
  std::vector<int64_t> window_size(orank, 1);
  for (size_t j = 0; j < uw.size(); ++j) window_size[window_operand_dims[j]] = us.dimensions(uw[j]);
  std::vector<int64_t> batching_pos;  // scatter-dim position of each scatter_indices_batching_dim
  for (int64_t d : dn.scatter_indices_batching_dims) {
    int64_t b = 0, pos = -1;
    for (int64_t k = 0; k < irank; ++k) {
      if (k == ivd) continue;
      if (k == d) pos = b;
      ++b;
    }
    if (pos < 0) return InvalidArgument("scatter %", instr.name(), ": bad scatter_indices_batching_dims");
    batching_pos.push_back(pos);
  }
  for (int64_t d : dn.scatter_dims_to_operand_dims)
    if (d < 0 || d >= orank) return InvalidArgument("scatter %", instr.name(), ": bad scatter_dims_to_operand_dims");

  const PrimitiveType t = os.element_type();
  std::string native;
  if (nops == 1 && instr.operand(nops + 1)->shape().element_type() == t)
    native = NativeAtomic(*instr.to_apply(), t, device);
  const bool unique = at.unique_indices;
  const int bytes = StorageBytes(t);
  const bool can_atomic = nops == 1 && (bytes == 1 || bytes == 2 || bytes == 4 || bytes == 8);
  if (mode == ScatterMode::kAuto) {
    int64_t windows = 1;
    for (int64_t n : scatter_sizes) windows *= n;
    const bool ordered = !OrderIndependentCombiner(*instr.to_apply()) && windows <= kMaxAutoSerializedWindows;
    mode = unique ? ScatterMode::kUnique
           : can_atomic && !ordered ? ScatterMode::kAtomic
                                    : ScatterMode::kSerialized;
  }
  if (mode == ScatterMode::kAtomic && !can_atomic)
    return Unimplemented("scatter %", instr.name(), ": no atomic update for ", nops, " operand(s) of ",
                         PrimitiveTypeName(t));

  KILN_ASSIGN_OR_RETURN(FusionView view, MakeFusionView(instr));
  KernelConfig c = config;
  if (c.block_size == 0) c.block_size = mode == ScatterMode::kSerialized ? 1024 : 256;
  if (c.block_size < 32 || c.block_size > device.max_threads_per_block || c.block_size % 32 != 0)
    return InvalidArgument("scatter emitter: bad block size ", c.block_size);
  c.vector_width = 1;
  c.unroll = 1;
  const int B = c.block_size;
  KernelAssembler ka(view, "scatter", c, device.dialect);
  ka.source().AddHeaderComment("scatter mode: " + std::string(ScatterModeName(mode)));
  for (int64_t i = 0; i < nops; ++i) ka.SetInPlace(i, i);
  CodeBuilder code("long long");
  ElementalEmitter em(ka.source(), code);
  ka.BindLeaves(em);
  const int64_t nscatter = [&] {
    int64_t n = 1;
    for (int64_t s : scatter_sizes) n *= s;
    return n;
  }();
  const int64_t nwindow = [&] {
    int64_t n = 1;
    for (int64_t s : window_sizes) n *= s;
    return n;
  }();
  const std::vector<int64_t> ostrides = PhysicalStrides(os);

  // Emits, at the current point, the operand offset of (scatter position `sidx`, window
  // position `widx`) into `ok` / `off` variables; returns their names.
  auto emit_target = [&](const std::vector<IExpr>& sidx, const std::vector<IExpr>& widx)
      -> StatusOr<std::pair<std::string, std::string>> {
    std::vector<std::string> start(orank, "0LL");
    for (int64_t k = 0; k < vector_size; ++k) {
      Index ii;
      int64_t b = 0;
      for (int64_t d = 0; d < irank; ++d) ii.dims.push_back(d == ivd ? IExpr(k) : sidx[b++]);
      KILN_ASSIGN_OR_RETURN(Value v, em.Emit(indices, ii));
      const int64_t d = dn.scatter_dims_to_operand_dims[k];
      std::string s = code.UniqueName("start" + std::to_string(d));
      // u64 indices above INT64_MAX are out of range, not negative.
      std::string cast = IsUnsignedIntegralType(v.type) && PrimitiveBitWidth(v.type) == 64
                             ? "(" + v.expr + " > 9223372036854775807ull ? -1LL : (long long)" + v.expr + ")"
                             : "(long long)" + v.expr;
      code.Line("const long long " + s + " = " + cast + ";");
      start[d] = s;
    }
    for (size_t i = 0; i < dn.input_batching_dims.size(); ++i)
      start[dn.input_batching_dims[i]] = "(long long)" + code.Render(sidx[batching_pos[i]]);
    std::vector<std::string> conds, terms;
    for (int64_t d = 0; d < orank; ++d) {
      if (start[d] == "0LL") {
        if (window_size[d] > os.dimensions(d)) conds.push_back("false");
      } else {
        conds.push_back(start[d] + " >= 0 && " + start[d] + " <= " +
                        std::to_string(os.dimensions(d) - window_size[d]) + "LL");
      }
      std::string coord = start[d];
      for (size_t j = 0; j < window_operand_dims.size(); ++j)
        if (window_operand_dims[j] == d) coord += " + " + code.Render(widx[j]);
      terms.push_back("(" + coord + ") * " + std::to_string(ostrides[d]) + "LL");
    }
    std::string ok = code.UniqueName("in_bounds"), off = code.UniqueName("offset");
    code.Line("const bool " + ok + " = " + (conds.empty() ? "true" : StrJoin(conds, " && ")) + ";");
    code.Line("const long long " + off + " = " + (terms.empty() ? "0LL" : StrJoin(terms, " + ")) + ";");
    return std::pair{ok, off};
  };
  // The update index of (scatter position, window position).
  auto update_index = [&](const std::vector<IExpr>& sidx, const std::vector<IExpr>& widx) {
    Index ui;
    size_t s = 0, w = 0;
    for (int64_t d = 0; d < urank; ++d) ui.dims.push_back(Contains(uw, d) ? widx[w++] : sidx[s++]);
    return ui;
  };
  auto delinearize = [&](const IExpr& linear, const std::vector<int64_t>& sizes) {
    if (sizes.empty()) return std::vector<IExpr>{};
    Index i = em.Delinearize(linear, Shape::ArrayWithDefaultLayout(PrimitiveType::kU8, sizes));
    return i.dims;
  };
  // Combines update values `upd` into the outputs at `off` (plain or atomic).
  auto emit_combine = [&](const std::string& off, const std::vector<Value>& upd, bool atomic) -> Status {
    const HloComputation& comb = *instr.to_apply();
    if (atomic && !native.empty()) {
      auto [ptr_t, val_t] = AtomicTypes(t, native);
      std::string val = t == PrimitiveType::kF16   ? "__float2half_rn(" + upd[0].expr + ")"
                        : t == PrimitiveType::kBF16 ? "__float2bfloat16_rn(" + upd[0].expr + ")"
                                                    : "(" + val_t + ")" + upd[0].expr;
      code.Line(native + "(reinterpret_cast<" + ptr_t + "*>(" + ka.output_pointer(0) + " + " + off +
                "), " + val + ");");
      return OkStatus();
    }
    KILN_ASSIGN_OR_RETURN(const ScalarFunction* f, ka.source().Function(comb));
    if (atomic) {
      const std::string s = StorageType(t), r = RegisterType(t);
      std::string call = f->name + "(" + LoadConvert(t, "old") + ", " + upd[0].expr;
      std::string body;
      if (f->tuple_result) {
        body = r + " res; " + call + ", &res); return " + StoreConvert(t, "res") + ";";
      } else {
        body = "return " + StoreConvert(t, call + ")") + ";";
      }
      code.Line("kiln_atomic_update(" + ka.output_pointer(0) + " + " + off + ", [&](" + s +
                " old) -> " + s + " { " + body + " });");
      return OkStatus();
    }
    std::vector<std::string> args;
    for (int64_t i = 0; i < nops; ++i) {
      PrimitiveType ti = view.outputs[i].shape.element_type();
      std::string cur = code.UniqueName("cur");
      code.Line("const " + RegisterType(ti) + " " + cur + " = " +
                LoadConvert(ti, ka.output_pointer(i) + "[" + off + "]") + ";");
      args.push_back(cur);
    }
    for (const Value& v : upd) args.push_back(v.expr);
    std::vector<std::string> res;
    if (f->tuple_result) {
      for (int64_t i = 0; i < nops; ++i) {
        res.push_back(code.UniqueName("res"));
        code.Line(RegisterType(f->results[i]) + " " + res.back() + ";");
        args.push_back("&" + res.back());
      }
      code.Line(f->name + "(" + StrJoin(args, ", ") + ");");
    } else {
      res.push_back(code.UniqueName("res"));
      code.Line("const " + RegisterType(f->results[0]) + " " + res.back() + " = " + f->name + "(" +
                StrJoin(args, ", ") + ");");
    }
    for (int64_t i = 0; i < nops; ++i)
      code.Line(ka.output_pointer(i) + "[" + off + "] = " +
                StoreConvert(view.outputs[i].shape.element_type(), res[i]) + ";");
    return OkStatus();
  };
  auto read_updates = [&](const Index& ui) -> StatusOr<std::vector<Value>> {
    std::vector<Value> upd;
    for (int64_t i = 0; i < nops; ++i) {
      KILN_ASSIGN_OR_RETURN(Value v, em.Emit(*view.leaves[nops + 1 + i], ui));
      upd.push_back(v);
    }
    return upd;
  };

  const std::string entry = "scatter_" + SanitizeIdentifier(instr.name());
  runtime::LaunchDims dims;
  dims.block.x = static_cast<uint32_t>(B);
  if (mode == ScatterMode::kSerialized) {
    code.Comment("One block applies the " + std::to_string(nscatter) + " windows in order; its threads share each window of " +
                 std::to_string(nwindow) + " elements.");
    if (nscatter > 0 && nwindow > 0) {
      code.Open("for (long long s = 0; s < " + std::to_string(nscatter) + "LL; ++s)", BlockKind::kLoop);
      IExpr s = IExpr::Var(code.DeclareVar("s", code.depth(), 0, nscatter - 1));
      std::vector<IExpr> sidx = delinearize(s, scatter_sizes);
      code.Open("for (long long w = threadIdx.x; w < " + std::to_string(nwindow) + "LL; w += " +
                    std::to_string(B) + ")",
                BlockKind::kLoop);
      IExpr w = IExpr::Var(code.DeclareVar("w", code.depth(), 0, nwindow - 1));
      std::vector<IExpr> widx = delinearize(w, window_sizes);
      KILN_ASSIGN_OR_RETURN(auto target, emit_target(sidx, widx));
      code.Open("if (" + target.first + ")", BlockKind::kConditional);
      KILN_ASSIGN_OR_RETURN(std::vector<Value> upd, read_updates(update_index(sidx, widx)));
      KILN_RETURN_IF_ERROR(emit_combine(target.second, upd, /*atomic=*/false));
      code.Close();
      code.Close();
      code.Line("__syncthreads();");
      code.Close();
    }
    dims.grid.x = 1;
  } else {
    const int64_t n = nscatter * nwindow;
    code.Comment("One thread per update element (" + std::string(ScatterModeName(mode)) + " combine).");
    code.Line("const long long e = (long long)blockIdx.x * " + std::to_string(B) + " + threadIdx.x;");
    if (n > 0) {
      code.Open("if (e < " + std::to_string(n) + "LL)", BlockKind::kConditional);
      IExpr e = IExpr::Var(code.DeclareVar("e", code.depth(), 0, n - 1));
      // Window position fastest: threads of a warp touch consecutive elements of one window.
      IExpr s = nwindow == 1 ? e : code.Div(e, nwindow, "s");
      IExpr w = nwindow == 1 ? IExpr(0) : code.Mod(e, nwindow, "w");
      std::vector<IExpr> sidx = delinearize(s, scatter_sizes);
      std::vector<IExpr> widx = delinearize(w, window_sizes);
      KILN_ASSIGN_OR_RETURN(auto target, emit_target(sidx, widx));
      code.Open("if (" + target.first + ")", BlockKind::kConditional);
      KILN_ASSIGN_OR_RETURN(std::vector<Value> upd, read_updates(update_index(sidx, widx)));
      KILN_RETURN_IF_ERROR(emit_combine(target.second, upd, mode == ScatterMode::kAtomic));
      code.Close();
      code.Close();
    }
    if (CeilDiv(n, B) > INT32_MAX) return Unimplemented("scatter: grid too large");
    dims.grid.x = static_cast<uint32_t>(std::max<int64_t>(1, CeilDiv(n, B)));
  }
  KILN_ASSIGN_OR_RETURN(std::string body, code.Finish());
  ka.AddEntry(entry, B, body);
  ka.NoteReads(em);
  ka.AddLaunch(entry, dims);
  return ka.Finish();
}

}  // namespace kiln::codegen
