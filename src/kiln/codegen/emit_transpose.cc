// The transpose emitter: a fusion around one "hero" (a transpose, or a copy into another
// layout) whose operand is contiguous along a different dimension than its result.
//
// Each block owns a T x T tile of the two dimensions involved (dim_in: contiguous in the
// hero's operand; dim_out: contiguous in the outputs) for one index of the other (batch)
// dimensions. Load phase: the hero's operand (with its fused producers) is computed at the
// tile's positions with threadIdx.x running along dim_in -- coalesced reads -- into shared
// memory, T x (T + 1) so that the column reads below hit 32 different banks. Store phase: the
// outputs (with the hero's fused consumers) are computed with threadIdx.x running along
// dim_out -- coalesced writes -- taking the hero's value from the tile, transposed.
#include <algorithm>

#include "kiln/base/strings.h"
#include "kiln/codegen/device_types.h"
#include "kiln/codegen/emitters.h"
#include "kiln/codegen/emitters_internal.h"
#include "kiln/codegen/fusion_analysis.h"

namespace kiln::codegen {

StatusOr<KernelConfig> ResolveTransposeConfig(const DeviceSpec& device, const KernelConfig& config) {
  KernelConfig c = config;
  if (c.tile == 0) c.tile = 32;
  if (c.block_size == 0) c.block_size = 256;
  if (c.vector_width == 0) c.vector_width = 1;
  if (c.tile != 32 && c.tile != 64) return InvalidArgument("transpose: tile ", c.tile, " is not 32 or 64");
  const int ty = c.block_size / 32;
  if (c.block_size % 32 != 0 || c.block_size > device.max_threads_per_block || ty < 1 || c.tile % ty != 0)
    return InvalidArgument("transpose: block size ", c.block_size, " does not tile ", c.tile);
  if (c.vector_width != 1) return InvalidArgument("transpose: only scalar accesses (vector width 1)");
  return c;
}

StatusOr<KernelSpec> EmitTranspose(const HloInstruction& instr, const DeviceSpec& device,
                                   const KernelConfig& config) {
  KILN_ASSIGN_OR_RETURN(FusionView view, MakeFusionView(instr));
  KILN_ASSIGN_OR_RETURN(TransposeAnalysis ta, AnalyzeTranspose(view));
  KILN_ASSIGN_OR_RETURN(KernelConfig c, ResolveTransposeConfig(device, config));
  const int T = c.tile, B = c.block_size, TY = B / 32;
  const HloInstruction& hero = *ta.hero;
  const HloInstruction& operand = *hero.operand(0);
  const Shape out = WithLayout(hero.shape());
  const int64_t d_in = out.dimensions(ta.dim_in), d_out = out.dimensions(ta.dim_out);
  const int64_t tiles_in = CeilDiv(d_in, T), tiles_out = CeilDiv(d_out, T);
  std::vector<int64_t> batch_dims;  // major to minor
  int64_t batch = 1;
  for (int64_t d : MajorToMinor(out))
    if (d != ta.dim_in && d != ta.dim_out) {
      batch_dims.push_back(d);
      batch *= out.dimensions(d);
    }
  const int64_t blocks = tiles_in * tiles_out * batch;
  if (blocks > INT32_MAX) return Unimplemented("transpose: grid too large");
  const PrimitiveType tile_type = operand.shape().element_type();
  if (int64_t{T} * (T + 1) * RegisterBytes(tile_type) > device.shared_memory_per_block)
    return InvalidArgument("transpose: tile does not fit in shared memory");

  KernelAssembler ka(view, "transpose", c, device.dialect);
  CodeBuilder code(ka.index_type());
  ElementalEmitter em(ka.source(), code);
  ka.BindLeaves(em);
  const std::string it = code.index_type();
  code.Comment("%" + hero.name() + ": tiles of " + std::to_string(T) + " x " + std::to_string(T) + " over dimensions " +
               std::to_string(ta.dim_in) + " (contiguous in %" + operand.name() + ") and " +
               std::to_string(ta.dim_out) + " (contiguous in the outputs) of " + out.ToString() + ".");
  const int tx = DeclareThreadVar(code, "tx", "threadIdx.x & 31", 31);
  const int ty = DeclareThreadVar(code, "ty", "threadIdx.x >> 5", TY - 1);
  const int bid = DeclareThreadVar(code, "tile", "(" + it + ")blockIdx.x", blocks - 1);
  IExpr tile_out = code.Mod(IExpr::Var(bid), tiles_out, "tile_out");
  IExpr rest = code.Div(IExpr::Var(bid), tiles_out, "rest");
  IExpr tile_in = code.Mod(rest, tiles_in, "tile_in");
  IExpr b = code.Div(rest, tiles_in, "batch");
  std::vector<IExpr> dims(out.rank(), IExpr(0));
  for (size_t k = batch_dims.size(); k-- > 0;) {
    int64_t d = batch_dims[k];
    if (k == 0) {
      dims[d] = b;
    } else {
      dims[d] = code.Mod(b, out.dimensions(d), "i" + std::to_string(d));
      b = code.Div(b, out.dimensions(d), "q" + std::to_string(d));
    }
  }
  const std::string tile = code.UniqueName("tile_" + hero.name());
  code.Line("__shared__ " + RegisterType(tile_type) + " " + tile + "[" + std::to_string(T) + "][" +
            std::to_string(T + 1) + "];");
  // Load phase.
  code.Comment("Load: %" + operand.name() + " along dimension " + std::to_string(ta.dim_in) + ".");
  code.Open("for (int j = 0; j < " + std::to_string(T / TY) + "; ++j)", BlockKind::kLoop, "#pragma unroll");
  const int j = code.DeclareVar("j", code.depth(), 0, T / TY - 1);
  code.Open("for (int x = 0; x < " + std::to_string(T / 32) + "; ++x)", BlockKind::kLoop, "#pragma unroll");
  const int x = code.DeclareVar("x", code.depth(), 0, T / 32 - 1);
  {
    IExpr i_in = tile_in * T + IExpr::Var(x) * 32 + IExpr::Var(tx);
    IExpr i_out = tile_out * T + IExpr::Var(j) * TY + IExpr::Var(ty);
    std::vector<std::string> guards;
    if (d_in % T != 0) guards.push_back(code.Render(i_in) + " < " + code.IndexLiteral(d_in));
    if (d_out % T != 0) guards.push_back(code.Render(i_out) + " < " + code.IndexLiteral(d_out));
    if (!guards.empty()) code.Open("if (" + StrJoin(guards, " && ") + ")", BlockKind::kConditional);
    std::vector<IExpr> hd = dims;
    hd[ta.dim_in] = i_in;
    hd[ta.dim_out] = i_out;
    Index oi;
    oi.dims.assign(operand.shape().rank(), IExpr(0));
    for (int64_t d = 0; d < out.rank(); ++d) oi.dims[ta.operand_dim[d]] = hd[d];
    KILN_ASSIGN_OR_RETURN(Value v, em.Emit(operand, oi));
    code.Line(tile + "[j * " + std::to_string(TY) + " + ty][x * 32 + tx] = " + v.expr + ";");
    if (!guards.empty()) code.Close();
  }
  code.Close();
  code.Close();
  code.Line("__syncthreads();");
  // Store phase.
  code.Comment("Store: the outputs along dimension " + std::to_string(ta.dim_out) + ".");
  code.Open("for (int j = 0; j < " + std::to_string(T / TY) + "; ++j)", BlockKind::kLoop, "#pragma unroll");
  const int j2 = code.DeclareVar("j", code.depth(), 0, T / TY - 1);
  code.Open("for (int x = 0; x < " + std::to_string(T / 32) + "; ++x)", BlockKind::kLoop, "#pragma unroll");
  const int x2 = code.DeclareVar("x", code.depth(), 0, T / 32 - 1);
  {
    IExpr i_out = tile_out * T + IExpr::Var(x2) * 32 + IExpr::Var(tx);
    IExpr i_in = tile_in * T + IExpr::Var(j2) * TY + IExpr::Var(ty);
    std::vector<std::string> guards;
    if (d_in % T != 0) guards.push_back(code.Render(i_in) + " < " + code.IndexLiteral(d_in));
    if (d_out % T != 0) guards.push_back(code.Render(i_out) + " < " + code.IndexLiteral(d_out));
    if (!guards.empty()) code.Open("if (" + StrJoin(guards, " && ") + ")", BlockKind::kConditional);
    Index index;
    index.dims = dims;
    index.dims[ta.dim_in] = i_in;
    index.dims[ta.dim_out] = i_out;
    const std::vector<IExpr> hero_dims = index.dims;
    const std::string tile_read = tile + "[x * 32 + tx][j * " + std::to_string(TY) + " + ty]";
    const int block = code.BlockIdAt(code.depth());
    em.SetOverride([&](const HloInstruction& i, const Index& at) -> StatusOr<std::optional<std::vector<Value>>> {
      if (&i != &hero) return std::optional<std::vector<Value>>();
      if (at.dims != hero_dims)
        return Unimplemented("transpose: %", hero.name(), " is read at another position than its tile");
      return std::optional<std::vector<Value>>(std::vector<Value>{Value{tile_read, tile_type, block}});
    });
    for (size_t k = 0; k < view.outputs.size(); ++k) {
      const KernelOutput& o = view.outputs[k];
      Value v;
      if (o.tuple_index >= 0) {
        KILN_ASSIGN_OR_RETURN(std::vector<Value> t, em.EmitTuple(*o.value, index));
        v = t[o.tuple_index];
      } else {
        KILN_ASSIGN_OR_RETURN(v, em.Emit(*o.value, index));
      }
      EmitStore(em, StorePlan{}, ka.output_pointer(k), o.shape, index, v);
    }
    em.SetOverride(nullptr);
    if (!guards.empty()) code.Close();
  }
  code.Close();
  code.Close();
  KILN_ASSIGN_OR_RETURN(std::string body, code.Finish());
  const std::string entry = "transpose_" + SanitizeIdentifier(instr.name());
  ka.AddEntry(entry, B, body);
  ka.NoteReads(em);
  runtime::LaunchDims launch;
  launch.grid.x = static_cast<uint32_t>(blocks);
  launch.block.x = static_cast<uint32_t>(B);
  ka.AddLaunch(entry, launch);
  return ka.Finish();
}

}  // namespace kiln::codegen
