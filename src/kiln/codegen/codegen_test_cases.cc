// Catalogue cases (codegen_test_util.h): edge values through the narrow-float codecs, bitcasts
// and complex division, and the window ops (reduce-window, select-and-scatter).
#include <string>
#include <vector>

#include "kiln/codegen/codegen_test_util.h"

namespace kiln::codegen::testing {

std::vector<CatalogueCase> EdgeValueCases() {
  std::vector<CatalogueCase> cases;
  // bf16 NaN payloads: bitcasts keep every bit; f32 -> bf16 keeps the top 7 payload bits and
  // sets the quiet bit (signalling NaN 0x7f800001 becomes 0x7fc0); stores keep the bits.
  cases.push_back({"edge_bf16_nan_bits", R"(HloModule m
fused {
  p0 = u16[8] parameter(0)
  p1 = f32[8] parameter(1)
  p2 = bf16[8] parameter(2)
  b = bf16[8] bitcast-convert(p0)
  back = u16[8] bitcast-convert(b)
  nb = bf16[8] convert(p1)
  nbits = u16[8] bitcast-convert(nb)
  pbits = u16[8] bitcast-convert(p2)
  k = bf16[8] constant({nan(0x1), -nan(0x41), 1, nan(0x7f), -inf, -0, 3, nan})
  kbits = u16[8] bitcast-convert(k)
  ROOT t = (u16[8], bf16[8], u16[8], bf16[8], u16[8], u16[8]) tuple(back, b, nbits, nb, pbits, kbits)
}
ENTRY e {
  c0 = u16[8] constant({32641, 65409, 32704, 32640, 65535, 32703, 16256, 32768})
  c1 = f32[8] constant({nan(0x1), -nan(0x212345), nan, inf, 1.00390625, -0, 3.4e38, nan(0x7fffff)})
  c2 = bf16[8] constant({nan(0x1), -nan(0x41), nan, -inf, 1, -0, 2, nan(0x7f)})
  ROOT f = (u16[8], bf16[8], u16[8], bf16[8], u16[8], u16[8]) fusion(c0, c1, c2), kind=kLoop, calls=fused
})",
                   "loop", /*exact=*/true});
  // f16 NaN payloads: bitcasts and loads keep every bit; f32 -> f16 gives the quiet NaN of the
  // sign (0x7e00 | sign), as the evaluator's codec does.
  cases.push_back({"edge_f16_nan_bits", R"(HloModule m
fused {
  p0 = s16[8] parameter(0)
  p1 = f32[8] parameter(1)
  p2 = f16[8] parameter(2)
  b = f16[8] bitcast-convert(p0)
  back = s16[8] bitcast-convert(b)
  nb = f16[8] convert(p1)
  nbits = s16[8] bitcast-convert(nb)
  pbits = u16[8] bitcast-convert(p2)
  k = f16[8] constant({nan(0x1), -nan(0x155), 1, nan(0x3ff), -inf, -0, 3, nan})
  kbits = u16[8] bitcast-convert(k)
  ROOT t = (s16[8], f16[8], s16[8], f16[8], u16[8], u16[8]) tuple(back, b, nbits, nb, pbits, kbits)
}
ENTRY e {
  c0 = s16[8] constant({31745, -1023, 32256, 32255, 31744, -1, 15360, 1})
  c1 = f32[8] constant({nan(0x1), -nan(0x212345), nan, inf, 1.00048828125, -0, 65520, nan(0x7fffff)})
  c2 = f16[8] constant({nan(0x1), -nan(0x155), nan, -inf, 1, -0, 65504, 6e-08})
  ROOT f = (s16[8], f16[8], s16[8], f16[8], u16[8], u16[8]) fusion(c0, c1, c2), kind=kLoop, calls=fused
})",
                   "loop", /*exact=*/true});
  // f8e8m0fnu: no zero (0 and -0 are NaN), no sign (negatives are NaN), powers of two rounded
  // in the log domain, 0xff is NaN, underflow to 2^-127, overflow to NaN.
  cases.push_back({"edge_f8e8m0fnu", R"(HloModule m
fused {
  p0 = f32[16] parameter(0)
  p1 = u8[16] parameter(1)
  e = f8e8m0fnu[16] convert(p0)
  ebits = u8[16] bitcast-convert(e)
  d = f8e8m0fnu[16] bitcast-convert(p1)
  w = f32[16] convert(d)
  wbits = u32[16] bitcast-convert(w)
  ROOT t = (u8[16], f8e8m0fnu[16], u32[16]) tuple(ebits, e, wbits)
}
ENTRY e {
  c0 = f32[16] constant({0, -0, 1, -1, 0.75, 1.5, 3, inf, -inf, nan, 1e-39, 5.87747175411e-39, 2.93873587706e-39, 3.4e38, 1.70141183461e38, 2.5e38})
  c1 = u8[16] constant({0, 1, 126, 127, 128, 254, 255, 3, 2, 64, 200, 253, 100, 10, 20, 30})
  ROOT f = (u8[16], f8e8m0fnu[16], u32[16]) fusion(c0, c1), kind=kLoop, calls=fused
})",
                   "loop", /*exact=*/true});
  // Complex division by zero, infinities and NaNs (C99 Annex G as std::complex computes it).
  const std::string a = "{(1, 1), (1, 0), (-1, 2), (inf, 1), (1, 1), (nan, 1), (0, 0), (1e30, 1e30), "
                        "(1e38, 1e38), (2, 3), (inf, inf), (0, 1), (-inf, 2), (3, -4)}";
  const std::string b = "{(0, 0), (0, 0), (-0, 0), (1, 2), (inf, 2), (0, 0), (0, 0), (1e30, 1e30), "
                        "(1e-38, 1e-38), (0, -0), (0, 0), (inf, nan), (0, 0), (1e-3, 2e-3)}";
  for (const char* t : {"c64", "c128"}) {
    const std::string s = std::string(t) + "[14]";
    cases.push_back({std::string("edge_divide_") + t, R"(HloModule m
fused {
  p0 = )" + s + R"( parameter(0)
  p1 = )" + s + R"( parameter(1)
  ROOT d = )" + s + R"( divide(p0, p1)
}
ENTRY e {
  c0 = )" + s + " constant(" + a + R"()
  c1 = )" + s + " constant(" + b + R"()
  ROOT f = )" + s + R"( fusion(c0, c1), kind=kLoop, calls=fused
})",
                     "loop"});
  }
  return cases;
}

namespace {

const char* kMax = "max { a = f32[] parameter(0)  b = f32[] parameter(1)  ROOT m = f32[] maximum(a, b) }\n";
const char* kAdd = "add { a = f32[] parameter(0)  b = f32[] parameter(1)  ROOT s = f32[] add(a, b) }\n";

}  // namespace

std::vector<CatalogueCase> WindowCases() {
  std::vector<CatalogueCase> cases;
  // Max-pool 3x3 stride 2 with SAME padding (NHWC), unfused as the GPU compiler sees it.
  cases.push_back({"reduce_window_maxpool", std::string("HloModule m\n") + kMax + R"(
ENTRY e {
  x = f32[2,9,9,3] parameter(0)
  init = f32[] constant(-inf)
  ROOT r = f32[2,5,5,3] reduce-window(x, init), window={size=1x3x3x1 stride=1x2x2x1 pad=0_0x1_1x1_1x0_0}, to_apply=max
})",
                   "loop"});
  // Average-pool numerator with base and window dilation, asymmetric padding.
  cases.push_back({"reduce_window_dilated_sum", std::string("HloModule m\n") + kAdd + R"(
ENTRY e {
  x = f32[5,12] parameter(0)
  init = f32[] constant(0)
  ROOT r = f32[5,11] reduce-window(x, init), window={size=1x3 stride=1x2 pad=0_0x2_1 lhs_dilate=1x2 rhs_dilate=1x2}, to_apply=add
})",
                   "loop"});
  // lax.cumsum along the last axis (window = the axis, padded low), and a reverse cumulative
  // max in bf16 along the first axis (padded high).
  cases.push_back({"reduce_window_cumsum", std::string("HloModule m\n") + kAdd + R"(
ENTRY e {
  x = f32[4,100] parameter(0)
  init = f32[] constant(0)
  ROOT r = f32[4,100] reduce-window(x, init), window={size=1x100 pad=0_0x99_0}, to_apply=add
})",
                   "scan"});
  cases.push_back({"reduce_window_reverse_cummax_bf16", R"(HloModule m
max { a = bf16[] parameter(0)  b = bf16[] parameter(1)  ROOT m = bf16[] maximum(a, b) }
ENTRY e {
  x = bf16[7,33] parameter(0)
  init = bf16[] constant(-inf)
  ROOT r = bf16[7,33] reduce-window(x, init), window={size=7x1 pad=0_6x0_0}, to_apply=max
})",
                   "loop"});
  cases.push_back({"reduce_window_cumprod_s32", R"(HloModule m
mul { a = s32[] parameter(0)  b = s32[] parameter(1)  ROOT m = s32[] multiply(a, b) }
ENTRY e {
  x = s32[3,17] parameter(0)
  init = s32[] constant(1)
  ROOT r = s32[3,17] reduce-window(x, init), window={size=1x17 pad=0_0x16_0}, to_apply=mul
})",
                   "scan"});
  // Scans (emit_scan.cc) along every kind of axis: reverse along a major one (inner rows),
  // long bf16 max (exact: scanned), a short bf16 sum (sequential: the loop emitter), complex
  // and f64 products, cumlogsumexp, and a fusion computing the scan's operand.
  cases.push_back({"reduce_window_scan_reverse_s32_axis0", R"(HloModule m
add { a = s32[] parameter(0)  b = s32[] parameter(1)  ROOT s = s32[] add(a, b) }
ENTRY e {
  x = s32[300,5] parameter(0)
  init = s32[] constant(3)
  ROOT r = s32[300,5] reduce-window(x, init), window={size=300x1 pad=0_299x0_0}, to_apply=add
})",
                   "scan"});
  cases.push_back({"reduce_window_scan_cummax_bf16", R"(HloModule m
max { a = bf16[] parameter(0)  b = bf16[] parameter(1)  ROOT m = bf16[] maximum(a, b) }
ENTRY e {
  x = bf16[2,300,3] parameter(0)
  init = bf16[] constant(-inf)
  ROOT r = bf16[2,300,3] reduce-window(x, init), window={size=1x300x1 pad=0_0x299_0x0_0}, to_apply=max
})",
                   "scan"});
  cases.push_back({"reduce_window_scan_short_bf16_sum", R"(HloModule m
add { a = bf16[] parameter(0)  b = bf16[] parameter(1)  ROOT s = bf16[] add(a, b) }
ENTRY e {
  x = bf16[4,100] parameter(0)
  init = bf16[] constant(0)
  ROOT r = bf16[4,100] reduce-window(x, init), window={size=1x100 pad=0_0x99_0}, to_apply=add
})",
                   "loop"});
  cases.push_back({"reduce_window_scan_cumsum_c64", R"(HloModule m
add { a = c64[] parameter(0)  b = c64[] parameter(1)  ROOT s = c64[] add(a, b) }
ENTRY e {
  x = c64[40] parameter(0)
  init = c64[] constant((0, 0))
  ROOT r = c64[40] reduce-window(x, init), window={size=40 pad=39_0}, to_apply=add
})",
                   "scan"});
  cases.push_back({"reduce_window_scan_reverse_cumprod_f64", R"(HloModule m
mul { a = f64[] parameter(0)  b = f64[] parameter(1)  ROOT m = f64[] multiply(a, b) }
ENTRY e {
  x = f64[5,40] parameter(0)
  init = f64[] constant(1)
  ROOT r = f64[5,40] reduce-window(x, init), window={size=1x40 pad=0_0x0_39}, to_apply=mul
})",
                   "scan"});
  cases.push_back({"reduce_window_scan_cumlogsumexp_f32", R"(HloModule m
lse {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ea = f32[] exponential(a)
  eb = f32[] exponential(b)
  s = f32[] add(ea, eb)
  ROOT l = f32[] log(s)
}
ENTRY e {
  x = f32[3,257] parameter(0)
  init = f32[] constant(-inf)
  ROOT r = f32[3,257] reduce-window(x, init), window={size=1x257 pad=0_0x256_0}, to_apply=lse
})",
                   "scan"});
  // Long rows (the evaluator's reduce-window is O(n^2): 2 x 10^8 steps each).
  cases.push_back({"scan_long_cumsum_f32", R"(HloModule m
add { a = f32[] parameter(0)  b = f32[] parameter(1)  ROOT s = f32[] add(a, b) }
ENTRY e {
  x = f32[20000] parameter(0)
  init = f32[] constant(0)
  ROOT r = f32[20000] reduce-window(x, init), window={size=20000 pad=19999_0}, to_apply=add
})",
                   "scan"});
  cases.push_back({"scan_long_reverse_cumsum_s32", R"(HloModule m
add { a = s32[] parameter(0)  b = s32[] parameter(1)  ROOT s = s32[] add(a, b) }
ENTRY e {
  x = s32[20000] parameter(0)
  init = s32[] constant(0)
  ROOT r = s32[20000] reduce-window(x, init), window={size=20000 pad=0_19999}, to_apply=add
})",
                   "scan", true});
  cases.push_back({"reduce_window_scan_fused_operand", R"(HloModule m
add { a = f64[] parameter(0)  b = f64[] parameter(1)  ROOT s = f64[] add(a, b) }
fused {
  p0 = f64[2,64] parameter(0)
  p1 = f64[] parameter(1)
  e = f64[2,64] exponential(p0)
  ROOT r = f64[2,64] reduce-window(e, p1), window={size=1x64 pad=0_0x63_0}, to_apply=add
}
ENTRY e {
  a = f64[2,64] parameter(0)
  i = f64[] parameter(1)
  ROOT f = f64[2,64] fusion(a, i), kind=kLoop, calls=fused
})",
                   "scan"});
  // 3-D window: strides, window dilation and padding on every side, windows that see nothing
  // but padding.
  cases.push_back({"reduce_window_3d", std::string("HloModule m\n") + kMax + R"(
ENTRY e {
  x = f32[3,8,8] parameter(0)
  init = f32[] constant(-1e30)
  ROOT r = f32[3,5,4] reduce-window(x, init), window={size=2x3x3 stride=1x2x2 pad=1_0x2_2x1_2 rhs_dilate=1x1x2}, to_apply=max
})",
                   "loop"});
  // Variadic: (max, argmax) over windows of 3.
  cases.push_back({"reduce_window_variadic_argmax", R"(HloModule m
argmax {
  av = f32[] parameter(0)
  ai = s32[] parameter(1)
  bv = f32[] parameter(2)
  bi = s32[] parameter(3)
  gt = pred[] compare(av, bv), direction=GE
  v = f32[] select(gt, av, bv)
  i = s32[] select(gt, ai, bi)
  ROOT t = (f32[], s32[]) tuple(v, i)
}
ENTRY e {
  x = f32[6,10] parameter(0)
  ix = s32[6,10] parameter(1)
  iv = f32[] constant(-inf)
  ii = s32[] constant(-1)
  ROOT r = (f32[6,10], s32[6,10]) reduce-window(x, ix, iv, ii), window={size=1x3 pad=0_0x1_1}, to_apply=argmax
})",
                   "loop"});
  // Producers and consumers fused around a reduce-window.
  cases.push_back({"reduce_window_fused", std::string("HloModule m\n") + kAdd + R"(
fused {
  p0 = f32[4,16] parameter(0)
  e = f32[4,16] exponential(p0)
  z = f32[] constant(0)
  r = f32[4,8] reduce-window(e, z), window={size=1x2 stride=1x2}, to_apply=add
  h = f32[] constant(0.5)
  hb = f32[4,8] broadcast(h), dimensions={}
  ROOT m = f32[4,8] multiply(r, hb)
}
ENTRY e {
  a = f32[4,16] parameter(0)
  ROOT f = f32[4,8] fusion(a), kind=kLoop, calls=fused
})",
                   "loop"});
  // select-and-scatter: the max-pool gradient (non-overlapping 2x2), overlapping windows with
  // padding, and bf16 with a strict select (the later of equal elements wins).
  const char* ge = "ge { a = f32[] parameter(0)  b = f32[] parameter(1)  ROOT c = pred[] compare(a, b), direction=GE }\n";
  cases.push_back({"select_and_scatter_maxpool_grad", std::string("HloModule m\n") + ge + kAdd + R"(
ENTRY e {
  x = f32[2,8,8,3] parameter(0)
  g = f32[2,4,4,3] parameter(1)
  z = f32[] constant(0)
  ROOT s = f32[2,8,8,3] select-and-scatter(x, g, z), window={size=1x2x2x1 stride=1x2x2x1}, select=ge, scatter=add
})",
                   "loop"});
  cases.push_back({"select_and_scatter_overlap_pad", std::string("HloModule m\n") + ge + kAdd + R"(
ENTRY e {
  x = f32[1,9,9,2] parameter(0)
  g = f32[1,5,5,2] parameter(1)
  z = f32[] constant(0)
  ROOT s = f32[1,9,9,2] select-and-scatter(x, g, z), window={size=1x3x3x1 stride=1x2x2x1 pad=0_0x1_1x1_1x0_0}, select=ge, scatter=add
})",
                   "loop"});
  cases.push_back({"select_and_scatter_bf16_gt", R"(HloModule m
gt { a = bf16[] parameter(0)  b = bf16[] parameter(1)  ROOT c = pred[] compare(a, b), direction=GT }
add { a = bf16[] parameter(0)  b = bf16[] parameter(1)  ROOT s = bf16[] add(a, b) }
ENTRY e {
  x = bf16[10,11] parameter(0)
  g = bf16[10,5] parameter(1)
  z = bf16[] constant(1)
  ROOT s = bf16[10,11] select-and-scatter(x, g, z), window={size=3x3 stride=1x2 pad=1_1x0_0}, select=gt, scatter=add
})",
                   "loop"});
  // cholesky: positive definite constants (lower and upper, real and complex), and random
  // matrices (not positive definite: all NaN, as the evaluator returns them).
  cases.push_back({"cholesky_f32_lower", R"(HloModule m
ENTRY e {
  a = f32[2,4,4] constant({{{5, 1, 2, 0}, {1, 6, 1, 2}, {2, 1, 7, 1}, {0, 2, 1, 8}}, {{4, 2, 0, 1}, {2, 5, 1, 0}, {0, 1, 3, 1}, {1, 0, 1, 9}}})
  ROOT c = f32[2,4,4] cholesky(a), lower=true
})",
                   "cholesky"});
  cases.push_back({"cholesky_c64_upper", R"(HloModule m
ENTRY e {
  a = c64[3,3] constant({{(6, 0), (1, 2), (0, -1)}, {(1, -2), (5, 0), (2, 1)}, {(0, 1), (2, -1), (7, 0)}})
  ROOT c = c64[3,3] cholesky(a), lower=false
})",
                   "cholesky"});
  cases.push_back({"cholesky_f64_random", R"(HloModule m
ENTRY e {
  a = f64[3,5,5] parameter(0)
  ROOT c = f64[3,5,5] cholesky(a), lower=true
})",
                   "cholesky"});
  // triangular-solve: both sides, both triangles, every transpose, unit diagonal, all types.
  auto trsm = [](const std::string& name, const std::string& t, const std::string& a,
                 const std::string& b, const std::string& opts) {
    return CatalogueCase{name, R"(HloModule m
ENTRY e {
  a = )" + t + a + R"( parameter(0)
  b = )" + t + b + R"( parameter(1)
  ROOT x = )" + t + b + R"( triangular-solve(a, b), )" + opts + R"(
})",
                         "triangular_solve"};
  };
  cases.push_back(trsm("trsm_f32_left_lower", "f32", "[2,5,5]", "[2,5,3]",
                       "left_side=true, lower=true, transpose_a=NO_TRANSPOSE"));
  cases.push_back(trsm("trsm_f64_right_upper_transpose_unit", "f64", "[4,4]", "[3,4]",
                       "lower=false, unit_diagonal=true, transpose_a=TRANSPOSE"));
  cases.push_back(trsm("trsm_c64_left_upper_adjoint", "c64", "[3,3]", "[3,2]",
                       "left_side=true, lower=false, transpose_a=ADJOINT"));
  cases.push_back(trsm("trsm_c128_right_lower_adjoint", "c128", "[2,4,4]", "[2,3,4]",
                       "lower=true, transpose_a=ADJOINT"));
  cases.push_back(trsm("trsm_f32_right_lower", "f32", "[6,6]", "[5,6]", "lower=true, transpose_a=NO_TRANSPOSE"));
  return cases;
}

}  // namespace kiln::codegen::testing
