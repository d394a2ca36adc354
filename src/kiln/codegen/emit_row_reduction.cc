// The row-reduction emitter: reductions whose reduced dimensions are contiguous in memory
// ([rows, cols] physically), with sibling reduces, variadic reduces, elementwise producers and
// consumers, and normalizations (softmax, layernorm) in one kernel.
//
// Thread mapping: a group of TPR threads (a power of two) owns a row; a block holds RPB groups.
// Each thread reads vectors of V contiguous columns, vector (it * TPR + tid) in iteration it,
// so a group's loads of one iteration are one contiguous span. Per-lane accumulators keep V
// independent reduction chains; lanes are folded, then the group reduces with warp shuffles
// (xor butterfly: every thread ends with the result) and, for groups wider than a warp, through
// shared memory (every thread reads all warps' partials, in the same order: deterministic).
//
// Passes: a reduce whose input reads another reduce's result (softmax's sum of exp(x - max),
// layernorm's variance of x - mean) runs in a later pass over the same row; elementwise outputs
// of the row run in the pass after the last reduce they read. When a row's share of a thread
// fits in registers (TPR * V * iterations covering the row with at most 64 elements per
// thread), the first pass keeps the elements it loads in registers and later passes read them
// from there: the whole fusion reads the row from memory once (Note [Row cache] in
// docs/codegen.md). Reduced results are written once per row by thread 0 of the group.
//
// Split (config.split = S > 1, only when no pass depends on another): S blocks share a row,
// each reducing a chunk; the partial results go to a scratch buffer and a second kernel (one
// warp per row) combines them and computes the outputs. For full reductions and few long rows.
#include <algorithm>

#include "kiln/base/strings.h"
#include "kiln/codegen/device_types.h"
#include "kiln/codegen/emitters.h"
#include "kiln/codegen/emitters_internal.h"
#include "kiln/codegen/reduction_common.h"

namespace kiln::codegen {

namespace {

constexpr int64_t kMaxCachedPerThread = 64;  // register cache: elements per thread

int InputBytes(const ReductionPlan& plan) {
  int bytes = 1;
  const int64_t n = plan.ra.input_shape.num_elements();
  for (const HloInstruction* l : plan.view.leaves)
    if (l->shape().num_elements() >= n) bytes = std::max(bytes, StorageBytes(l->shape().element_type()));
  for (size_t k = 0; k < plan.view.outputs.size(); ++k)
    if (plan.output_in_input_space[k])
      bytes = std::max(bytes, StorageBytes(plan.view.outputs[k].shape.element_type()));
  return bytes;
}

}  // namespace

StatusOr<KernelConfig> ResolveRowConfig(const ReductionPlan& plan, const DeviceSpec& device,
                                        const KernelConfig& config) {
  const int64_t rows = plan.ra.k1, cols = plan.ra.r;
  KernelConfig c = config;
  if (c.vector_width == 0) {
    int v = std::max(1, std::min(8, 16 / InputBytes(plan)));
    while (v > 1 && cols % v != 0) v /= 2;
    c.vector_width = v;
  }
  const int V = c.vector_width;
  if (V < 1 || V > 16 || (V & (V - 1)) != 0 || cols % V != 0)
    return InvalidArgument("row reduction: vector width ", V, " must be a power of two dividing ", cols);
  const int64_t vectors = cols / V;
  if (c.block_size == 0 || c.rows_per_block == 0) {
    int64_t tpr = std::min<int64_t>(1024, FloorPow2(std::max<int64_t>(1, CeilDiv(vectors, 4))));
    // Few rows (a full reduction): narrower rows leave room for more split blocks, so that
    // about two blocks per SM share the work (each thread still loops >= 4 times).
    if (c.split == 0 && c.block_size == 0 && plan.passes == 1 && rows < device.sm_count) {
      const int64_t want = CeilDiv(2 * device.sm_count, rows);
      while (tpr > 128 && CeilDiv(vectors, tpr) / 4 < want) tpr /= 2;
    }
    if (c.block_size == 0) {
      c.block_size = static_cast<int>(std::max<int64_t>(tpr, 256));
      // One wide row (a full reduction): no idle rows in the block.
      if (tpr >= 128 && rows * tpr < c.block_size) c.block_size = static_cast<int>(tpr);
    }
    if (c.rows_per_block == 0) c.rows_per_block = static_cast<int>(std::max<int64_t>(1, c.block_size / tpr));
  }
  const int B = c.block_size, RPB = c.rows_per_block;
  if (B < 32 || B > device.max_threads_per_block || B % 32 != 0 || RPB < 1 || B % RPB != 0)
    return InvalidArgument("row reduction: block size ", B, " and rows per block ", RPB, " do not fit");
  const int TPR = B / RPB;
  if ((TPR & (TPR - 1)) != 0) return InvalidArgument("row reduction: ", TPR, " threads per row is not a power of two");
  const int64_t iters = CeilDiv(vectors, TPR);
  if (c.split == 0) {
    c.split = 1;
    const int64_t blocks = CeilDiv(rows, RPB);
    if (plan.passes == 1 && blocks < device.sm_count && iters >= 8)
      c.split = static_cast<int>(std::max<int64_t>(2, std::min<int64_t>(CeilDiv(2 * device.sm_count, blocks), iters / 4)));
  }
  if (c.split < 1 || c.split > 65535) return InvalidArgument("row reduction: bad split ", c.split);
  if (c.split > 1 && plan.passes > 1)
    return InvalidArgument("row reduction: split needs every reduce to be independent (", plan.passes, " passes)");
  if (c.unroll == 0) c.unroll = 4;
  if (c.unroll < 1 || c.unroll > 32) return InvalidArgument("row reduction: bad unroll ", c.unroll);
  return c;
}

namespace {

// Reduces each hero of `level` across the TPR threads of a row group; leaves the result in
// every thread and marks the heroes done. `warp` is the hardware's lane count (DeviceSpec::
// warp_size: 32 on NVIDIA GPUs, a 64-lane wavefront on AMD ones): shuffles reduce within it,
// shared memory across warps.
Status GroupReduce(ElementalEmitter& em, std::vector<Hero>& heroes, int level, int tpr, int rpb,
                   const std::string& tid, const std::string& row_in_block, int warp) {
  CodeBuilder& code = em.code();
  for (Hero& h : heroes) {
    if (h.level != level) continue;
    h.result.clear();
    for (int64_t k = 0; k < h.n; ++k) {
      std::string red = code.UniqueName(h.reduce->name());
      code.Line(RegisterType(h.types[k]) + " " + red + " = " + h.acc[k] + "[0];");
      h.result.push_back(Value{red, h.types[k], code.BlockIdAt(code.depth())});
    }
  }
  const int warp_width = std::min(tpr, warp);
  if (warp_width > 1) {
    code.Open("for (int offset = " + std::to_string(warp_width / 2) + "; offset > 0; offset /= 2)",
              BlockKind::kLoop, "#pragma unroll");
    for (Hero& h : heroes) {
      if (h.level != level) continue;
      std::vector<std::string> a, b;
      for (int64_t k = 0; k < h.n; ++k) {
        std::string other = code.UniqueName(h.reduce->name() + "_other");
        code.Line("const " + RegisterType(h.types[k]) + " " + other + " = kiln_shfl_xor(" +
                  h.result[k].expr + ", offset);");
        a.push_back(h.result[k].expr);
        b.push_back(other);
      }
      KILN_RETURN_IF_ERROR(ApplyReducer(em, h, a, b));
    }
    code.Close();
  }
  if (tpr > warp) {
    const int warps = tpr / warp;
    std::vector<std::pair<Hero*, std::vector<std::string>>> shared;
    for (Hero& h : heroes) {
      if (h.level != level) continue;
      std::vector<std::string> names;
      for (int64_t k = 0; k < h.n; ++k) {
        std::string sm = code.UniqueName(h.reduce->name() + "_warps");
        code.Line("__shared__ " + RegisterType(h.types[k]) + " " + sm + "[" + std::to_string(rpb * warps) + "];");
        names.push_back(sm);
      }
      shared.push_back({&h, names});
    }
    const std::string slot = row_in_block == "0" ? "" : row_in_block + " * " + std::to_string(warps) + " + ";
    code.Open("if ((threadIdx.x & " + std::to_string(warp - 1) + ") == 0)", BlockKind::kConditional);
    for (auto& [h, names] : shared)
      for (int64_t k = 0; k < h->n; ++k)
        code.Line(names[k] + "[" + slot + tid + " / " + std::to_string(warp) + "] = " + h->result[k].expr + ";");
    code.Close();
    code.Line("__syncthreads();");
    for (auto& [h, names] : shared)
      for (int64_t k = 0; k < h->n; ++k)
        code.Line(h->result[k].expr + " = " + names[k] + "[" + (slot.empty() ? "0" : row_in_block + " * " + std::to_string(warps)) + "];");
    code.Open("for (int w = 1; w < " + std::to_string(warps) + "; ++w)", BlockKind::kLoop, "#pragma unroll");
    for (auto& [h, names] : shared) {
      std::vector<std::string> a, b;
      for (int64_t k = 0; k < h->n; ++k) {
        a.push_back(h->result[k].expr);
        b.push_back(names[k] + "[" + slot + "w]");
      }
      KILN_RETURN_IF_ERROR(ApplyReducer(em, *h, a, b));
    }
    code.Close();
  }
  for (Hero& h : heroes)
    if (h.level == level) h.done = true;
  return OkStatus();
}

// Stores output k at `index` (scalar store).
Status StoreOutput(ElementalEmitter& em, KernelAssembler& ka, size_t k, const Index& index) {
  const KernelOutput& o = ka.view().outputs[k];
  Value v;
  if (o.tuple_index >= 0) {
    KILN_ASSIGN_OR_RETURN(std::vector<Value> t, em.EmitTuple(*o.value, index));
    v = t[o.tuple_index];
  } else {
    KILN_ASSIGN_OR_RETURN(v, em.Emit(*o.value, index));
  }
  EmitStore(em, StorePlan{}, ka.output_pointer(k), o.shape, index, v);
  return OkStatus();
}

}  // namespace

StatusOr<KernelSpec> EmitRowReduction(const HloInstruction& instr, const DeviceSpec& device,
                                      const KernelConfig& config) {
  KILN_ASSIGN_OR_RETURN(ReductionPlan plan, MakeReductionPlan(instr));
  const ReductionAnalysis& ra = plan.ra;
  if (!ra.is_row())
    return Unimplemented("row reduction: %", instr.name(), " reduces major dimensions (",
                         ra.input_shape.ToString(), "); use the column reduction");
  KILN_ASSIGN_OR_RETURN(KernelConfig c, ResolveRowConfig(plan, device, config));
  const int64_t rows = ra.k1, cols = ra.r;
  const int V = c.vector_width, B = c.block_size, RPB = c.rows_per_block, TPR = B / RPB,
            S = c.split;
  const int64_t span = int64_t{TPR} * V;                 // columns one iteration covers
  const int64_t chunk = CeilDiv(CeilDiv(cols, S), span) * span;  // columns per split
  const int64_t iters = chunk / span;
  const bool col_guard = S * chunk != cols;
  const bool row_guard = rows % RPB != 0;
  // Register cache across passes (Note [Row cache]).
  const bool cache = plan.passes > 1 && iters * V <= kMaxCachedPerThread / 2;
  const bool full_unroll = cache || iters <= 8;

  KernelAssembler ka(plan.view, "row_reduction", c, device.dialect);
  const std::string base = SanitizeIdentifier(instr.name());
  CodeBuilder code(ka.index_type());
  ElementalEmitter em(ka.source(), code);
  ka.BindLeaves(em);
  const std::string it_type = code.index_type();
  code.Comment("Rows of " + std::to_string(cols) + " elements (" + ra.input_shape.ToString() + " reduced over {" +
               StrJoin(ra.reduced_dims, ",") + "}): " + std::to_string(TPR) + " threads per row, " +
               std::to_string(RPB) + " row(s) per block, vectors of " + std::to_string(V) + ", " +
               std::to_string(plan.passes) + " pass(es)" + (cache ? ", row kept in registers" : "") +
               (S > 1 ? ", split in " + std::to_string(S) : "") + ".");
  const int tid = DeclareThreadVar(code, "tid", RPB > 1 ? "threadIdx.x % " + std::to_string(TPR) : "threadIdx.x", TPR - 1);
  std::string row_in_block = "0";
  if (RPB > 1) {
    code.Line("const int row_in_block = threadIdx.x / " + std::to_string(TPR) + ";");
    row_in_block = "row_in_block";
  }
  const std::string row_code = "(" + it_type + ")blockIdx.x" + (RPB > 1 ? " * " + std::to_string(RPB) + " + row_in_block" : "");
  const int row = DeclareThreadVar(code, "row", row_code, rows - 1);
  IExpr split_offset(0);
  if (S > 1) {
    int split = DeclareThreadVar(code, "split", "(" + it_type + ")blockIdx.y", S - 1);
    split_offset = IExpr::Var(split) * chunk;
  }
  const std::string row_ok = row_guard ? "row < " + code.IndexLiteral(rows) : "";
  const std::vector<IExpr> kept = KeptDims(code, ra, IExpr::Var(row), IExpr(0));
  Index out_index = ReductionOutputIndex(ra, Index{kept, std::nullopt, nullptr});
  em.SetOverride(HeroOverride(&plan.heroes, &out_index.dims));
  RowCache row_cache;
  row_cache.declare_depth = 0;
  row_cache.max_elements = kMaxCachedPerThread;
  if (cache) em.SetRowCache(&row_cache);

  for (int pass = 1; pass <= plan.passes; ++pass) {
    bool has_heroes = false;
    for (const Hero& h : plan.heroes) has_heroes |= h.level == pass;
    std::vector<size_t> outs;
    for (size_t k = 0; k < plan.view.outputs.size(); ++k)
      if (plan.output_in_input_space[k] && plan.output_level[k] == pass) outs.push_back(k);
    if (!has_heroes && outs.empty()) continue;
    code.Comment("Pass " + std::to_string(pass) + ".");
    KILN_RETURN_IF_ERROR(DeclareAccumulators(em, plan.heroes, pass, V));
    const std::string it_name = code.UniqueName("it");
    code.Open("for (int " + it_name + " = 0; " + it_name + " < " + std::to_string(iters) + "; ++" + it_name + ")",
              BlockKind::kLoop, full_unroll ? "#pragma unroll" : "#pragma unroll " + std::to_string(c.unroll));
    const int it = code.DeclareVar(it_name, code.depth(), 0, iters - 1);
    IExpr col0 = split_offset + IExpr::Var(it) * span + IExpr::Var(tid) * V;
    std::vector<std::string> guards;
    if (!row_ok.empty()) guards.push_back(row_ok);
    if (col_guard) guards.push_back(code.Render(col0) + " < " + code.IndexLiteral(cols));
    if (!guards.empty()) code.Open("if (" + StrJoin(guards, " && ") + ")", BlockKind::kConditional);
    row_cache.it_var = it;
    row_cache.iterations = static_cast<int>(iters);
    row_cache.max_load_depth = code.depth();
    LaneContext lane;
    IExpr col = col0;
    if (V > 1) {
      code.Open("for (int lane = 0; lane < " + std::to_string(V) + "; ++lane)", BlockKind::kLoop, "#pragma unroll");
      lane = LaneContext{code.DeclareVar("lane", code.depth(), 0, V - 1), V, code.depth()};
      col = col + IExpr::Var(lane.var);
      em.SetLane(lane);
    }
    Index index = ReductionInputIndex(code, ra, kept, IExpr::Var(row), col, IExpr(0));
    KILN_RETURN_IF_ERROR(Accumulate(em, plan.heroes, pass, index, V > 1 ? "lane" : "0"));
    std::vector<StorePlan> plans(outs.size());
    for (size_t j = 0; j < outs.size(); ++j) {
      const KernelOutput& o = plan.view.outputs[outs[j]];
      plans[j] = PlanStore(em, ka.output_pointer(outs[j]), o.shape, index, o.value->name());
      Value v;
      if (o.tuple_index >= 0) {
        KILN_ASSIGN_OR_RETURN(std::vector<Value> t, em.EmitTuple(*o.value, index));
        v = t[o.tuple_index];
      } else {
        KILN_ASSIGN_OR_RETURN(v, em.Emit(*o.value, index));
      }
      EmitStore(em, plans[j], ka.output_pointer(outs[j]), o.shape, index, v);
    }
    if (V > 1) {
      code.Close();
      em.SetLane(LaneContext{});
      for (size_t j = 0; j < outs.size(); ++j)
        FinishStore(code, plans[j], ka.output_pointer(outs[j]), plan.view.outputs[outs[j]].shape, V);
    }
    if (!guards.empty()) code.Close();
    code.Close();  // it
    row_cache.it_var = -1;
    if (has_heroes) {
      KILN_RETURN_IF_ERROR(CombineLanes(em, plan.heroes, pass, V));
      KILN_RETURN_IF_ERROR(GroupReduce(em, plan.heroes, pass, TPR, RPB, "tid", row_in_block, device.warp_size));
    }
  }

  // Partial results (split) or the reduced outputs.
  int64_t scratch_bytes = 0;
  std::vector<int64_t> scratch_offsets;  // per hero component, in order
  for (const Hero& h : plan.heroes)
    for (int64_t k = 0; k < h.n; ++k) {
      scratch_offsets.push_back(scratch_bytes);
      scratch_bytes += CeilDiv(rows * S * RegisterBytes(h.types[k]), 16) * 16;
    }
  std::string scratch;
  if (S > 1) scratch = ka.AddScratch(std::max<int64_t>(scratch_bytes, 16));
  std::vector<std::string> conds = {"tid == 0"};
  if (!row_ok.empty()) conds.push_back(row_ok);
  code.Open("if (" + StrJoin(conds, " && ") + ")", BlockKind::kConditional);
  if (S > 1) {
    size_t slot = 0;
    for (const Hero& h : plan.heroes)
      for (int64_t k = 0; k < h.n; ++k, ++slot)
        code.Line("reinterpret_cast<" + RegisterType(h.types[k]) + "*>(" + scratch + " + " +
                  std::to_string(scratch_offsets[slot]) + ")[row * " + std::to_string(S) + " + split] = " +
                  h.result[k].expr + ";");
  } else {
    for (size_t k = 0; k < plan.view.outputs.size(); ++k)
      if (!plan.output_in_input_space[k]) KILN_RETURN_IF_ERROR(StoreOutput(em, ka, k, out_index));
  }
  code.Close();
  KILN_ASSIGN_OR_RETURN(std::string body, code.Finish());
  const std::string entry = "row_reduce_" + base + (S > 1 ? "_partial" : "");
  ka.AddEntry(entry, B, body);
  ka.NoteReads(em);
  runtime::LaunchDims dims;
  dims.grid.x = static_cast<uint32_t>(CeilDiv(rows, RPB));
  dims.grid.y = static_cast<uint32_t>(S);
  dims.block.x = static_cast<uint32_t>(B);
  ka.AddLaunch(entry, dims);

  if (S > 1) {
    // Second stage: one warp per row folds the S partials and writes the outputs.
    constexpr int kRowsPerBlock = 8;
    CodeBuilder fin(ka.index_type());
    ElementalEmitter fem(ka.source(), fin);
    ka.BindLeaves(fem);
    fin.Comment("Folds the " + std::to_string(S) + " partial results of each row: one warp per row.");
    const int lane = DeclareThreadVar(fin, "lane", "threadIdx.x & 31", 31);
    (void)lane;
    const int frow = DeclareThreadVar(fin, "row", "(" + it_type + ")blockIdx.x * " + std::to_string(kRowsPerBlock) +
                                                      " + threadIdx.x / 32",
                                      CeilDiv(rows, kRowsPerBlock) * kRowsPerBlock - 1);
    const std::vector<IExpr> fkept = KeptDims(fin, ra, IExpr::Var(frow), IExpr(0));
    Index fout_index = ReductionOutputIndex(ra, Index{fkept, std::nullopt, nullptr});
    for (Hero& h : plan.heroes) h.done = false;
    fem.SetOverride(HeroOverride(&plan.heroes, &fout_index.dims));
    KILN_RETURN_IF_ERROR(DeclareAccumulators(fem, plan.heroes, -1, 1));
    fin.Open("if (row < " + fin.IndexLiteral(rows) + ")", BlockKind::kConditional);
    fin.Open("for (int s = lane; s < " + std::to_string(S) + "; s += 32)", BlockKind::kLoop);
    size_t slot = 0;
    for (Hero& h : plan.heroes) {
      std::vector<std::string> a, b;
      for (int64_t k = 0; k < h.n; ++k, ++slot) {
        a.push_back(h.acc[k] + "[0]");
        b.push_back("reinterpret_cast<const " + RegisterType(h.types[k]) + "*>(" + scratch + " + " +
                    std::to_string(scratch_offsets[slot]) + ")[row * " + std::to_string(S) + " + s]");
      }
      KILN_RETURN_IF_ERROR(ApplyReducer(fem, h, a, b));
    }
    fin.Close();
    fin.Close();
    for (Hero& h : plan.heroes) h.level = 1;
    KILN_RETURN_IF_ERROR(GroupReduce(fem, plan.heroes, 1, 32, kRowsPerBlock, "lane", "0", device.warp_size));
    fin.Open("if (lane == 0 && row < " + fin.IndexLiteral(rows) + ")", BlockKind::kConditional);
    for (size_t k = 0; k < plan.view.outputs.size(); ++k)
      if (!plan.output_in_input_space[k]) KILN_RETURN_IF_ERROR(StoreOutput(fem, ka, k, fout_index));
    fin.Close();
    KILN_ASSIGN_OR_RETURN(std::string fbody, fin.Finish());
    const std::string fentry = "row_reduce_" + base + "_final";
    ka.AddEntry(fentry, 32 * kRowsPerBlock, fbody);
    ka.NoteReads(fem);
    runtime::LaunchDims fdims;
    fdims.grid.x = static_cast<uint32_t>(CeilDiv(rows, kRowsPerBlock));
    fdims.block.x = 32 * kRowsPerBlock;
    ka.AddLaunch(fentry, fdims);
  }
  return ka.Finish();
}

}  // namespace kiln::codegen
