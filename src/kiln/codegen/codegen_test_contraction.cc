// Catalogue cases (codegen_test_util.h): sorts with multi-key comparators (emit_sort.cc), and
// dots and convolutions the vendor libraries do not take,
// computed by the loop emitter (elemental_contraction.cc): integer types of every width (the
// sums wrap), pred, mixed operand types, complex, batch dimensions anywhere, several
// contracting dimensions, grouped / dilated / padded / strided / reversed convolutions in any
// dim_labels, and fusions with elementwise consumers.
#include <algorithm>
#include <string>
#include <vector>

#include "kiln/codegen/codegen_test_util.h"

namespace kiln::codegen::testing {

namespace {

CatalogueCase Unfused(const std::string& name, const std::string& params, const std::string& root) {
  return CatalogueCase{name, "HloModule m\nENTRY e {\n" + params + "  ROOT r = " + root + "\n}\n", "loop", true};
}

}  // namespace

std::vector<CatalogueCase> ContractionCases() {
  std::vector<CatalogueCase> c;
  c.push_back(Unfused("dot_s32", "  a = s32[17,13] parameter(0)\n  b = s32[13,9] parameter(1)\n",
                      "s32[17,9] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}"));
  c.push_back(Unfused("dot_u8_batched", "  a = u8[3,5,7] parameter(0)\n  b = u8[3,7,4] parameter(1)\n",
                      "u8[3,5,4] dot(a, b), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, "
                      "rhs_contracting_dims={1}"));
  c.push_back(Unfused("dot_u8_to_u32", "  a = u8[6,33] parameter(0)\n  b = u8[33,10] parameter(1)\n",
                      "u32[6,10] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}"));
  // Batch dimension in the middle, contracting the lhs minor and the rhs major dimension.
  c.push_back(Unfused("dot_s16_batch_middle", "  a = s16[6,4,5] parameter(0)\n  b = s16[5,4,3] parameter(1)\n",
                      "s16[4,6,3] dot(a, b), lhs_batch_dims={1}, lhs_contracting_dims={2}, rhs_batch_dims={1}, "
                      "rhs_contracting_dims={0}"));
  c.push_back(Unfused("dot_s64", "  a = s64[4,9] parameter(0)\n  b = s64[9,5] parameter(1)\n",
                      "s64[4,5] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}"));
  c.push_back(Unfused("dot_pred", "  a = pred[8,16] parameter(0)\n  b = pred[16,6] parameter(1)\n",
                      "pred[8,6] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}"));
  c.push_back(Unfused("dot_s8_s32_mixed", "  a = s8[5,7] parameter(0)\n  b = s32[7,3] parameter(1)\n",
                      "s32[5,3] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}"));
  c.push_back(Unfused("dot_s4_to_s8", "  a = s4[4,12] parameter(0)\n  b = s4[12,3] parameter(1)\n",
                      "s8[4,3] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}"));
  c.push_back(Unfused("dot_two_contracting", "  a = s32[4,3,5] parameter(0)\n  b = s32[3,5,6] parameter(1)\n",
                      "s32[4,6] dot(a, b), lhs_contracting_dims={1,2}, rhs_contracting_dims={0,1}"));
  c.push_back(Unfused("dot_vector_s32", "  a = s32[40] parameter(0)\n  b = s32[40] parameter(1)\n",
                      "s32[] dot(a, b), lhs_contracting_dims={0}, rhs_contracting_dims={0}"));
  c.push_back(Unfused("dot_outer_u16", "  a = u16[7] parameter(0)\n  b = u16[9] parameter(1)\n",
                      "u16[7,9] dot(a, b), lhs_contracting_dims={}, rhs_contracting_dims={}"));
  // Mixed integer and float operands into a float result (double accumulation, one rounding).
  CatalogueCase mixed = Unfused("dot_u8_f32_mixed", "  a = u8[6,20] parameter(0)\n  b = f32[20,5] parameter(1)\n",
                                "f32[6,5] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}");
  mixed.exact = false;
  c.push_back(mixed);
  CatalogueCase cdot = Unfused("dot_c64", "  a = c64[3,4] parameter(0)\n  b = c64[4,2] parameter(1)\n",
                               "c64[3,2] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}");
  cdot.exact = false;
  c.push_back(cdot);
  // A dot with an elementwise consumer in one loop fusion (wide rows: vector lanes).
  c.push_back({"dot_s32_fused", R"(HloModule m
fused {
  p0 = s32[16,24] parameter(0)
  p1 = s32[24,64] parameter(1)
  d = s32[16,64] dot(p0, p1), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  k = s32[] constant(3)
  kb = s32[16,64] broadcast(k), dimensions={}
  m = s32[16,64] multiply(d, kb)
  ROOT x = s32[16,64] xor(m, d)
}
ENTRY e {
  a = s32[16,24] parameter(0)
  b = s32[24,64] parameter(1)
  ROOT f = s32[16,64] fusion(a, b), kind=kLoop, calls=fused
})",
               "loop", true});

  // Convolutions.
  c.push_back(Unfused("conv_s32_nhwc_same", "  a = s32[2,7,7,4] parameter(0)\n  k = s32[3,3,4,6] parameter(1)\n",
                      "s32[2,7,7,6] convolution(a, k), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f"));
  c.push_back(Unfused("conv_s8_to_s32_grouped_dilated_strided",
                      "  a = s8[1,9,9,6] parameter(0)\n  k = s8[3,3,2,6] parameter(1)\n",
                      "s32[1,4,9,6] convolution(a, k), window={size=3x3 stride=2x1 pad=2_1x0_2 rhs_dilate=2x1}, "
                      "dim_labels=b01f_01io->b01f, feature_group_count=3"));
  c.push_back(Unfused("conv_u8_lhs_dilated_reversed", "  a = u8[2,3,5,5] parameter(0)\n  k = u8[4,3,3,2] parameter(1)\n",
                      "u8[2,4,11,10] convolution(a, k), window={size=3x2 pad=2_2x1_1 lhs_dilate=2x2 rhs_reversal=1x1}, "
                      "dim_labels=bf01_oi01->bf01"));
  c.push_back(Unfused("conv_s32_batch_groups", "  a = s32[4,5,5,3] parameter(0)\n  k = s32[2,2,3,4] parameter(1)\n",
                      "s32[2,4,4,4] convolution(a, k), window={size=2x2}, dim_labels=b01f_01io->b01f, batch_group_count=2"));
  c.push_back(Unfused("conv_s16_1d_odd_labels", "  a = s16[5,3,11] parameter(0)\n  k = s16[4,5,3] parameter(1)\n",
                      "s16[3,3,6] convolution(a, k), window={size=4 stride=2 pad=1_2}, dim_labels=fb0_0io->bf0"));
  c.push_back(Unfused("conv_pred", "  a = pred[1,6,2] parameter(0)\n  k = pred[3,2,2] parameter(1)\n",
                      "pred[1,6,2] convolution(a, k), window={size=3 pad=1_1}, dim_labels=b0f_0io->b0f"));
  c.push_back(Unfused("conv_s64_depthwise", "  a = s64[1,6,6,4] parameter(0)\n  k = s64[2,2,1,4] parameter(1)\n",
                      "s64[1,5,5,4] convolution(a, k), window={size=2x2}, dim_labels=b01f_01io->b01f, "
                      "feature_group_count=4"));
  CatalogueCase cconv = Unfused("conv_c64", "  a = c64[1,6,6,2] parameter(0)\n  k = c64[3,3,2,3] parameter(1)\n",
                                "c64[1,6,6,3] convolution(a, k), window={size=3x3 pad=1_1x1_1}, "
                                "dim_labels=b01f_01io->b01f");
  cconv.exact = false;
  c.push_back(cconv);
  CatalogueCase fconv = Unfused("conv_s8_to_f32", "  a = s8[1,8,3] parameter(0)\n  k = s8[3,3,2] parameter(1)\n",
                                "f32[1,4,2] convolution(a, k), window={size=3 stride=2 pad=1_1 rhs_dilate=1}, "
                                "dim_labels=b0f_0io->b0f");
  fconv.exact = false;
  c.push_back(fconv);
  c.push_back({"conv_s32_fused_relu", R"(HloModule m
fused {
  p0 = s32[1,8,8,3] parameter(0)
  p1 = s32[3,3,3,5] parameter(1)
  cv = s32[1,8,8,5] convolution(p0, p1), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f
  z = s32[] constant(0)
  zb = s32[1,8,8,5] broadcast(z), dimensions={}
  ROOT r = s32[1,8,8,5] maximum(cv, zb)
}
ENTRY e {
  a = s32[1,8,8,3] parameter(0)
  b = s32[3,3,3,5] parameter(1)
  ROOT f = s32[1,8,8,5] fusion(a, b), kind=kLoop, calls=fused
})",
               "loop", true});
  return c;
}

}  // namespace kiln::codegen::testing

namespace kiln::codegen::testing {

namespace {

// A lexicographic comparator over `keys` (operand indices; each "t:mask" masks integer keys to
// create ties, floats compare with TOTALORDER), ignoring the other operands.
std::string LexComparator(const std::vector<std::string>& types, const std::vector<int>& keys,
                          const std::vector<int>& masks, bool descending_first = false) {
  std::string s = "cmp {\n";
  for (size_t i = 0; i < types.size(); ++i) {
    s += "  p" + std::to_string(2 * i) + " = " + types[i] + "[] parameter(" + std::to_string(2 * i) + ")\n";
    s += "  p" + std::to_string(2 * i + 1) + " = " + types[i] + "[] parameter(" + std::to_string(2 * i + 1) + ")\n";
  }
  std::vector<std::string> lt, eq;
  for (size_t k = 0; k < keys.size(); ++k) {
    const int o = keys[k];
    const std::string& t = types[o];
    std::string a = "p" + std::to_string(2 * o), b = "p" + std::to_string(2 * o + 1);
    const std::string ks = std::to_string(k);
    std::string type = "";
    if (masks[k] > 0) {
      s += "  m" + ks + " = " + t + "[] constant(" + std::to_string(masks[k]) + ")\n";
      s += "  a" + ks + " = " + t + "[] and(" + a + ", m" + ks + ")\n";
      s += "  b" + ks + " = " + t + "[] and(" + b + ", m" + ks + ")\n";
      a = "a" + ks;
      b = "b" + ks;
    }
    if (t[0] == 'f' || t == "bf16") type = ", type=TOTALORDER";
    const std::string dir = descending_first && k == 0 ? "GT" : "LT";
    s += "  lt" + ks + " = pred[] compare(" + a + ", " + b + "), direction=" + dir + type + "\n";
    s += "  eq" + ks + " = pred[] compare(" + a + ", " + b + "), direction=EQ" + type + "\n";
    lt.push_back("lt" + ks);
    eq.push_back("eq" + ks);
  }
  // lt0 | (eq0 & (lt1 | (eq1 & lt2)))
  std::string acc = lt.back();
  for (int k = static_cast<int>(keys.size()) - 2; k >= 0; --k) {
    const std::string ks = std::to_string(k);
    s += "  and" + ks + " = pred[] and(" + eq[k] + ", " + acc + ")\n";
    s += "  or" + ks + " = pred[] or(" + lt[k] + ", and" + ks + ")\n";
    acc = "or" + ks;
  }
  s += "  ROOT r = pred[] and(" + acc + ", " + acc + ")\n}\n";
  return s;
}

CatalogueCase SortCase(const std::string& name, const std::vector<std::string>& types, const std::string& dims,
                       const std::vector<int>& keys, const std::vector<int>& masks, bool stable = true,
                       bool descending_first = false) {
  std::string h = "HloModule m\n" + LexComparator(types, keys, masks, descending_first) + "ENTRY e {\n";
  std::string ops, shapes;
  for (size_t i = 0; i < types.size(); ++i) {
    h += "  x" + std::to_string(i) + " = " + types[i] + dims + " parameter(" + std::to_string(i) + ")\n";
    ops += (i ? ", x" : "x") + std::to_string(i);
    shapes += (i ? ", " : "") + types[i] + dims;
  }
  const std::string shape = types.size() == 1 ? shapes : "(" + shapes + ")";
  const int minor = static_cast<int>(std::count(dims.begin(), dims.end(), ','));
  h += "  ROOT s = " + shape + " sort(" + ops + "), dimensions={" + std::to_string(minor) + "}" +
       (stable ? ", is_stable=true" : "") + ", to_apply=cmp\n}\n";
  return CatalogueCase{name, h, "sort", true};
}

}  // namespace

std::vector<CatalogueCase> SortCases() {
  std::vector<CatalogueCase> c;
  // jnp.lexsort of two keys (few distinct values: ties everywhere) with a payload.
  c.push_back(SortCase("sort_lexsort_2keys", {"s32", "s32", "f32"}, "[4,37]", {0, 1}, {3, 7}));
  // Three keys of different types, the last a float in total order; unstable flag (the result
  // is the stable one anyway).
  c.push_back(SortCase("sort_lexsort_3keys", {"u8", "s16", "f32", "s32"}, "[3,50]", {0, 1, 2}, {1, 3, 0}, false));
  // A descending first key, then an ascending second one.
  c.push_back(SortCase("sort_desc_then_asc", {"s32", "s64"}, "[2,65]", {0, 1}, {5, 0}, true, true));
  // Rows of one element, odd lengths, and rows longer than the shared-memory limit (the
  // scratch-buffer path).
  c.push_back(SortCase("sort_rows_of_1", {"s32", "f32"}, "[5,1]", {0, 1}, {1, 0}));
  c.push_back(SortCase("sort_odd_rows", {"f32", "s32"}, "[3,7]", {0, 1}, {0, 0}));
  c.push_back(SortCase("sort_long_rows_scratch", {"s32", "s32"}, "[2,4500]", {0, 1}, {15, 0}));
  c.push_back(SortCase("sort_very_long_row", {"s32", "f32"}, "[1,20000]", {0, 1}, {255, 0}));
  c.push_back(SortCase("sort_1d", {"s16", "u32"}, "[300]", {0, 1}, {7, 0}));
  // Complex numbers ordered by real then imaginary part (total order), with NaNs, signed
  // zeros and infinities in the keys.
  c.push_back({"sort_complex", R"(HloModule m
cmp {
  a = c64[] parameter(0)
  b = c64[] parameter(1)
  i = s32[] parameter(2)
  j = s32[] parameter(3)
  ra = f32[] real(a)
  rb = f32[] real(b)
  ia = f32[] imag(a)
  ib = f32[] imag(b)
  lt = pred[] compare(ra, rb), direction=LT, type=TOTALORDER
  eq = pred[] compare(ra, rb), direction=EQ, type=TOTALORDER
  lti = pred[] compare(ia, ib), direction=LT, type=TOTALORDER
  e = pred[] and(eq, lti)
  ROOT r = pred[] or(lt, e)
}
ENTRY e {
  x = c64[2,9] constant({{(1, 2), (nan, 0), (-0, 1), (0, 1), (1, -inf), (inf, 0), (-inf, 3), (1, 2), (0.5, nan)}, {(3, 3), (2, 2), (1, 1), (0, 0), (-1, -1), (-2, -2), (-3, -3), (2, 2), (3, -3)}})
  y = s32[2,9] parameter(0)
  ROOT s = (c64[2,9], s32[2,9]) sort(x, y), dimensions={1}, is_stable=true, to_apply=cmp
})",
               "sort", true});
  // NaNs, signed zeros and infinities in a float key with TOTALORDER, an integer tie-breaker.
  c.push_back({"sort_nan_totalorder", R"(HloModule m
cmp {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  i = s32[] parameter(2)
  j = s32[] parameter(3)
  lt = pred[] compare(a, b), direction=LT, type=TOTALORDER
  eq = pred[] compare(a, b), direction=EQ, type=TOTALORDER
  ltj = pred[] compare(i, j), direction=GT
  e = pred[] and(eq, ltj)
  ROOT r = pred[] or(lt, e)
}
ENTRY e {
  x = f32[1,12] constant({{nan, 1, -0, 0, -inf, inf, -nan, 1, -1, 0, nan, -0}})
  y = s32[1,12] parameter(0)
  ROOT s = (f32[1,12], s32[1,12]) sort(x, y), dimensions={1}, to_apply=cmp
})",
               "sort", true});
  return c;
}

}  // namespace kiln::codegen::testing
