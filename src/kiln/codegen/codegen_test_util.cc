#include "kiln/codegen/codegen_test_util.h"

#include <map>
#include <set>
#include <sstream>

#include "kiln/codegen/emitters.h"
#include "kiln/hlo/clone.h"
#include "kiln/hlo/parser.h"
#include "kiln/hlo/verifier.h"
#include "kiln/passes/call_graph.h"
#include "kiln/passes/cpu_fusion_policy.h"
#include "kiln/passes/fusion_passes.h"

namespace kiln::codegen::testing {

namespace {

// A loop fusion over parameters `params` (shapes), computing `body` (lines "name = shape op(..)"
// that may use p0, p1, ...), with the listed outputs as a tuple (or the one output as the root).
std::string LoopFusion(const std::vector<std::string>& params, const std::vector<std::string>& body,
                       const std::vector<std::string>& outputs, const std::string& kind = "kLoop") {
  std::map<std::string, std::string> shape_of;
  std::ostringstream fused, entry;
  fused << "HloModule m\n\nfused {\n";
  for (size_t i = 0; i < params.size(); ++i)
    fused << "  p" << i << " = " << params[i] << " parameter(" << i << ")\n";
  for (const std::string& line : body) {
    size_t eq = line.find(" = ");
    size_t sp = line.find(' ', eq + 3);
    shape_of[line.substr(0, eq)] = line.substr(eq + 3, sp - eq - 3);
  }
  std::string root_shape;
  for (size_t i = 0; i < body.size(); ++i) {
    bool is_root = outputs.size() == 1 && body[i].substr(0, body[i].find(" = ")) == outputs[0];
    fused << "  " << (is_root ? "ROOT " : "") << body[i] << "\n";
  }
  if (outputs.size() == 1) {
    root_shape = shape_of[outputs[0]];
  } else {
    root_shape = "(";
    std::string names;
    for (size_t i = 0; i < outputs.size(); ++i) {
      root_shape += (i ? ", " : "") + shape_of[outputs[i]];
      names += (i ? ", " : "") + outputs[i];
    }
    root_shape += ")";
    fused << "  ROOT out = " << root_shape << " tuple(" << names << ")\n";
  }
  fused << "}\n\nENTRY e {\n";
  std::string args;
  for (size_t i = 0; i < params.size(); ++i) {
    fused << "  a" << i << " = " << params[i] << " parameter(" << i << ")\n";
    args += (i ? ", a" : "a") + std::to_string(i);
  }
  fused << "  ROOT f = " << root_shape << " fusion(" << args << "), kind=" << kind
        << ", calls=fused\n}\n";
  return fused.str();
}

// One fusion applying many elementwise ops of type `t` to [37,5] operands (odd sizes: vector
// tails), each op an output.
CatalogueCase ElementwiseCase(const std::string& t) {
  const bool is_float = t[0] == 'f' || t == "bf16";
  const bool is_complex = t[0] == 'c';
  const bool is_pred = t == "pred";
  const bool is_int = !is_float && !is_complex && !is_pred;
  const bool is_signed = t[0] == 's';
  const bool sub_byte = t == "s4" || t == "u4" || t == "s2" || t == "u2";
  const std::string s = t + "[37,5]";
  const std::string pr = "pred[37,5]";
  std::vector<std::string> body, outs;
  auto add = [&](const std::string& name, const std::string& shape, const std::string& expr) {
    body.push_back(name + " = " + shape + " " + expr);
    outs.push_back(name);
  };
  std::vector<std::string> binary, unary;
  if (is_pred) {
    binary = {"and", "or", "xor"};
    unary = {"not"};
  } else if (is_complex) {
    binary = {"add", "subtract", "multiply", "divide"};
    unary = {"negate", "exponential", "log", "sqrt", "tanh", "tan", "sine", "cosine", "sign", "rsqrt",
             "log-plus-one", "exponential-minus-one"};
    binary.push_back("power");
    binary.push_back("atan2");
  } else if (is_int) {
    binary = {"add", "subtract", "multiply", "divide", "remainder", "maximum", "minimum", "and",
              "or", "xor", "shift-left", "shift-right-logical", "shift-right-arithmetic"};
    if (!sub_byte) binary.push_back("power");
    unary = {"not", "popcnt", "count-leading-zeros"};
    if (is_signed) {
      unary.push_back("abs");
      unary.push_back("negate");
      unary.push_back("sign");
    }
  } else {
    binary = {"add", "subtract", "multiply", "divide", "maximum", "minimum", "power", "remainder",
              "atan2"};
    unary = {"abs", "negate", "sign", "exponential", "exponential-minus-one", "log",
             "log-plus-one", "sqrt", "rsqrt", "cbrt", "tanh", "logistic", "sine", "cosine", "tan", "floor", "ceil", "round-nearest-afz",
             "round-nearest-even", "erf", "acos", "asin", "atan", "acosh", "asinh", "atanh",
             "cosh", "sinh"};
  }
  for (const std::string& op : binary) add("b_" + op, s, op + "(p0, p1)");
  for (const std::string& op : unary) add("u_" + op, s, op + "(p0)");
  if (!is_complex) {
    add("sel", s, "select(p2, p0, p1)");
    add("clamp", s, "clamp(p1, p0, p1)");
    for (const char* dir : {"EQ", "NE", "LT", "LE", "GT", "GE"}) {
      add(std::string("cmp_") + dir, pr, std::string("compare(p0, p1), direction=") + dir);
      if (is_float)
        add(std::string("tot_") + dir, pr,
            std::string("compare(p0, p1), direction=") + dir + ", type=TOTALORDER");
    }
  } else {
    add("sel", s, "select(p2, p0, p1)");
    add("cmp_EQ", pr, "compare(p0, p1), direction=EQ");
    add("cmp_NE", pr, "compare(p0, p1), direction=NE");
    const std::string ct = t == "c64" ? "f32" : "f64";
    add("re", ct + "[37,5]", "real(p0)");
    add("im", ct + "[37,5]", "imag(p0)");
    add("ab", ct + "[37,5]", "abs(p0)");
    add("cx", s, "complex(re, im)");
  }
  if (is_float) {
    add("isfin", pr, "is-finite(p0)");
    add("rp", s, "reduce-precision(p0), exponent_bits=5, mantissa_bits=2");
  }
  // Conversions to and from a few types.
  for (const char* to : {"f32", "s32", "pred", "bf16", "u8", "f64", "s64", "f8e4m3fn", "f16"})
    if (t != to) add(std::string("cv_") + to, std::string(to) + "[37,5]", "convert(p0)");
  return CatalogueCase{"elementwise_" + t, LoopFusion({s, s, pr}, body, outs), "loop"};
}

// bitcast-convert between same-width types.
CatalogueCase BitcastConvertCase() {
  std::vector<std::string> body = {
      "a = s32[16,8] bitcast-convert(p0)",  "b = u32[16,8] bitcast-convert(p0)",
      "c = f16[16,8] bitcast-convert(p1)",  "d = bf16[16,8] bitcast-convert(p1)",
      "e = s64[16,8] bitcast-convert(p2)",  "f = f64[16,8] bitcast-convert(e)",
      "h = f32[16,8] bitcast-convert(a)", "j = f8e5m2[16,8] bitcast-convert(p3)",
      "k = s8[16,8] bitcast-convert(j)"};
  return {"bitcast_convert",
          LoopFusion({"f32[16,8]", "s16[16,8]", "f64[16,8]", "u8[16,8]"}, body,
                     {"a", "b", "c", "d", "f", "h", "k"}),
          "loop"};
}

// bitcast-convert between types of different widths (adds or drops a minor dimension).
CatalogueCase BitcastConvertWidthCase() {
  std::vector<std::string> body = {"g = u8[16,8,4] bitcast-convert(p0)",
                                   "i = u16[16,8,4] bitcast-convert(p1)",
                                   "n = u16[16,8,4] negate(i)",
                                   "w = s64[16,8] bitcast-convert(n)",
                                   "x = f32[16,8,2] bitcast-convert(w)",
                                   "y = f32[16,8,4] broadcast(p0), dimensions={0,1}",
                                   "z = f32[16,8,4] add(y, y)",
                                   "c = f32[16,8,4] convert(g)",
                                   "s = f32[16,8,4] add(z, c)"};
  return {"bitcast_convert_width",
          LoopFusion({"f32[16,8]", "f64[16,8]"}, body, {"s"}), "loop"};
}

// Conversions among the narrow float types and to/from integers.
CatalogueCase NarrowFloatCase() {
  std::vector<std::string> body, outs;
  const char* types[] = {"f8e5m2", "f8e4m3fn", "f8e4m3b11fnuz", "f8e5m2fnuz", "f8e4m3fnuz",
                         "f8e4m3", "f8e3m4", "f8e8m0fnu", "f4e2m1fn", "f16", "bf16"};
  for (const char* t : types) {
    std::string n = t;
    body.push_back("to_" + n + " = " + n + "[64] convert(p0)");
    body.push_back("back_" + n + " = f32[64] convert(to_" + n + ")");
    body.push_back("mul_" + n + " = " + n + "[64] multiply(to_" + n + ", to_" + n + ")");
    body.push_back("s_" + n + " = s32[64] convert(mul_" + n + ")");
    outs.push_back("back_" + n);
    outs.push_back("s_" + n);
    outs.push_back("mul_" + n);
  }
  return {"narrow_floats", LoopFusion({"f32[64]"}, body, outs), "loop"};
}

std::vector<CatalogueCase> MakeCatalogue() {
  std::vector<CatalogueCase> cases;
  for (const char* t : {"pred", "s8", "s16", "s32", "s64", "u8", "u16", "u32", "u64", "s4", "u4",
                        "f16", "bf16", "f32", "f64", "f8e4m3fn", "f8e5m2", "c64", "c128"})
    cases.push_back(ElementwiseCase(t));
  cases.push_back(BitcastConvertCase());
  cases.push_back(BitcastConvertWidthCase());
  cases.push_back(NarrowFloatCase());
  for (CatalogueCase& c : EdgeValueCases()) cases.push_back(std::move(c));
  for (CatalogueCase& c : WindowCases()) cases.push_back(std::move(c));
  for (CatalogueCase& c : ContractionCases()) cases.push_back(std::move(c));
  for (CatalogueCase& c : SortCases()) cases.push_back(std::move(c));

  // Shape ops inside one loop fusion.
  cases.push_back(
      {"shape_ops",
       LoopFusion({"f32[8,12]", "f32[12]", "s32[]", "f32[4,12]"},
                  {"bc = f32[8,12] broadcast(p1), dimensions={1}",
                   "add = f32[8,12] add(p0, bc)",
                   "rs = f32[4,24] reshape(add)",
                   "tr = f32[24,4] transpose(rs), dimensions={1,0}",
                   "sl = f32[12,4] slice(tr), slice={[1:24:2], [0:4]}",
                   "rv = f32[12,4] reverse(sl), dimensions={0,1}",
                   "pv = f32[] constant(-1)",
                   "pd = f32[16,10] pad(rv, pv), padding=2_2x1_2_1",
                   "ds = f32[4,7] dynamic-slice(pd, p2, p2), dynamic_slice_sizes={4,7}",
                   "io = s32[4,7] iota(), iota_dimension=1",
                   "iof = f32[4,7] convert(io)",
                   "sum = f32[4,7] add(ds, iof)",
                   "t3 = f32[12,4] transpose(p3), dimensions={1,0}",
                   "cat = f32[12,16] concatenate(t3, sl, rv, t3), dimensions={1}",
                   "cs = f32[4,7] slice(cat), slice={[3:7], [2:9]}",
                   "res = f32[4,7] multiply(sum, cs)"},
                  {"res"}),
       "loop"});
  cases.push_back(
      {"dynamic_slice_s64_index",
       LoopFusion({"bf16[64,32]", "s64[]", "s64[]"},
                  {"ds = bf16[8,16] dynamic-slice(p0, p1, p2), dynamic_slice_sizes={8,16}",
                   "cv = f32[8,16] convert(ds)"},
                  {"cv"}),
       "loop"});
  // Constants (array and scalar) and iota of several types.
  cases.push_back({"constants_iota",
                   LoopFusion({"f32[3,4]"},
                              {"c = f32[3,4] constant({{1,2,3,4},{5,6,7,8},{9,10,11,12}})",
                               "k = f32[] constant(0.5)", "kb = f32[3,4] broadcast(k), dimensions={}",
                               "i = f32[3,4] iota(), iota_dimension=0", "a = f32[3,4] add(p0, c)",
                               "b = f32[3,4] multiply(a, kb)", "r = f32[3,4] add(b, i)",
                               "iu = u64[3,4] iota(), iota_dimension=1",
                               "ib = bf16[3,4] iota(), iota_dimension=1"},
                              {"r", "iu", "ib"}),
                   "loop"});
  // Vectorized wide loop (16-byte accesses) with a non-default layout output.
  cases.push_back({"wide_loop",
                   LoopFusion({"f16[256,1024]", "f16[256,1024]"},
                              {"a = f16[256,1024] add(p0, p1)", "e = f16[256,1024] exponential(a)"},
                              {"e"}),
                   "loop"});
  // Row reductions: sum, max-reduce softmax, layernorm-like, argmax (variadic), full.
  cases.push_back({"row_sum", R"(HloModule m
add { a = f32[] parameter(0)  b = f32[] parameter(1)  ROOT s = f32[] add(a, b) }
fused {
  p0 = f32[128,1000] parameter(0)
  z = f32[] constant(0)
  ROOT r = f32[128] reduce(p0, z), dimensions={1}, to_apply=add
}
ENTRY e {
  a = f32[128,1000] parameter(0)
  ROOT f = f32[128] fusion(a), kind=kInput, calls=fused
})",
                   "row_reduction"});
  cases.push_back({"softmax", R"(HloModule m
max { a = f32[] parameter(0)  b = f32[] parameter(1)  ROOT s = f32[] maximum(a, b) }
add { a = f32[] parameter(0)  b = f32[] parameter(1)  ROOT s = f32[] add(a, b) }
fused {
  p0 = bf16[64,384] parameter(0)
  x = f32[64,384] convert(p0)
  ninf = f32[] constant(-inf)
  mx = f32[64] reduce(x, ninf), dimensions={1}, to_apply=max
  mb = f32[64,384] broadcast(mx), dimensions={0}
  d = f32[64,384] subtract(x, mb)
  e = f32[64,384] exponential(d)
  z = f32[] constant(0)
  s = f32[64] reduce(e, z), dimensions={1}, to_apply=add
  sb = f32[64,384] broadcast(s), dimensions={0}
  q = f32[64,384] divide(e, sb)
  ROOT c = bf16[64,384] convert(q)
}
ENTRY e {
  a = bf16[64,384] parameter(0)
  ROOT f = bf16[64,384] fusion(a), kind=kInput, calls=fused
})",
                   "row_reduction"});
  cases.push_back({"layernorm_multi_output", R"(HloModule m
add { a = f32[] parameter(0)  b = f32[] parameter(1)  ROOT s = f32[] add(a, b) }
fused {
  p0 = f32[32,768] parameter(0)
  p1 = f32[768] parameter(1)
  z = f32[] constant(0)
  n = f32[] constant(0.00130208333)
  s = f32[32] reduce(p0, z), dimensions={1}, to_apply=add
  nb = f32[32] broadcast(n), dimensions={}
  mean = f32[32] multiply(s, nb)
  mb = f32[32,768] broadcast(mean), dimensions={0}
  d = f32[32,768] subtract(p0, mb)
  d2 = f32[32,768] multiply(d, d)
  v = f32[32] reduce(d2, z), dimensions={1}, to_apply=add
  var = f32[32] multiply(v, nb)
  eps = f32[] constant(1e-5)
  eb = f32[32] broadcast(eps), dimensions={}
  ve = f32[32] add(var, eb)
  rs = f32[32] rsqrt(ve)
  rb = f32[32,768] broadcast(rs), dimensions={0}
  y = f32[32,768] multiply(d, rb)
  gb = f32[32,768] broadcast(p1), dimensions={1}
  o = f32[32,768] multiply(y, gb)
  ROOT t = (f32[32,768], f32[32], f32[32]) tuple(o, mean, rs)
}
ENTRY e {
  a = f32[32,768] parameter(0)
  b = f32[768] parameter(1)
  ROOT f = (f32[32,768], f32[32], f32[32]) fusion(a, b), kind=kInput, calls=fused
})",
                   "row_reduction"});
  cases.push_back({"argmax_variadic", R"(HloModule m
argmax {
  av = f32[] parameter(0)
  ai = s32[] parameter(1)
  bv = f32[] parameter(2)
  bi = s32[] parameter(3)
  gt = pred[] compare(av, bv), direction=GT
  eq = pred[] compare(av, bv), direction=EQ
  lt = pred[] compare(ai, bi), direction=LT
  tie = pred[] and(eq, lt)
  nan = pred[] compare(av, av), direction=NE
  t1 = pred[] or(gt, tie)
  take = pred[] or(t1, nan)
  v = f32[] select(take, av, bv)
  i = s32[] select(take, ai, bi)
  ROOT r = (f32[], s32[]) tuple(v, i)
}
fused {
  p0 = f32[100,513] parameter(0)
  io = s32[100,513] iota(), iota_dimension=1
  ninf = f32[] constant(-inf)
  zi = s32[] constant(0)
  ROOT r = (f32[100], s32[100]) reduce(p0, io, ninf, zi), dimensions={1}, to_apply=argmax
}
ENTRY e {
  a = f32[100,513] parameter(0)
  ROOT f = (f32[100], s32[100]) fusion(a), kind=kInput, calls=fused
})",
                   "row_reduction"});
  cases.push_back({"full_reduction_f16", R"(HloModule m
add { a = f32[] parameter(0)  b = f32[] parameter(1)  ROOT s = f32[] add(a, b) }
fused {
  p0 = f16[300,777] parameter(0)
  x = f32[300,777] convert(p0)
  z = f32[] constant(0)
  ROOT r = f32[] reduce(x, z), dimensions={0,1}, to_apply=add
}
ENTRY e {
  a = f16[300,777] parameter(0)
  ROOT f = f32[] fusion(a), kind=kInput, calls=fused
})",
                   "row_reduction"});
  cases.push_back({"row_reduce_s64_min", R"(HloModule m
mn { a = s64[] parameter(0)  b = s64[] parameter(1)  ROOT s = s64[] minimum(a, b) }
fused {
  p0 = s64[17,33,5] parameter(0)
  z = s64[] constant(9223372036854775807)
  ROOT r = s64[17] reduce(p0, z), dimensions={1,2}, to_apply=mn
}
ENTRY e {
  a = s64[17,33,5] parameter(0)
  ROOT f = s64[17] fusion(a), kind=kInput, calls=fused
})",
                   "row_reduction"});
  cases.push_back({"row_reduce_pred_or_c64_add", R"(HloModule m
or { a = pred[] parameter(0)  b = pred[] parameter(1)  ROOT s = pred[] or(a, b) }
cadd { a = c64[] parameter(0)  b = c64[] parameter(1)  ROOT s = c64[] add(a, b) }
fused {
  p0 = f32[40,50] parameter(0)
  p1 = c64[40,50] parameter(1)
  z = f32[] constant(0)
  zb = f32[40,50] broadcast(z), dimensions={}
  g = pred[40,50] compare(p0, zb), direction=GT
  f = pred[] constant(false)
  r0 = pred[40] reduce(g, f), dimensions={1}, to_apply=or
  cz = c64[] constant((0, 0))
  r1 = c64[40] reduce(p1, cz), dimensions={1}, to_apply=cadd
  ROOT t = (pred[40], c64[40]) tuple(r0, r1)
}
ENTRY e {
  a = f32[40,50] parameter(0)
  b = c64[40,50] parameter(1)
  ROOT f = (pred[40], c64[40]) fusion(a, b), kind=kInput, calls=fused
})",
                   "row_reduction"});
  // Column reductions.
  cases.push_back({"column_sum", R"(HloModule m
add { a = f32[] parameter(0)  b = f32[] parameter(1)  ROOT s = f32[] add(a, b) }
fused {
  p0 = f32[1000,384] parameter(0)
  m = f32[1000,384] multiply(p0, p0)
  z = f32[] constant(0)
  ROOT r = f32[384] reduce(m, z), dimensions={0}, to_apply=add
}
ENTRY e {
  a = f32[1000,384] parameter(0)
  ROOT f = f32[384] fusion(a), kind=kInput, calls=fused
})",
                   "column_reduction"});
  cases.push_back({"column_max_bf16_3d", R"(HloModule m
mx { a = bf16[] parameter(0)  b = bf16[] parameter(1)  ROOT s = bf16[] maximum(a, b) }
fused {
  p0 = bf16[6,129,70] parameter(0)
  z = bf16[] constant(-inf)
  ROOT r = bf16[6,70] reduce(p0, z), dimensions={1}, to_apply=mx
}
ENTRY e {
  a = bf16[6,129,70] parameter(0)
  ROOT f = bf16[6,70] fusion(a), kind=kInput, calls=fused
})",
                   "column_reduction"});
  cases.push_back({"column_argmin_variadic", R"(HloModule m
argmin {
  av = f32[] parameter(0)
  ai = s32[] parameter(1)
  bv = f32[] parameter(2)
  bi = s32[] parameter(3)
  lt = pred[] compare(av, bv), direction=LT
  eq = pred[] compare(av, bv), direction=EQ
  il = pred[] compare(ai, bi), direction=LT
  tie = pred[] and(eq, il)
  take = pred[] or(lt, tie)
  v = f32[] select(take, av, bv)
  i = s32[] select(take, ai, bi)
  ROOT r = (f32[], s32[]) tuple(v, i)
}
fused {
  p0 = f32[300,20] parameter(0)
  io = s32[300,20] iota(), iota_dimension=0
  inf = f32[] constant(inf)
  zi = s32[] constant(0)
  ROOT r = (f32[20], s32[20]) reduce(p0, io, inf, zi), dimensions={0}, to_apply=argmin
}
ENTRY e {
  a = f32[300,20] parameter(0)
  ROOT f = (f32[20], s32[20]) fusion(a), kind=kInput, calls=fused
})",
                   "column_reduction"});
  // Transposes.
  cases.push_back({"transpose_2d", R"(HloModule m
fused {
  p0 = f32[512,384] parameter(0)
  t = f32[384,512] transpose(p0), dimensions={1,0}
  ROOT n = f32[384,512] negate(t)
}
ENTRY e {
  a = f32[512,384] parameter(0)
  ROOT f = f32[384,512] fusion(a), kind=kLoop, calls=fused
})",
                   "transpose"});
  cases.push_back({"transpose_3d_f16_odd", R"(HloModule m
fused {
  p0 = f16[5,100,67] parameter(0)
  p1 = f16[5,67,100] parameter(1)
  t = f16[5,67,100] transpose(p0), dimensions={0,2,1}
  ROOT a = f16[5,67,100] add(t, p1)
}
ENTRY e {
  a = f16[5,100,67] parameter(0)
  b = f16[5,67,100] parameter(1)
  ROOT f = f16[5,67,100] fusion(a, b), kind=kLoop, calls=fused
})",
                   "transpose"});
  cases.push_back({"transpose_copy_layout", R"(HloModule m
ENTRY e {
  a = f32[256,96]{1,0} parameter(0)
  ROOT c = f32[256,96]{0,1} copy(a)
})",
                   "transpose"});
  cases.push_back({"transpose_s8_021", R"(HloModule m
ENTRY e {
  a = s8[3,64,128] parameter(0)
  ROOT t = s8[128,3,64] transpose(a), dimensions={2,0,1}
})",
                   "transpose"});
  // In-place dynamic-update-slice.
  cases.push_back({"dus_in_place", R"(HloModule m
fused {
  p0 = f32[64,256] parameter(0)
  p1 = bf16[4,256] parameter(1)
  p2 = s32[] parameter(2)
  u = f32[4,256] convert(p1)
  z = s32[] constant(0)
  ROOT d = f32[64,256] dynamic-update-slice(p0, u, p2, z)
}
ENTRY e {
  a = f32[64,256] parameter(0)
  b = bf16[4,256] parameter(1)
  c = s32[] parameter(2)
  ROOT f = f32[64,256] fusion(a, b, c), kind=kLoop, calls=fused
})",
                   "dus_in_place"});
  // A scan step (Note [In-place update spaces]): the new carry, written into the stacked
  // output in place, and another output of the window's dims (size-1 dims elsewhere).
  cases.push_back({"dus_in_place_multi_output", R"(HloModule m
fused {
  p0 = f32[8,64] parameter(0)
  p1 = f32[8,64] parameter(1)
  p2 = f32[16,8,64] parameter(2)
  p3 = s32[] parameter(3)
  a = f32[8,64] add(p0, p1)
  h = f32[8,64] tanh(a)
  u = f32[1,8,64] reshape(h)
  z = s32[] constant(0)
  d = f32[16,8,64] dynamic-update-slice(p2, u, p3, z, z)
  n = f32[8,64] negate(h)
  g = f32[8,1,64] reshape(n)
  ROOT t = (f32[8,64], f32[16,8,64], f32[8,1,64]) tuple(h, d, g)
}
ENTRY e {
  a = f32[8,64] parameter(0)
  b = f32[8,64] parameter(1)
  c = f32[16,8,64] parameter(2)
  i = s32[] parameter(3)
  ROOT f = (f32[8,64], f32[16,8,64], f32[8,1,64]) fusion(a, b, c, i), kind=kLoop, calls=fused
})",
                   "dus_in_place"});
  // Gather: unfused (an embedding lookup, with batching dimensions) and fused into a loop.
  cases.push_back({"gather_embedding", R"(HloModule m
ENTRY e {
  table = f32[50,64] parameter(0)
  ids = s32[7,3] parameter(1)
  ROOT g = f32[7,3,64] gather(table, ids), offset_dims={2}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=2, slice_sizes={1,64}
})",
                   "loop"});
  cases.push_back({"gather_batching_fused", R"(HloModule m
fused {
  p0 = bf16[4,9,6] parameter(0)
  p1 = u8[4,5,2] parameter(1)
  g = bf16[4,5,3,2] gather(p0, p1), offset_dims={2,3}, collapsed_slice_dims={}, start_index_map={1,2}, operand_batching_dims={0}, start_indices_batching_dims={0}, index_vector_dim=2, slice_sizes={1,3,2}
  ROOT c = f32[4,5,3,2] convert(g)
}
ENTRY e {
  a = bf16[4,9,6] parameter(0)
  b = u8[4,5,2] parameter(1)
  ROOT f = f32[4,5,3,2] fusion(a, b), kind=kLoop, calls=fused
})",
                   "loop"});
  // Scatter: native atomics, compare-and-swap combiners, 1-byte elements, variadic
  // (serialized), unique indices.
  auto scatter_case = [](const std::string& name, const std::string& t, const std::string& combiner,
                         const std::string& extra) {
    return CatalogueCase{name, R"(HloModule m
comb {
  a = )" + t + R"([] parameter(0)
  b = )" + t + R"([] parameter(1)
  ROOT r = )" + t + "[] " + combiner + R"((a, b)
}
ENTRY e {
  op = )" + t + R"([6,33] parameter(0)
  idx = s32[40,1] parameter(1)
  upd = )" + t + R"([40,33] parameter(2)
  ROOT s = )" + t + R"([6,33] scatter(op, idx, upd), update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=comb)" + extra + R"(
})",
                         "scatter"};
  };
  cases.push_back(scatter_case("scatter_add_f32", "f32", "add", ""));
  cases.push_back(scatter_case("scatter_add_bf16", "bf16", "add", ""));
  cases.push_back(scatter_case("scatter_add_f16", "f16", "add", ""));
  cases.push_back(scatter_case("scatter_add_s64", "s64", "add", ""));
  cases.push_back(scatter_case("scatter_min_s32", "s32", "minimum", ""));
  cases.push_back(scatter_case("scatter_max_f32_cas", "f32", "maximum", ""));
  cases.push_back(scatter_case("scatter_mul_f64_cas", "f64", "multiply", ""));
  cases.push_back(scatter_case("scatter_add_s8_cas", "s8", "add", ""));
  cases.push_back(scatter_case("scatter_or_pred_cas", "pred", "or", ""));
  cases.push_back(scatter_case("scatter_add_c64_cas", "c64", "add", ""));
  cases.push_back(scatter_case("scatter_add_c128_serialized", "c128", "add", ""));
  cases.push_back({"scatter_overwrite_unique", R"(HloModule m
comb {
  a = f32[] parameter(0)
  ROOT b = f32[] parameter(1)
}
ENTRY e {
  op = f32[64,8] parameter(0)
  idx = s32[8] constant({3, 60, 7, 0, 12, 33, 63, 20})
  upd = f32[8,8] parameter(1)
  ROOT s = f32[64,8] scatter(op, idx, upd), update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, unique_indices=true, to_apply=comb
})",
                   "scatter"});
  cases.push_back({"scatter_variadic_2d_windows", R"(HloModule m
comb {
  a0 = f32[] parameter(0)
  a1 = s32[] parameter(1)
  b0 = f32[] parameter(2)
  b1 = s32[] parameter(3)
  s0 = f32[] add(a0, b0)
  m1 = s32[] maximum(a1, b1)
  ROOT r = (f32[], s32[]) tuple(s0, m1)
}
ENTRY e {
  o0 = f32[10,9,4] parameter(0)
  o1 = s32[10,9,4] parameter(1)
  idx = s64[5,2] parameter(2)
  u0 = f32[5,3,4] parameter(3)
  u1 = s32[5,3,4] parameter(4)
  ROOT s = (f32[10,9,4], s32[10,9,4]) scatter(o0, o1, idx, u0, u1), update_window_dims={1,2}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0,1}, index_vector_dim=1, to_apply=comb
})",
                   "scatter"});
  // rng-bit-generator: both algorithms, 32- and 64-bit outputs, narrow outputs, odd dims.
  auto rng_case = [](const std::string& name, const std::string& alg, const std::string& state,
                     const std::string& out) {
    return CatalogueCase{name, R"(HloModule m
ENTRY e {
  s = )" + state + R"( parameter(0)
  ROOT r = ()" + state + ", " + out + R"() rng-bit-generator(s), algorithm=)" + alg + R"(
})",
                         "rng_bit_generator"};
  };
  cases.push_back(rng_case("rng_philox_u32", "rng_philox", "u64[2]", "u32[37,5]"));
  cases.push_back(rng_case("rng_philox3_u64", "rng_philox", "u64[3]", "u64[11]"));
  cases.push_back(rng_case("rng_default_u8", "rng_default", "u64[2]", "u8[3,7]"));
  cases.push_back(rng_case("rng_threefry_u32_odd", "rng_three_fry", "u64[2]", "u32[5,7,3]"));
  cases.push_back(rng_case("rng_threefry_u32_even", "rng_three_fry", "u64[2]", "u32[5,8]"));
  cases.push_back(rng_case("rng_threefry_u64", "rng_three_fry", "u64[2]", "u64[9,2]"));
  cases.push_back(rng_case("rng_threefry_u16_scalar", "rng_three_fry", "u64[2]", "u16[]"));
  // Iota and constant fill as unfused instructions.
  cases.push_back({"iota_unfused", R"(HloModule m
ENTRY e {
  ROOT i = s64[100,3] iota(), iota_dimension=0
})",
                   "loop"});
  cases.push_back({"fill_unfused", R"(HloModule m
ENTRY e {
  c = bf16[] constant(1.5)
  ROOT b = bf16[1000] broadcast(c), dimensions={}
})",
                   "loop"});
  // Map and a non-fused elementwise instruction.
  cases.push_back({"map_unfused", R"(HloModule m
f { a = f32[] parameter(0)  b = f32[] parameter(1)  m = f32[] multiply(a, b)  ROOT s = f32[] add(m, a) }
ENTRY e {
  a = f32[1000] parameter(0)
  b = f32[1000] parameter(1)
  ROOT m = f32[1000] map(a, b), dimensions={0}, to_apply=f
})",
                   "loop"});
  cases.push_back({"reduce_in_loop", R"(HloModule m
add { a = f32[] parameter(0)  b = f32[] parameter(1)  ROOT s = f32[] add(a, b) }
fused {
  p0 = f32[8,5] parameter(0)
  z = f32[] constant(0)
  r = f32[8] reduce(p0, z), dimensions={1}, to_apply=add
  rb = f32[8,5] broadcast(r), dimensions={0}
  t = f32[5,8] transpose(rb), dimensions={1,0}
  ROOT o = f32[5,8] exponential(t)
}
ENTRY e {
  a = f32[8,5] parameter(0)
  ROOT f = f32[5,8] fusion(a), kind=kInput, calls=fused
})",
                   ""});
  return cases;
}

}  // namespace

const std::vector<CatalogueCase>& Catalogue() {
  static const std::vector<CatalogueCase>* cases = new std::vector<CatalogueCase>(MakeCatalogue());
  return *cases;
}

StatusOr<std::unique_ptr<HloModule>> ParseModule(const std::string& text) {
  ParseOptions options;
  options.fill_elided_constants = true;
  KILN_ASSIGN_OR_RETURN(std::unique_ptr<HloModule> m, ParseHloModule(text, options));
  KILN_RETURN_IF_ERROR(VerifyModule(*m));
  return m;
}

std::vector<const HloInstruction*> KernelInstructions(const HloModule& module) {
  CallGraph graph(module);
  std::vector<const HloInstruction*> out;
  for (const HloComputation* c : graph.sequential_computations()) {
    for (const HloInstruction* i : c->MakeInstructionPostOrder()) {
      switch (i->opcode()) {
        case HloOpcode::kParameter: case HloOpcode::kConstant: case HloOpcode::kTuple:
        case HloOpcode::kGetTupleElement: case HloOpcode::kBitcast: case HloOpcode::kWhile:
        case HloOpcode::kConditional: case HloOpcode::kCall: case HloOpcode::kAfterAll:
        case HloOpcode::kOptimizationBarrier:
          continue;
        default:
          break;
      }
      if (i->opcode() == HloOpcode::kFusion || ChooseEmitter(*i).ok()) out.push_back(i);
    }
  }
  return out;
}

Status FuseModule(HloModule& module, const FusionPolicy* policy) {
  FlattenCallGraph flatten;
  KILN_RETURN_IF_ERROR(flatten.Run(module).status());
  CpuFusionPolicy cpu_policy;
  if (policy == nullptr) policy = &cpu_policy;
  InstructionFusion fusion(*policy);
  KILN_RETURN_IF_ERROR(fusion.Run(module).status());
  MultiOutputFusion mof(*policy);
  KILN_RETURN_IF_ERROR(mof.Run(module).status());
  return VerifyModule(module);
}

StatusOr<std::unique_ptr<HloModule>> ExtractKernelModule(const HloModule& module,
                                                         const HloInstruction& instr) {
  KILN_ASSIGN_OR_RETURN(std::unique_ptr<HloModule> copy, ParseModule(module.ToString()));
  const HloInstruction* target = nullptr;
  for (const HloComputation* c : copy->computations()) {
    if (instr.parent() != nullptr && c->name() != instr.parent()->name()) continue;
    target = c->GetInstructionWithName(instr.name());
    if (target != nullptr) break;
  }
  if (target == nullptr) return NotFound("%", instr.name(), " not found in the copy");
  auto entry = std::make_unique<HloComputation>("kernel_entry");
  std::vector<HloInstruction*> params;
  for (int64_t i = 0; i < target->operand_count(); ++i) {
    auto p = std::make_unique<HloInstruction>(HloOpcode::kParameter, target->operand(i)->shape(),
                                              "arg" + std::to_string(i));
    p->set_parameter_number(i);
    params.push_back(entry->AddInstruction(std::move(p)));
  }
  HloInstruction* root =
      entry->AddInstruction(CloneInstruction(*target, target->shape(), params, target->name()));
  entry->set_root_instruction(root);
  copy->set_entry_computation(copy->AddComputation(std::move(entry)));
  // The old entry's layout, schedule and aliasing do not describe the new entry.
  copy->header() = HloModuleHeader{};
  return copy;
}

}  // namespace kiln::codegen::testing
