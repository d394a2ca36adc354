// Cholesky and triangular-solve emitters: simple kernels for the small batched matrices JAX's
// linalg produces, with the evaluator's algorithms and arithmetic (eval/linalg.cc): double (or
// complex double) working values in a scratch buffer, one rounding to the result type. One
// thread factors one matrix (cholesky) or solves one column/row of B (triangular-solve), so
// matrices are limited in size (kMaxCholesky, kMaxSolve); larger ones stay on the host.
#include <algorithm>

#include "kiln/base/strings.h"
#include "kiln/codegen/device_types.h"
#include "kiln/codegen/elemental_emitter.h"
#include "kiln/codegen/emitter_common.h"
#include "kiln/codegen/emitters.h"
#include "kiln/codegen/emitters_internal.h"

namespace kiln::codegen {

namespace {

// Per thread: n^3/3 dependent double operations for cholesky, k^2/2 per right-hand side.
constexpr int64_t kMaxCholesky = 256;
constexpr int64_t kMaxSolve = 2048;
// Block edge of the blocked kernels (Note [Blocked linalg]).
constexpr int kDefaultTile = 32;
// The blocked kernels put the batch index in grid.y.
constexpr int64_t kMaxBlockedBatch = 65535;

bool LinalgType(PrimitiveType t) {
  return t == PrimitiveType::kF32 || t == PrimitiveType::kF64 || t == PrimitiveType::kC64 ||
         t == PrimitiveType::kC128;
}

bool RowMajor(const Shape& s) {
  return SamePhysicalShape(WithLayout(s), Shape::ArrayWithDefaultLayout(s.element_type(), s.dimensions()));
}

// Device helpers on the working type W (double or kiln_c128) for storage type `t`.
std::string WorkHelpers(PrimitiveType t) {
  const bool cplx = IsComplexType(t);
  const std::string st = StorageType(t);
  std::string s;
  if (!cplx) {
    s += "typedef double W;\n";
    s += "KILN_DEVICE W w_load(const " + st + "* p) { return (double)*p; }\n";
    s += "KILN_DEVICE void w_store(" + st + "* p, W v) { *p = (" + st + ")v; }\n";
    s += "KILN_DEVICE W w_real(double r) { return r; }\n";
    s += "KILN_DEVICE double w_re(W v) { return v; }\n";
    s += "KILN_DEVICE W w_conj(W v) { return v; }\n";
    s += "KILN_DEVICE W w_sub(W a, W b) { return a - b; }\n";
    s += "KILN_DEVICE W w_mul(W a, W b) { return a * b; }\n";
    s += "KILN_DEVICE W w_div(W a, W b) { return a / b; }\n";
    s += "KILN_DEVICE W w_div_real(W a, double r) { return a / r; }\n";
    s += "KILN_DEVICE W w_nan() { return KILN_NAN_D; }\n";
  } else {
    s += "typedef kiln_c128 W;\n";
    s += "KILN_DEVICE W w_load(const " + st + "* p) { return W{(double)p->re, (double)p->im}; }\n";
    s += "KILN_DEVICE void w_store(" + st + "* p, W v) { *p = " + st + "{(" +
         (t == PrimitiveType::kC64 ? std::string("float") : std::string("double")) + ")v.re, (" +
         (t == PrimitiveType::kC64 ? std::string("float") : std::string("double")) + ")v.im}; }\n";
    s += "KILN_DEVICE W w_real(double r) { return W{r, 0.0}; }\n";
    s += "KILN_DEVICE double w_re(W v) { return v.re; }\n";
    s += "KILN_DEVICE W w_conj(W v) { return W{v.re, -v.im}; }\n";
    s += "KILN_DEVICE W w_sub(W a, W b) { return kiln_csub(a, b); }\n";
    s += "KILN_DEVICE W w_mul(W a, W b) { return kiln_cmul(a, b); }\n";
    s += "KILN_DEVICE W w_div(W a, W b) { return kiln_cdiv(a, b); }\n";
    s += "KILN_DEVICE W w_div_real(W a, double r) { return W{a.re / r, a.im / r}; }\n";
    s += "KILN_DEVICE W w_nan() { return W{KILN_NAN_D, 0.0}; }\n";
  }
  return s;
}

// `tile` selects the algorithm: 0 the one-thread kernels (problems up to `limit`), > 0 the
// blocked multi-launch kernels with that block edge (the default above `limit`).
KernelConfig ResolveBlock(const KernelConfig& config, const DeviceSpec& device, int64_t size,
                          int64_t limit, Status* status) {
  KernelConfig c = config;
  if (c.tile == 0 && size > limit) c.tile = kDefaultTile;
  if (c.block_size == 0) c.block_size = c.tile > 0 ? 128 : 64;
  if (c.block_size < 32 || c.block_size > device.max_threads_per_block || c.block_size % 32 != 0)
    *status = InvalidArgument("linalg emitter: bad block size ", c.block_size);
  if (c.tile < 0 || c.tile > 256) *status = InvalidArgument("linalg emitter: bad tile ", c.tile);
  c.vector_width = 1;
  c.unroll = 1;
  return c;
}

// Note [Blocked linalg]
// Matrices over kMaxCholesky and systems over kMaxSolve (or any size when the config sets a
// tile) run as a sequence of launches over a working copy in scratch (double / complex double,
// as the one-thread kernels), one block of `tile` columns (cholesky) or unknowns (solve) at a
// time:
//   cholesky, per block [kb, ke):  diag -- one thread per matrix factors the diagonal block;
//     panel -- one thread per row below it divides by the block's columns; update -- one thread
//     per element of the trailing lower triangle subtracts the block's contribution. Every
//     element then sees exactly the evaluator's sequence of operations (the same k order), so
//     the result equals the evaluator's up to contraction into FMAs. The working matrix is
//     column-major so that the panel and update threads (consecutive rows) read coalesced.
//   triangular-solve, per block of unknowns in solve order: diag -- one thread per right-hand
//     side solves the block by substitution; update -- one thread per (right-hand side,
//     later unknown) subtracts the block's contribution.
// Launch sizes shrink with the trailing part and are compiled in; the block index itself lives
// in scratch: the diag launch's thread advances its own counter (`step`), the later launches of
// the same block only read it. A cholesky whose pivot is not positive sets `fail`, later
// launches skip that matrix and the last one writes it all NaN (the evaluator's answer).
int64_t Steps(int64_t size, int tile) { return CeilDiv(size, tile); }

runtime::LaunchDims Dims(int64_t threads, int block, int64_t grid_y = 1) {
  runtime::LaunchDims d;
  d.grid.x = static_cast<uint32_t>(std::max<int64_t>(1, CeilDiv(threads, block)));
  d.grid.y = static_cast<uint32_t>(std::max<int64_t>(1, grid_y));
  d.block.x = static_cast<uint32_t>(block);
  return d;
}

StatusOr<KernelSpec> EmitBlockedCholesky(const HloInstruction& instr, const KernelConfig& c,
                                         const DeviceSpec& device) {
  const Shape& s = instr.operand(0)->shape();
  const PrimitiveType t = s.element_type();
  const int64_t n = s.dimensions(s.rank() - 1);
  const int64_t batch = n == 0 ? 0 : s.num_elements() / (n * n);
  if (batch > kMaxBlockedBatch)
    return Unimplemented("cholesky %", instr.name(), ": blocked kernels take at most ", kMaxBlockedBatch,
                         " matrices");
  KILN_ASSIGN_OR_RETURN(FusionView view, MakeFusionView(instr));
  KernelAssembler ka(view, "cholesky", c, device.dialect);
  ka.MarkRead(0);
  const int wbytes = IsComplexType(t) ? 16 : 8;
  const int64_t lbytes = batch * n * n * wbytes;
  const std::string scratch = ka.AddScratch(std::max<int64_t>(lbytes + batch * 8, 16));
  const std::string N = std::to_string(n), NN = std::to_string(n * n), NB = std::to_string(c.tile),
                    BS = std::to_string(c.block_size), BATCH = std::to_string(batch);
  const std::string st = StorageType(t);
  const bool lower = instr.attrs().cholesky_lower;
  ka.source().AddHeaderComment(StrCat("cholesky: blocked (tile ", c.tile, ") over ", batch, " ", n, "x", n,
                                      " matrices, ", 2 + 3 * Steps(n, c.tile), " launches; lower=", lower));
  ka.source().AddEntry(WorkHelpers(t) + "#define KILN_L(i, j) l[(long long)(j) * " + N + " + (i)]\n");
  const std::string common = "  W* const lw = reinterpret_cast<W*>(" + scratch + ");\n" +
                             "  int* const step = reinterpret_cast<int*>(" + scratch + " + " +
                             std::to_string(lbytes) + "LL);\n  int* const fail = step + " + BATCH + ";\n";
  const std::string name = SanitizeIdentifier(instr.name());
  const std::string block_of = "  const int kb = step[m] * " + NB + ", ke = min(kb + " + NB + ", " + N + ");\n";
  // init: the lower-triangle problem (upper: the unconjugated transpose) into scratch.
  {
    std::string b = common;
    b += "  const long long g = (long long)blockIdx.x * " + BS + " + threadIdx.x;\n";
    b += "  if (g >= " + std::to_string(batch * n * n) + "LL) return;\n";
    b += "  const long long m = g / " + NN + ";\n  const int e = (int)(g % " + NN + "), i = e % " + N +
         ", j = e / " + N + ";\n";
    b += "  const " + st + "* a = " + ka.operand_pointer(0) + " + m * " + NN + ";\n";
    b += "  W* l = lw + m * " + NN + ";\n";
    b += "  l[e] = j <= i ? w_load(&a[" + (lower ? "i * " + N + " + j" : "j * " + N + " + i") +
         "]) : w_real(0.0);\n";
    b += "  if (e == 0) { step[m] = -1; fail[m] = 0; }\n";
    ka.AddEntry("chol_init_" + name, c.block_size, b);
  }
  {
    std::string b = common;
    b += "  const long long m = (long long)blockIdx.x * " + BS + " + threadIdx.x;\n";
    b += "  if (m >= " + BATCH + "LL) return;\n  ++step[m];\n  if (fail[m]) return;\n" + block_of;
    b += "  W* l = lw + m * " + NN + ";\n";
    b += "  for (int j = kb; j < ke; ++j) {\n";
    b += "    W d = KILN_L(j, j);\n";
    b += "    for (int k = kb; k < j; ++k) d = w_sub(d, w_mul(KILN_L(j, k), w_conj(KILN_L(j, k))));\n";
    b += "    const double piv = sqrt(w_re(d));\n";
    b += "    if (piv != piv) { fail[m] = 1; return; }\n";
    b += "    KILN_L(j, j) = w_real(piv);\n";
    b += "    for (int i = j + 1; i < ke; ++i) {\n";
    b += "      W v = KILN_L(i, j);\n";
    b += "      for (int k = kb; k < j; ++k) v = w_sub(v, w_mul(KILN_L(i, k), w_conj(KILN_L(j, k))));\n";
    b += "      KILN_L(i, j) = w_div_real(v, piv);\n";
    b += "    }\n  }\n";
    ka.AddEntry("chol_diag_" + name, c.block_size, b);
  }
  {
    std::string b = common;
    b += "  const long long m = blockIdx.y;\n  if (fail[m]) return;\n" + block_of;
    b += "  const int i = ke + (int)(blockIdx.x * " + BS + " + threadIdx.x);\n";
    b += "  if (i >= " + N + ") return;\n";
    b += "  W* l = lw + m * " + NN + ";\n";
    b += "  for (int j = kb; j < ke; ++j) {\n";
    b += "    W v = KILN_L(i, j);\n";
    b += "    for (int k = kb; k < j; ++k) v = w_sub(v, w_mul(KILN_L(i, k), w_conj(KILN_L(j, k))));\n";
    b += "    KILN_L(i, j) = w_div_real(v, w_re(KILN_L(j, j)));\n";
    b += "  }\n";
    ka.AddEntry("chol_panel_" + name, c.block_size, b);
  }
  {
    std::string b = common;
    b += "  const long long m = blockIdx.y;\n  if (fail[m]) return;\n" + block_of;
    b += "  const long long r_ = " + N + " - ke;\n";
    b += "  const long long g = (long long)blockIdx.x * " + BS + " + threadIdx.x;\n";
    b += "  if (g >= r_ * r_) return;\n";
    b += "  const int col = (int)(g / r_), row = (int)(g % r_);\n";
    b += "  if (row < col) return;\n";
    b += "  const int i = ke + row, j = ke + col;\n";
    b += "  W* l = lw + m * " + NN + ";\n";
    b += "  W v = KILN_L(i, j);\n";
    b += "  for (int k = kb; k < ke; ++k) v = w_sub(v, w_mul(KILN_L(i, k), w_conj(KILN_L(j, k))));\n";
    b += "  KILN_L(i, j) = v;\n";
    ka.AddEntry("chol_update_" + name, c.block_size, b);
  }
  {
    std::string b = common;
    b += "  const long long g = (long long)blockIdx.x * " + BS + " + threadIdx.x;\n";
    b += "  if (g >= " + std::to_string(batch * n * n) + "LL) return;\n";
    b += "  const long long m = g / " + NN + ";\n  const int e = (int)(g % " + NN + "), p = e / " + N +
         ", q = e % " + N + ";\n";
    b += std::string("  const int i = ") + (lower ? "p, j = q;\n" : "q, j = p;\n");
    b += "  const W* l = lw + m * " + NN + ";\n";
    b += "  w_store(&" + ka.output_pointer(0) + "[g], fail[m] ? w_nan() : (j <= i ? KILN_L(i, j) : w_real(0.0)));\n";
    ka.AddEntry("chol_final_" + name, c.block_size, b);
  }
  ka.source().AddEntry("#undef KILN_L\n");
  ka.AddLaunch("chol_init_" + name, Dims(batch * n * n, c.block_size));
  if (batch > 0) {
    for (int64_t kb = 0; kb < n; kb += c.tile) {
      const int64_t r = n - std::min<int64_t>(kb + c.tile, n);
      ka.AddLaunch("chol_diag_" + name, Dims(batch, c.block_size));
      if (r == 0) continue;
      ka.AddLaunch("chol_panel_" + name, Dims(r, c.block_size, batch));
      ka.AddLaunch("chol_update_" + name, Dims(r * r, c.block_size, batch));
    }
  }
  ka.AddLaunch("chol_final_" + name, Dims(batch * n * n, c.block_size));
  return ka.Finish();
}

// T(i, j) = op(the `lower` triangle of A, unit diagonal if asked), for A of edge `K`.
std::string TriangleMacros(const TriangularSolveOptions& o, const std::string& K) {
  std::string in_tri = o.lower ? "(c <= r)" : "(c >= r)";
  std::string diag = o.unit_diagonal ? "r == c ? w_real(1.0) : " : "";
  std::string b = "#define KILN_A(r, c) ((" + diag + "(" + in_tri + " ? w_load(&A[(long long)(r) * " + K +
                  " + (c)]) : w_real(0.0))))\n";
  switch (o.transpose_a) {
    case TriangularTranspose::kNoTranspose: b += "#define KILN_T(i, j) KILN_A(i, j)\n"; break;
    case TriangularTranspose::kTranspose: b += "#define KILN_T(i, j) KILN_A(j, i)\n"; break;
    case TriangularTranspose::kAdjoint: b += "#define KILN_T(i, j) w_conj(KILN_A(j, i))\n"; break;
  }
  return b;
}

StatusOr<KernelSpec> EmitBlockedTriangularSolve(const HloInstruction& instr, const KernelConfig& c,
                                                const DeviceSpec& device) {
  const Shape& as = instr.operand(0)->shape();
  const Shape& bs = instr.operand(1)->shape();
  const PrimitiveType t = as.element_type();
  const int64_t r = bs.rank();
  const int64_t k = as.dimensions(r - 1), m = bs.dimensions(r - 2), n = bs.dimensions(r - 1);
  const int64_t batch = (m == 0 || n == 0) ? 0 : bs.num_elements() / (m * n);
  if (batch > kMaxBlockedBatch)
    return Unimplemented("triangular-solve %", instr.name(), ": blocked kernels take at most ",
                         kMaxBlockedBatch, " systems");
  const TriangularSolveOptions& o = instr.attrs().triangular_solve_options;
  KILN_ASSIGN_OR_RETURN(FusionView view, MakeFusionView(instr));
  KernelAssembler ka(view, "triangular_solve", c, device.dialect);
  ka.MarkRead(0);
  ka.MarkRead(1);
  const int wbytes = IsComplexType(t) ? 16 : 8;
  const int64_t xbytes = batch * m * n * wbytes;
  // One right-hand side: a column of b (left side, T X = B) or a row (right side, X T = B).
  const int64_t per_batch = o.left_side ? n : m;
  const int64_t rhs = batch * per_batch;
  const std::string scratch = ka.AddScratch(std::max<int64_t>(xbytes + rhs * 4, 16));
  const std::string K = std::to_string(k), NB = std::to_string(c.tile), BS = std::to_string(c.block_size),
                    PB = std::to_string(per_batch), S = std::to_string(o.left_side ? n : 1);
  const std::string st = StorageType(t);
  // Unknowns in solve order: position s is unknown KILN_P(s); forward for a lower T on the
  // left and an upper T on the right. KILN_C(p, u): the coefficient of unknown u in equation p.
  const bool t_lower = o.lower != (o.transpose_a != TriangularTranspose::kNoTranspose);
  const bool forward = o.left_side == t_lower;
  std::string macros = WorkHelpers(t) + TriangleMacros(o, K);
  macros += forward ? "#define KILN_P(s) (s)\n" : "#define KILN_P(s) (" + K + " - 1 - (s))\n";
  macros += o.left_side ? "#define KILN_C(p, u) KILN_T(p, u)\n" : "#define KILN_C(p, u) KILN_T(u, p)\n";
  ka.source().AddHeaderComment(StrCat("triangular-solve: blocked (tile ", c.tile, "), ", rhs,
                                      " right-hand sides of ", k, " unknowns, ", 2 + 2 * Steps(k, c.tile),
                                      " launches"));
  ka.source().AddEntry(macros);
  const std::string common = "  W* const xw = reinterpret_cast<W*>(" + scratch + ");\n" +
                             "  int* const step = reinterpret_cast<int*>(" + scratch + " + " +
                             std::to_string(xbytes) + "LL);\n";
  // The x of right-hand side q of system bi.
  const std::string xbase = o.left_side ? "bi * " + std::to_string(m * n) + " + q"
                                        : "bi * " + std::to_string(m * n) + " + q * " + std::to_string(n);
  const std::string name = SanitizeIdentifier(instr.name());
  const std::string total = std::to_string(batch * m * n);
  {
    std::string b = common;
    b += "  const long long g = (long long)blockIdx.x * " + BS + " + threadIdx.x;\n";
    b += "  if (g >= " + total + "LL) return;\n";
    b += "  xw[g] = w_load(&" + ka.operand_pointer(1) + "[g]);\n";
    b += "  if (g < " + std::to_string(rhs) + "LL) step[g] = -1;\n";
    ka.AddEntry("trsm_init_" + name, c.block_size, b);
  }
  {
    std::string b = common;
    b += "  const long long g = (long long)blockIdx.x * " + BS + " + threadIdx.x;\n";
    b += "  if (g >= " + std::to_string(rhs) + "LL) return;\n";
    b += "  const long long bi = g / " + PB + ", q = g % " + PB + ";\n";
    b += "  const int s0 = (++step[g]) * " + NB + ", se = min(s0 + " + NB + ", " + K + ");\n";
    b += "  const " + st + "* A = " + ka.operand_pointer(0) + " + bi * " + std::to_string(k * k) + "LL;\n";
    b += "  W* x = xw + " + xbase + ";\n";
    b += "  for (int s = s0; s < se; ++s) {\n";
    b += "    const int p = KILN_P(s);\n";
    b += "    W v = x[(long long)p * " + S + "];\n";
    b += "    for (int u = s0; u < s; ++u) { const int pu = KILN_P(u); v = w_sub(v, w_mul(KILN_C(p, pu), x[(long long)pu * " + S + "])); }\n";
    b += "    x[(long long)p * " + S + "] = w_div(v, KILN_C(p, p));\n";
    b += "  }\n";
    ka.AddEntry("trsm_diag_" + name, c.block_size, b);
  }
  {
    std::string b = common;
    b += "  const long long bi = blockIdx.y;\n";
    b += "  const int s0 = step[bi * " + PB + "] * " + NB + ", se = min(s0 + " + NB + ", " + K + ");\n";
    b += "  const long long r_ = " + K + " - se;\n";
    b += "  const long long g = (long long)blockIdx.x * " + BS + " + threadIdx.x;\n";
    b += "  if (g >= r_ * " + PB + ") return;\n";
    // Consecutive threads: consecutive columns of X (left side), consecutive unknowns (right).
    b += o.left_side ? "  const long long q = g % " + PB + ", row = g / " + PB + ";\n"
                     : "  const long long q = g / r_, row = g % r_;\n";
    b += "  const " + st + "* A = " + ka.operand_pointer(0) + " + bi * " + std::to_string(k * k) + "LL;\n";
    b += "  W* x = xw + " + xbase + ";\n";
    b += "  const int p = KILN_P(se + (int)row);\n";
    b += "  W v = x[(long long)p * " + S + "];\n";
    b += "  for (int u = s0; u < se; ++u) { const int pu = KILN_P(u); v = w_sub(v, w_mul(KILN_C(p, pu), x[(long long)pu * " + S + "])); }\n";
    b += "  x[(long long)p * " + S + "] = v;\n";
    ka.AddEntry("trsm_update_" + name, c.block_size, b);
  }
  {
    std::string b = common;
    b += "  const long long g = (long long)blockIdx.x * " + BS + " + threadIdx.x;\n";
    b += "  if (g >= " + total + "LL) return;\n";
    b += "  w_store(&" + ka.output_pointer(0) + "[g], xw[g]);\n";
    ka.AddEntry("trsm_final_" + name, c.block_size, b);
  }
  ka.source().AddEntry("#undef KILN_C\n#undef KILN_P\n#undef KILN_T\n#undef KILN_A\n");
  ka.AddLaunch("trsm_init_" + name, Dims(batch * m * n, c.block_size));
  if (rhs > 0) {
    for (int64_t s0 = 0; s0 < k; s0 += c.tile) {
      const int64_t rest = k - std::min<int64_t>(s0 + c.tile, k);
      ka.AddLaunch("trsm_diag_" + name, Dims(rhs, c.block_size));
      if (rest > 0) ka.AddLaunch("trsm_update_" + name, Dims(rest * per_batch, c.block_size, batch));
    }
  }
  ka.AddLaunch("trsm_final_" + name, Dims(batch * m * n, c.block_size));
  return ka.Finish();
}


}  // namespace

Status CheckCholesky(const HloInstruction& instr) {
  if (instr.opcode() != HloOpcode::kCholesky || instr.operand_count() != 1)
    return Unimplemented("cholesky emitter: %", instr.name(), " is not a cholesky");
  const Shape& s = instr.operand(0)->shape();
  const int64_t r = s.rank();
  if (!instr.shape().IsArray() || r < 2 || s.dimensions(r - 1) != s.dimensions(r - 2) ||
      instr.shape().dimensions() != s.dimensions())
    return InvalidArgument("cholesky %", instr.name(), ": expected batched square matrices");
  if (!LinalgType(s.element_type()))
    return Unimplemented("cholesky %", instr.name(), " of ", PrimitiveTypeName(s.element_type()));
  if (!RowMajor(s) || !RowMajor(instr.shape()))
    return Unimplemented("cholesky %", instr.name(), ": non-row-major layout");
  const int64_t n = s.dimensions(r - 1);
  if (n > kMaxCholesky && n > 0 && s.num_elements() / (n * n) > kMaxBlockedBatch)
    return Unimplemented("cholesky %", instr.name(), ": more than ", kMaxBlockedBatch,
                         " matrices larger than ", kMaxCholesky, " run on the host");
  return OkStatus();
}

Status CheckTriangularSolve(const HloInstruction& instr) {
  if (instr.opcode() != HloOpcode::kTriangularSolve || instr.operand_count() != 2)
    return Unimplemented("triangular-solve emitter: %", instr.name(), " is not a triangular-solve");
  const Shape& as = instr.operand(0)->shape();
  const Shape& bs = instr.operand(1)->shape();
  const int64_t r = as.rank();
  if (!instr.shape().IsArray() || r < 2 || bs.rank() != r || as.dimensions(r - 1) != as.dimensions(r - 2) ||
      instr.shape().dimensions() != bs.dimensions() || as.element_type() != bs.element_type())
    return InvalidArgument("triangular-solve %", instr.name(), ": bad operand shapes");
  for (int64_t d = 0; d + 2 < r; ++d)
    if (as.dimensions(d) != bs.dimensions(d))
      return InvalidArgument("triangular-solve %", instr.name(), ": batch dimensions differ");
  const TriangularSolveOptions& o = instr.attrs().triangular_solve_options;
  const int64_t k = as.dimensions(r - 1);
  if (k != (o.left_side ? bs.dimensions(r - 2) : bs.dimensions(r - 1)))
    return InvalidArgument("triangular-solve %", instr.name(), ": a and b do not match");
  if (!LinalgType(as.element_type()))
    return Unimplemented("triangular-solve %", instr.name(), " of ", PrimitiveTypeName(as.element_type()));
  if (!RowMajor(as) || !RowMajor(bs) || !RowMajor(instr.shape()))
    return Unimplemented("triangular-solve %", instr.name(), ": non-row-major layout");
  const int64_t mn = bs.dimensions(r - 2) * bs.dimensions(r - 1);
  if (k > kMaxSolve && mn > 0 && bs.num_elements() / mn > kMaxBlockedBatch)
    return Unimplemented("triangular-solve %", instr.name(), ": more than ", kMaxBlockedBatch,
                         " systems larger than ", kMaxSolve, " run on the host");
  return OkStatus();
}

StatusOr<KernelSpec> EmitCholesky(const HloInstruction& instr, const DeviceSpec& device,
                                  const KernelConfig& config) {
  KILN_RETURN_IF_ERROR(CheckCholesky(instr));
  const Shape& s = instr.operand(0)->shape();
  const PrimitiveType t = s.element_type();
  const int64_t n = s.dimensions(s.rank() - 1);
  const int64_t batch = n == 0 ? 0 : s.num_elements() / (n * n);
  Status st = OkStatus();
  const KernelConfig c = ResolveBlock(config, device, n, kMaxCholesky, &st);
  KILN_RETURN_IF_ERROR(st);
  if (c.tile > 0) return EmitBlockedCholesky(instr, c, device);
  KILN_ASSIGN_OR_RETURN(FusionView view, MakeFusionView(instr));
  KernelAssembler ka(view, "cholesky", c, device.dialect);
  ka.MarkRead(0);
  const int wbytes = IsComplexType(t) ? 16 : 8;
  const std::string scratch = ka.AddScratch(std::max<int64_t>(batch * n * n * wbytes, 16));
  const std::string N = std::to_string(n), NN = std::to_string(n * n);
  ka.source().AddHeaderComment(StrCat("cholesky: one thread per ", n, "x", n, " matrix, ", batch,
                                      " matrices; lower=", instr.attrs().cholesky_lower));
  std::string b;
  auto line = [&](const std::string& x) { b += "  " + x + "\n"; };
  line("const long long m = (long long)blockIdx.x * " + std::to_string(c.block_size) + " + threadIdx.x;");
  line("if (m >= " + std::to_string(batch) + "LL) return;");
  line("const " + StorageType(t) + "* a = " + ka.operand_pointer(0) + " + m * " + NN + ";");
  line(StorageType(t) + "* out = " + ka.output_pointer(0) + " + m * " + NN + ";");
  line("W* l = reinterpret_cast<W*>(" + scratch + ") + m * " + NN + ";");
  // The lower-triangle problem: for upper, the (unconjugated) transpose, as the evaluator does.
  const std::string M = instr.attrs().cholesky_lower ? "a[i * " + N + " + j]" : "a[j * " + N + " + i]";
  line("bool failed = false;");
  line("for (int j = 0; j < " + N + " && !failed; ++j) {");
  line("  { const int i = j; W d = w_load(&" + M + ");");
  line("    for (int k = 0; k < j; ++k) d = w_sub(d, w_mul(l[j * " + N + " + k], w_conj(l[j * " + N + " + k])));");
  line("    const double piv = sqrt(w_re(d));");
  line("    if (piv != piv) { failed = true; break; }");
  line("    l[j * " + N + " + j] = w_real(piv); }");
  line("  const double piv = w_re(l[j * " + N + " + j]);");
  line("  for (int i = j + 1; i < " + N + "; ++i) {");
  line("    W v = w_load(&" + M + ");");
  line("    for (int k = 0; k < j; ++k) v = w_sub(v, w_mul(l[i * " + N + " + k], w_conj(l[j * " + N + " + k])));");
  line("    l[i * " + N + " + j] = w_div_real(v, piv);");
  line("  }");
  line("}");
  const std::string dst = instr.attrs().cholesky_lower ? "out[i * " + N + " + j]" : "out[j * " + N + " + i]";
  line("for (int i = 0; i < " + N + "; ++i)");
  line("  for (int j = 0; j < " + N + "; ++j)");
  line("    w_store(&" + dst + ", failed ? w_nan() : (j <= i ? l[i * " + N + " + j] : w_real(0.0)));");
  const std::string entry = "cholesky_" + SanitizeIdentifier(instr.name());
  ka.source().AddEntry(WorkHelpers(t));
  ka.AddEntry(entry, c.block_size, b);
  runtime::LaunchDims dims;
  dims.grid.x = static_cast<uint32_t>(std::max<int64_t>(1, CeilDiv(batch, c.block_size)));
  dims.block.x = static_cast<uint32_t>(c.block_size);
  ka.AddLaunch(entry, dims);
  return ka.Finish();
}

StatusOr<KernelSpec> EmitTriangularSolve(const HloInstruction& instr, const DeviceSpec& device,
                                         const KernelConfig& config) {
  KILN_RETURN_IF_ERROR(CheckTriangularSolve(instr));
  const Shape& as = instr.operand(0)->shape();
  const Shape& bs = instr.operand(1)->shape();
  const PrimitiveType t = as.element_type();
  const int64_t r = bs.rank();
  const int64_t k = as.dimensions(r - 1), m = bs.dimensions(r - 2), n = bs.dimensions(r - 1);
  const int64_t batch = (m == 0 || n == 0) ? 0 : bs.num_elements() / (m * n);
  const TriangularSolveOptions& o = instr.attrs().triangular_solve_options;
  Status st = OkStatus();
  const KernelConfig c = ResolveBlock(config, device, k, kMaxSolve, &st);
  KILN_RETURN_IF_ERROR(st);
  if (c.tile > 0) return EmitBlockedTriangularSolve(instr, c, device);
  KILN_ASSIGN_OR_RETURN(FusionView view, MakeFusionView(instr));
  KernelAssembler ka(view, "triangular_solve", c, device.dialect);
  ka.MarkRead(0);
  ka.MarkRead(1);
  const int wbytes = IsComplexType(t) ? 16 : 8;
  const std::string scratch = ka.AddScratch(std::max<int64_t>(batch * m * n * wbytes, 16));
  // Each thread solves one column (left side: T X = B) or one row (right side: X T = B).
  const int64_t per_batch = o.left_side ? n : m;
  const int64_t threads = batch * per_batch;
  const std::string K = std::to_string(k), S = std::to_string(o.left_side ? n : 1);
  ka.source().AddHeaderComment(StrCat("triangular-solve: one thread per ", o.left_side ? "column" : "row",
                                      " of b, ", threads, " in all"));
  std::string b;
  auto line = [&](const std::string& x) { b += "  " + x + "\n"; };
  line("const long long g = (long long)blockIdx.x * " + std::to_string(c.block_size) + " + threadIdx.x;");
  line("if (g >= " + std::to_string(threads) + "LL) return;");
  line("const long long bi = g / " + std::to_string(per_batch) + ", q = g % " + std::to_string(per_batch) + ";");
  line("const " + StorageType(t) + "* A = " + ka.operand_pointer(0) + " + bi * " + std::to_string(k * k) + ";");
  // x[i]: element i of this thread's column (stride n) or row (stride 1) of B / X.
  const std::string base = o.left_side ? "bi * " + std::to_string(m * n) + " + q"
                                       : "bi * " + std::to_string(m * n) + " + q * " + std::to_string(n);
  line("const " + StorageType(t) + "* B = " + ka.operand_pointer(1) + " + " + base + ";");
  line(StorageType(t) + "* X = " + ka.output_pointer(0) + " + " + base + ";");
  line("W* x = reinterpret_cast<W*>(" + scratch + ") + " + base + ";");
  line("for (int i = 0; i < " + K + "; ++i) x[i * " + S + "] = w_load(&B[i * " + S + "]);");
  // T(i, j) = op(the `lower` triangle of A, unit diagonal if asked).
  std::string av = [&]() {
    std::string in_tri = o.lower ? "(c <= r)" : "(c >= r)";
    std::string diag = o.unit_diagonal ? "r == c ? w_real(1.0) : " : "";
    return "(" + diag + "(" + in_tri + " ? w_load(&A[r * " + K + " + c]) : w_real(0.0)))";
  }();
  b += "#define KILN_A(r, c) " + av + "\n";
  switch (o.transpose_a) {
    case TriangularTranspose::kNoTranspose: b += "#define KILN_T(i, j) KILN_A(i, j)\n"; break;
    case TriangularTranspose::kTranspose: b += "#define KILN_T(i, j) KILN_A(j, i)\n"; break;
    case TriangularTranspose::kAdjoint: b += "#define KILN_T(i, j) w_conj(KILN_A(j, i))\n"; break;
  }
  const bool t_lower = o.lower != (o.transpose_a != TriangularTranspose::kNoTranspose);
  if (o.left_side) {
    if (t_lower) {
      line("for (int i = 0; i < " + K + "; ++i) {");
      line("  W v = x[i * " + S + "];");
      line("  for (int j = 0; j < i; ++j) v = w_sub(v, w_mul(KILN_T(i, j), x[j * " + S + "]));");
    } else {
      line("for (int i = " + K + " - 1; i >= 0; --i) {");
      line("  W v = x[i * " + S + "];");
      line("  for (int j = i + 1; j < " + K + "; ++j) v = w_sub(v, w_mul(KILN_T(i, j), x[j * " + S + "]));");
    }
    line("  x[i * " + S + "] = w_div(v, KILN_T(i, i));");
    line("}");
  } else {
    if (t_lower) {
      line("for (int j = " + K + " - 1; j >= 0; --j) {");
      line("  W v = x[j];");
      line("  for (int i = j + 1; i < " + K + "; ++i) v = w_sub(v, w_mul(x[i], KILN_T(i, j)));");
    } else {
      line("for (int j = 0; j < " + K + "; ++j) {");
      line("  W v = x[j];");
      line("  for (int i = 0; i < j; ++i) v = w_sub(v, w_mul(x[i], KILN_T(i, j)));");
    }
    line("  x[j] = w_div(v, KILN_T(j, j));");
    line("}");
  }
  line("for (int i = 0; i < " + K + "; ++i) w_store(&X[i * " + S + "], x[i * " + S + "]);");
  b += "#undef KILN_T\n#undef KILN_A\n";
  const std::string entry = "trsm_" + SanitizeIdentifier(instr.name());
  ka.source().AddEntry(WorkHelpers(t));
  ka.AddEntry(entry, c.block_size, b);
  runtime::LaunchDims dims;
  dims.grid.x = static_cast<uint32_t>(std::max<int64_t>(1, CeilDiv(threads, c.block_size)));
  dims.block.x = static_cast<uint32_t>(c.block_size);
  ka.AddLaunch(entry, dims);
  return ka.Finish();
}

}  // namespace kiln::codegen
