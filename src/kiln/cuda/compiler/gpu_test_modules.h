// HLO modules shared by the GPU compiler test (what they compile to: kernels, no host
// fallbacks) and the GPU executable test (what they compute on the device, against the
// evaluator).
#pragma once

namespace kiln::cuda::test_modules {

// Dots and convolutions the vendor libraries do not take -- integer (s32, u8 -> u32, pred,
// s16 with a middle batch dimension), grouped / dilated / reversed / batch-grouped integer
// convolutions, a c64 convolution: generated loop kernels (elemental_contraction.cc).
inline constexpr const char* kContractionsModule = R"(HloModule contractions
ENTRY e {
  a = s32[33,20] parameter(0)
  b = s32[20,17] parameter(1)
  d0 = s32[33,17] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ua = u8[4,16,40] parameter(2)
  ub = u8[4,40,8] parameter(3)
  d1 = u32[4,16,8] dot(ua, ub), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={1}
  pa = pred[12,30] parameter(4)
  pb = pred[30,5] parameter(5)
  d2 = pred[12,5] dot(pa, pb), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  sa = s16[6,9,5] parameter(6)
  sb = s16[5,9,7] parameter(7)
  d3 = s16[9,6,7] dot(sa, sb), lhs_batch_dims={1}, lhs_contracting_dims={2}, rhs_batch_dims={1}, rhs_contracting_dims={0}
  x = s8[2,12,12,6] parameter(8)
  k = s8[3,3,2,9] parameter(9)
  c0 = s32[2,6,12,9] convolution(x, k), window={size=3x3 stride=2x1 pad=1_1x2_2 rhs_dilate=1x2}, dim_labels=b01f_01io->b01f, feature_group_count=3
  cx = c64[1,7,7,2] parameter(10)
  ck = c64[3,3,2,3] parameter(11)
  c1 = c64[1,7,7,3] convolution(cx, ck), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f
  ix = s32[4,3,9,9] parameter(12)
  ik = s32[4,3,2,2] parameter(13)
  c2 = s32[2,4,10,10] convolution(ix, ik), window={size=2x2 pad=1_1x1_1 lhs_dilate=1x1 rhs_reversal=1x0}, dim_labels=bf01_oi01->bf01, batch_group_count=2
  ROOT t = (s32[33,17], u32[4,16,8], pred[12,5], s16[9,6,7], s32[2,6,12,9], c64[1,7,7,3], s32[2,4,10,10]) tuple(d0, d1, d2, d3, c0, c1, c2)
})";

// Sorts whose comparator is not a single-key order -- lexicographic over two and three keys
// (masked integer keys: many ties), complex numbers, NaNs in total order with a tie-breaker,
// rows of 1 and of 5000 elements, a non-minor dimension: generated comparison sorts
// (codegen/emit_sort.cc).
inline constexpr const char* kMultiKeySortsModule = R"(HloModule sorts
lex2 {
  a = s32[] parameter(0)
  b = s32[] parameter(1)
  c = f32[] parameter(2)
  d = f32[] parameter(3)
  p = s32[] parameter(4)
  q = s32[] parameter(5)
  m = s32[] constant(7)
  am = s32[] and(a, m)
  bm = s32[] and(b, m)
  lt0 = pred[] compare(am, bm), direction=LT
  eq0 = pred[] compare(am, bm), direction=EQ
  lt1 = pred[] compare(c, d), direction=LT, type=TOTALORDER
  e = pred[] and(eq0, lt1)
  ROOT r = pred[] or(lt0, e)
}
lex3 {
  a = u8[] parameter(0)
  b = u8[] parameter(1)
  c = s16[] parameter(2)
  d = s16[] parameter(3)
  x = s32[] parameter(4)
  y = s32[] parameter(5)
  m1 = u8[] constant(1)
  a1 = u8[] and(a, m1)
  b1 = u8[] and(b, m1)
  m2 = s16[] constant(3)
  c2 = s16[] and(c, m2)
  d2 = s16[] and(d, m2)
  lt0 = pred[] compare(a1, b1), direction=GT
  eq0 = pred[] compare(a1, b1), direction=EQ
  lt1 = pred[] compare(c2, d2), direction=LT
  eq1 = pred[] compare(c2, d2), direction=EQ
  lt2 = pred[] compare(x, y), direction=LT
  e1 = pred[] and(eq1, lt2)
  o1 = pred[] or(lt1, e1)
  e0 = pred[] and(eq0, o1)
  ROOT r = pred[] or(lt0, e0)
}
cplx {
  a = c64[] parameter(0)
  b = c64[] parameter(1)
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
nan2 {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  i = s32[] parameter(2)
  j = s32[] parameter(3)
  lt = pred[] compare(a, b), direction=LT, type=TOTALORDER
  eq = pred[] compare(a, b), direction=EQ, type=TOTALORDER
  gt = pred[] compare(i, j), direction=GT
  e = pred[] and(eq, gt)
  ROOT r = pred[] or(lt, e)
}
ENTRY e {
  k0 = s32[6,37] parameter(0)
  k1 = f32[6,37] parameter(1)
  i0 = s32[6,37] iota(), iota_dimension=1
  s0 = (s32[6,37], f32[6,37], s32[6,37]) sort(k0, k1, i0), dimensions={1}, is_stable=true, to_apply=lex2
  u = u8[3,5000] parameter(2)
  v = s16[3,5000] parameter(3)
  i1 = s32[3,5000] iota(), iota_dimension=1
  s1 = (u8[3,5000], s16[3,5000], s32[3,5000]) sort(u, v, i1), dimensions={1}, to_apply=lex3
  w = u8[9,1] parameter(4)
  z = s16[9,1] parameter(5)
  i2 = s32[9,1] iota(), iota_dimension=0
  s2 = (u8[9,1], s16[9,1], s32[9,1]) sort(w, z, i2), dimensions={1}, is_stable=true, to_apply=lex3
  c = c64[4,129] parameter(6)
  s3 = c64[4,129] sort(c), dimensions={1}, to_apply=cplx
  n = f32[1,12] constant({{nan, 1, -0, 0, -inf, inf, -nan, 1, -1, 0, nan, -0}})
  i3 = s32[1,12] iota(), iota_dimension=1
  s4 = (f32[1,12], s32[1,12]) sort(n, i3), dimensions={1}, to_apply=nan2
  t0 = s32[40,7] parameter(7)
  t1 = f32[40,7] parameter(8)
  i4 = s32[40,7] iota(), iota_dimension=0
  s5 = (s32[40,7], f32[40,7], s32[40,7]) sort(t0, t1, i4), dimensions={0}, is_stable=true, to_apply=lex2
  ROOT t = ((s32[6,37], f32[6,37], s32[6,37]), (u8[3,5000], s16[3,5000], s32[3,5000]), (u8[9,1], s16[9,1], s32[9,1]), c64[4,129], (f32[1,12], s32[1,12]), (s32[40,7], f32[40,7], s32[40,7])) tuple(s0, s1, s2, s3, s4, s5)
})";

}  // namespace kiln::cuda::test_modules
