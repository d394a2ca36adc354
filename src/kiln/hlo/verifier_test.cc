// Verifier tests: HLO text in, verifier messages out. Each broken module names the expected
// error; the valid modules cover the opcode families whose text forms are easiest to get wrong
// (async ops, collectives, send/recv, infeed/outfeed, fusion, custom-call).
#include "kiln/hlo/verifier.h"

#include <limits>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "kiln/hlo/parser.h"
#include "kiln/hlo/shape_inference.h"

namespace kiln {
namespace {

using ::testing::HasSubstr;

// "OK", the verifier's message, or "parse error: ...".
std::string Verify(std::string_view text, const VerifierOptions& options = {}) {
  auto m = ParseHloModule(text);
  if (!m.ok()) return "parse error: " + m.status().message();
  Status s = VerifyModule(**m, options);
  return s.ok() ? "OK" : s.message();
}

// A module whose ENTRY holds `body` (instruction lines), with the usual helper computations.
std::string Module(std::string_view body, std::string_view header = "HloModule m") {
  return std::string(header) + R"(

add_f32 {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}

add_s32 {
  x = s32[] parameter(0)
  y = s32[] parameter(1)
  ROOT s = s32[] add(x, y)
}

less_f32 {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT lt = pred[] compare(x, y), direction=LT
}

less2 {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  c = f32[] parameter(2)
  d = f32[] parameter(3)
  ROOT lt = pred[] compare(a, b), direction=LT
}

ENTRY main {
)" + std::string(body) + "\n}\n";
}

// ---- the exact message format --------------------------------------------------------------

TEST(VerifierTest, MessageNamesInstructionComputationLineAndShapes) {
  const std::string text = R"(HloModule m
ENTRY main {
  a = f32[3,2] parameter(0)
  b = f32[3,2] parameter(1)
  ROOT add.3 = f32[2,3] add(a, b)
})";
  EXPECT_EQ(Verify(text),
            "verifier: %add.3 (computation main, line 5): shape f32[2,3] does not match the "
            "inferred shape f32[3,2] of add(f32[3,2], f32[3,2])");
}

TEST(VerifierTest, ValidModuleVerifies) {
  EXPECT_EQ(Verify(Module(R"(
  p = f32[4,8] parameter(0)
  i = s32[4] parameter(1)
  z = f32[] constant(0)
  r = f32[4] reduce(p, z), dimensions={1}, to_apply=add_f32
  b = f32[4,8] broadcast(r), dimensions={0}
  t = f32[8,4] transpose(b), dimensions={1,0}
  s = f32[2,4] slice(t), slice={[0:8:4], [0:4]}
  c = f32[4,4] concatenate(s, s), dimensions={0}
  d = f32[4,8] dot(c, p), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  e = f32[4,8] exponential(d)
  sorted = (f32[4,8], f32[4,8]) sort(e, d), dimensions={1}, to_apply=less2
  ROOT out = (f32[4,8], s32[4]) tuple(e, i)
)")),
            "OK");
}

// ---- broken modules, one error each --------------------------------------------------------

struct BrokenCase {
  const char* name;
  std::string body;        // ENTRY body (or a whole module when it starts with "HloModule")
  const char* expected;    // substring of the message
};

class BrokenModuleTest : public ::testing::TestWithParam<BrokenCase> {};

TEST_P(BrokenModuleTest, ReportsTheError) {
  const BrokenCase& c = GetParam();
  const std::string text = c.body.rfind("HloModule", 0) == 0 ? c.body : Module(c.body);
  const std::string msg = Verify(text);
  EXPECT_THAT(msg, HasSubstr(c.expected)) << text;
  EXPECT_THAT(msg, HasSubstr("verifier: ")) << text;
}

const BrokenCase kBroken[] = {
    {"BinaryShape", R"(
  a = f32[2] parameter(0)
  ROOT n = f32[3] negate(a))",
     "%n (computation main, line 32): shape f32[3] does not match the inferred shape f32[2] of "
     "negate(f32[2])"},
    {"ImplicitBroadcast", R"(
  a = f32[2,3] parameter(0)
  b = f32[] parameter(1)
  ROOT m = f32[2,3] multiply(a, b))",
     "multiply operands have different dimensions: f32[2,3] and f32[] (HLO has no implicit "
     "broadcasting)"},
    {"CompareResultType", R"(
  a = s32[4] parameter(0)
  ROOT c = s32[4] compare(a, a), direction=GT)",
     "shape s32[4] does not match the inferred shape pred[4]"},
    {"CompareTypeAttribute", R"(
  a = f32[4] parameter(0)
  ROOT c = pred[4] compare(a, a), direction=GT, type=SIGNED)",
     "comparison type=SIGNED does not fit f32 operands (expected FLOAT or TOTALORDER)"},
    {"ShiftOnFloats", R"(
  a = f32[4] parameter(0)
  ROOT s = f32[4] shift-left(a, a))",
     "shift-left expects integer operands, found f32"},
    {"BroadcastDimensionOutOfRange", R"(
  a = f32[3] parameter(0)
  ROOT b = f32[2,3] broadcast(a), dimensions={2})",
     "broadcast dimensions= {2}: dimension 2 is out of range for rank 2"},
    {"BroadcastSizeMismatch", R"(
  a = f32[3] parameter(0)
  ROOT b = f32[3,2] broadcast(a), dimensions={1})",
     "broadcast operand dimension 0 (size 3) maps to result dimension 1 of size 2"},
    {"TransposeNotAPermutation", R"(
  a = f32[2,3] parameter(0)
  ROOT t = f32[3,2] transpose(a), dimensions={1,1})",
     "transpose dimensions={1,1} is not a permutation"},
    {"TransposeShape", R"(
  a = f32[2,3,4] parameter(0)
  ROOT t = f32[4,3,2] transpose(a), dimensions={2,0,1})",
     "shape f32[4,3,2] does not match the inferred shape f32[4,2,3]"},
    {"ReshapeElementCount", R"(
  a = f32[2,3] parameter(0)
  ROOT r = f32[7] reshape(a))",
     "reshape changes the element count: f32[2,3] has 6 elements, f32[7] has 7"},
    {"SliceOutOfBounds", R"(
  a = f32[10] parameter(0)
  ROOT s = f32[5] slice(a), slice={[6:11]})",
     "slice [6:11] of dimension 0 is out of range [0:10]"},
    {"ConcatenateMismatch", R"(
  a = f32[2,3] parameter(0)
  b = f32[3,3] parameter(1)
  ROOT c = f32[2,6] concatenate(a, b), dimensions={1})",
     "concatenate operands f32[2,3] and f32[3,3] differ in dimension 0"},
    {"PadNegativeSize", R"(
  a = f32[3] parameter(0)
  z = f32[] constant(0)
  ROOT p = f32[0] pad(a, z), padding=-2_-2)",
     "gives a negative size -1"},
    {"DynamicSliceIndexCount", R"(
  a = f32[10,4] parameter(0)
  i = s32[] parameter(1)
  ROOT d = f32[2,4] dynamic-slice(a, i), dynamic_slice_sizes={2,4})",
     "dynamic-slice has 1 start indices for an operand of rank 2"},
    {"DotContractingSizes", R"(
  a = f32[2,3] parameter(0)
  b = f32[4,5] parameter(1)
  ROOT d = f32[2,5] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0})",
     "dot: lhs contracting dimension 1 (size 3) does not match rhs contracting dimension 0 "
     "(size 4)"},
    {"DotResultOrder", R"(
  a = f32[7,2,3] parameter(0)
  b = f32[7,3,5] parameter(1)
  ROOT d = f32[2,7,5] dot(a, b), lhs_batch_dims={0}, rhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_contracting_dims={1})",
     "does not match the inferred shape f32[7,2,5]"},
    {"ConvolutionFeatureGroups", R"(
  a = f32[1,8,8,6] parameter(0)
  k = f32[3,3,4,8] parameter(1)
  ROOT c = f32[1,6,6,8] convolution(a, k), window={size=3x3}, dim_labels=b01f_01io->b01f, feature_group_count=2)",
     "convolution input features (6) must equal feature_group_count=2 times the kernel input "
     "features (4)"},
    {"ConvolutionWindow", R"(
  a = f32[1,8,8,4] parameter(0)
  k = f32[3,3,4,8] parameter(1)
  ROOT c = f32[1,8,8,8] convolution(a, k), window={size=3x3}, dim_labels=b01f_01io->b01f)",
     "does not match the inferred shape f32[1,6,6,8]"},
    {"ReduceDimensionOutOfRange", R"(
  a = f32[4,8] parameter(0)
  z = f32[] constant(0)
  ROOT r = f32[4] reduce(a, z), dimensions={2}, to_apply=add_f32)",
     "reduce dimensions= {2}: dimension 2 is out of range for rank 2"},
    {"ReducerType", R"(
  a = f32[4,8] parameter(0)
  z = f32[] constant(0)
  ROOT r = f32[4] reduce(a, z), dimensions={1}, to_apply=add_s32)",
     "reducer (s32[], s32[]) -> s32[] accumulator 0 (s32[]) does not match the init value type f32"},
    {"SortComparator", R"(
  a = f32[4] parameter(0)
  ROOT s = f32[4] sort(a), dimensions={0}, to_apply=add_f32)",
     "sort comparator (f32[], f32[]) -> f32[] must return pred[]"},
    {"GetTupleElementIndex", R"(
  a = f32[4] parameter(0)
  t = (f32[4], f32[4]) tuple(a, a)
  ROOT g = f32[4] get-tuple-element(t), index=2)",
     "get-tuple-element index=2 is out of range for (f32[4], f32[4]) (2 elements)"},
    {"SelectPredicate", R"(
  p = pred[] parameter(0)
  a = f32[4] parameter(1)
  ROOT s = f32[4] select(p, a, a))",
     "select predicate pred[] must have the operands' dimensions f32[4]"},
    {"IotaDimension", R"(
  ROOT i = s32[4,5] iota(), iota_dimension=2)",
     "iota_dimension=2 is out of range for s32[4,5]"},
    {"BitcastSize", R"(
  a = f32[4,4] parameter(0)
  ROOT b = f32[15] bitcast(a))",
     "bitcast changes the size: f32[4,4] holds 512 bits, f32[15] holds 480"},
    {"GatherSliceSize", R"(
  a = f32[5,7] parameter(0)
  i = s32[4] parameter(1)
  ROOT g = f32[4,7] gather(a, i), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={2,7})",
     "gather collapses dimension 0 whose slice size is 2 (must be 0 or 1)"},
    {"ScatterUpdateComputation", R"(
  a = f32[5,7] parameter(0)
  i = s32[4] parameter(1)
  u = f32[4,7] parameter(2)
  ROOT s = f32[5,7] scatter(a, i, u), update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=less_f32)",
     "scatter update computation: reducer (f32[], f32[]) -> pred[] parameter 0 (f32[]) must have "
     "the result type pred[]"},
    {"MapArity", R"(
  a = f32[4] parameter(0)
  ROOT m = f32[4] map(a), dimensions={0}, to_apply=add_f32)",
     "map computation takes 2 parameters but map has 1 operands"},
    {"ReduceWindowRank", R"(
  a = f32[4,8] parameter(0)
  z = f32[] constant(0)
  ROOT r = f32[2] reduce-window(a, z), window={size=2 stride=2}, to_apply=add_f32)",
     "window has 1 dimensions but the operand f32[4,8] has rank 2"},
    {"CallArguments", R"(
  a = f32[] parameter(0)
  ROOT c = f32[] call(a), to_apply=add_f32)",
     "called computation (f32[], f32[]) -> f32[] takes 2 parameters but gets 1 arguments"},
    {"MixedPrecision", R"(
  a = f32[4] parameter(0)
  b = bf16[4] parameter(1)
  ROOT s = f32[4] add(a, b))",
     "operands mix floating-point types f32 and bf16 (allow_mixed_precision is off)"},
    {"TopK", R"(
  a = f32[3,10] parameter(0)
  ROOT t = (f32[3,4], s32[3,4]) topk(a), k=5, largest=true)",
     "does not match the inferred shape (f32[3,5], s32[3,5])"},
    {"AllGatherGroups", R"(
  a = f32[4,8] parameter(0)
  ROOT g = f32[4,24] all-gather(a), dimensions={1}, replica_groups={{0,1},{2,3}})",
     "shape f32[4,24] does not match the inferred shape f32[4,16]"},
    {"ReplicaGroupsRepeatId", R"(
  a = f32[4,8] parameter(0)
  ROOT r = f32[4,8] all-reduce(a), replica_groups={{0,1},{1,2}}, to_apply=add_f32)",
     "replica_groups names id 1 twice"},
    {"CollectivePermutePairs", R"(
  a = f32[4] parameter(0)
  ROOT c = f32[4] collective-permute(a), source_target_pairs={{0,1},{0,2}})",
     "source 0 appears twice in source_target_pairs"},
    {"CustomCallLayoutConstraints", R"(
  a = f32[4] parameter(0)
  ROOT c = f32[4]{0} custom-call(a), custom_call_target="foo", operand_layout_constraints={f32[4]{0}, f32[4]{0}})",
     "custom-call operand_layout_constraints has 2 shapes for 1 operands"},
    {"WhileBodySignature", R"(HloModule m
cond {
  p = s32[] parameter(0)
  ROOT lt = pred[] compare(p, p), direction=LT
}
body {
  p = s32[] parameter(0)
  ROOT c = f32[] convert(p)
}
ENTRY main {
  i = s32[] parameter(0)
  ROOT w = s32[] while(i), condition=cond, body=body
})",
     "while body result f32[] does not match the loop state s32[]"},
    {"WhileConditionType", R"(HloModule m
cond {
  p = s32[] parameter(0)
  ROOT n = s32[] negate(p)
}
body {
  p = s32[] parameter(0)
  ROOT n = s32[] negate(p)
}
ENTRY main {
  i = s32[] parameter(0)
  ROOT w = s32[] while(i), condition=cond, body=body
})",
     "while condition must return pred[], returns s32[]"},
    {"ConditionalBranches", R"(HloModule m
b0 {
  p = f32[] parameter(0)
  ROOT n = f32[] negate(p)
}
b1 {
  p = s32[] parameter(0)
  ROOT n = s32[] negate(p)
}
ENTRY main {
  i = s32[] parameter(0)
  x = f32[] parameter(1)
  y = s32[] parameter(2)
  ROOT c = f32[] conditional(i, x, y), branch_computations={b0, b1}
})",
     "conditional branch 1 returns s32[] but branch 0 returns f32[]"},
    {"FusionParameter", R"(HloModule m
fused {
  p = f32[8] parameter(0)
  ROOT n = f32[8] negate(p)
}
ENTRY main {
  a = f32[4] parameter(0)
  ROOT f = f32[8] fusion(a), kind=kLoop, calls=fused
})",
     "argument 0 f32[4] does not match the called computation's parameter f32[8]"},
    {"EntryLayoutParameterCount", R"(HloModule m, entry_computation_layout={(f32[4]{0}, f32[4]{0})->f32[4]{0}}
ENTRY main {
  a = f32[4] parameter(0)
  ROOT n = f32[4] negate(a)
})",
     "module m: entry_computation_layout has 2 parameters but ENTRY main has 1"},
    {"EntryLayoutResult", R"(HloModule m, entry_computation_layout={(f32[4]{0})->f32[8]{0}}
ENTRY main {
  a = f32[4] parameter(0)
  ROOT n = f32[4] negate(a)
})",
     "entry_computation_layout result is f32[8] but ROOT %n is f32[4]"},
    {"EntryLayoutInvalid", R"(HloModule m, entry_computation_layout={(f32[4,2]{1,1})->f32[4,2]{1,0}}
ENTRY main {
  a = f32[4,2] parameter(0)
  ROOT n = f32[4,2] negate(a)
})",
     "entry_computation_layout parameter 0: layout {1,1} of f32[4,2] is not a permutation of its 2 "
     "dimensions"},
    {"InputOutputAliasParameter", R"(HloModule m, input_output_alias={ {}: (3, {}, may-alias) }
ENTRY main {
  a = f32[4] parameter(0)
  ROOT n = f32[4] negate(a)
})",
     "input_output_alias {}: (3, {}): ENTRY has no parameter 3"},
    {"InputOutputAliasIndex", R"(HloModule m, input_output_alias={ {1}: (0, {}, may-alias) }
ENTRY main {
  a = f32[4] parameter(0)
  ROOT n = f32[4] negate(a)
})",
     "input_output_alias {1}: (0, {}): output index is not in the result shape f32[4]"},
    {"AsyncDoneShape", R"(HloModule m
wrapped {
  p = f32[4] parameter(0)
  ROOT n = f32[4] negate(p)
}
ENTRY main {
  a = f32[4] parameter(0)
  s = ((f32[4]), f32[4], s32[]) async-start(a), calls=wrapped
  ROOT d = f32[8] async-done(s), calls=wrapped
})",
     "shape f32[8] does not match the inferred shape f32[4] of async-done"},
    {"ReplicaGroupsCoverage", R"(HloModule m, replica_count=8
add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}
ENTRY main {
  a = f32[4] parameter(0)
  ROOT r = f32[4] all-reduce(a), replica_groups={{0,1},{2,3}}, to_apply=add
})",
     "replica_groups cover 4 ids but the module has 8 replicas (replica_count)"},
    {"CustomCallAliasing", R"(
  a = f32[4] parameter(0)
  ROOT c = f32[8] custom-call(a), custom_call_target="foo", output_to_operand_aliasing={{}: (0, {})})",
     "output_to_operand_aliasing {}: (0, {}): aliased buffers differ: output f32[8], operand f32[4]"},
    {"CopyDoneOperand", R"(
  a = f32[4] parameter(0)
  z = u32[] constant(0)
  t = (f32[4], f32[4], u32[]) tuple(a, a, z)
  ROOT d = f32[4] copy-done(t))",
     "operand must come from copy-start, found tuple %t"},
    {"RngNormalIntegers", R"(
  a = s32[] parameter(0)
  ROOT r = s32[4] rng(a, a), distribution=rng_normal)",
     "rng_normal needs floating-point parameters, found s32[]"},
    {"DynamicReshapeCount", R"(
  a = f32[6] parameter(0)
  two = s32[] constant(2)
  ROOT r = f32[2,2] dynamic-reshape(a, two, two))",
     "dynamic-reshape changes the element count (bounds): f32[6] to f32[2,2]"},
    {"TriangularSolveShapes", R"(
  a = f32[3,3] parameter(0)
  b = f32[4,5] parameter(1)
  ROOT x = f32[4,5] triangular-solve(a, b), left_side=true, lower=true, transpose_a=NO_TRANSPOSE)",
     "do not share the row dimension (left_side=true)"},
    {"FftLength", R"(
  a = f32[4,8] parameter(0)
  ROOT f = c64[4,5] fft(a), fft_type=RFFT, fft_length={10})",
     "RFFT operand dimension 1 (8) must equal fft_length[0]=10"},
    {"SelectAndScatterSource", R"(HloModule m
add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}
ge {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = pred[] compare(a, b), direction=GE
}
ENTRY main {
  x = f32[4,6] parameter(0)
  src = f32[2,2] parameter(1)
  z = f32[] constant(0)
  ROOT sas = f32[4,6] select-and-scatter(x, src, z), window={size=2x2 stride=2x2}, select=ge, scatter=add
})",
     "select-and-scatter source f32[2,2] must have the windowed operand's dimensions f32[2,3]"},
    {"GatherBatchingSizes", R"(
  b = f32[3,5,7] parameter(0)
  bi = s32[2,4] parameter(1)
  ROOT g = f32[2,4,7] gather(b, bi), offset_dims={2}, collapsed_slice_dims={1}, start_index_map={1}, operand_batching_dims={0}, start_indices_batching_dims={0}, index_vector_dim=2, slice_sizes={1,1,7})",
     "gather batching dimension 0 of the operand (size 3) does not match dimension 0 of the "
     "indices (size 2)"},
    {"RaggedDotGroups", R"(
  lhs = f32[11,5] parameter(0)
  rhs = f32[4,5,7] parameter(1)
  gs = s64[3] parameter(2)
  ROOT rd = f32[11,7] ragged-dot(lhs, rhs, gs), lhs_contracting_dims={1}, rhs_contracting_dims={1}, lhs_ragged_dims={0}, rhs_group_dims={0})",
     "ragged-dot rhs group dimension 0 has 4 groups but group sizes s64[3] describe 3"},
    {"WhileConditionParameters", R"(HloModule m
cond {
  p = s32[] parameter(0)
  q = s32[] parameter(1)
  ROOT lt = pred[] compare(p, q), direction=LT
}
body {
  p = s32[] parameter(0)
  ROOT n = s32[] negate(p)
}
ENTRY main {
  i = s32[] parameter(0)
  ROOT w = s32[] while(i), condition=cond, body=body
})",
     "while condition must take 1 parameter, takes 2"},
    {"AllReduceReducer", R"(
  a = s32[4] parameter(0)
  ROOT r = s32[4] all-reduce(a), to_apply=add_f32)",
     "all-reduce reducer (f32[], f32[]) -> f32[] accumulator 0 (f32[]) does not match the init "
     "value type s32"},
};

INSTANTIATE_TEST_SUITE_P(Broken, BrokenModuleTest, ::testing::ValuesIn(kBroken),
                         [](const auto& info) { return std::string(info.param.name); });

// ---- valid modules of the harder families ---------------------------------------------------

TEST(VerifierTest, AsyncCollectivesAndTokens) {
  const std::string text = R"(HloModule m, replica_count=4

add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}

wrapped {
  p = f32[4] parameter(0)
  ROOT n = f32[4] negate(p)
}

ENTRY main {
  a = f32[4,8] parameter(0)
  ag = f32[4,32] all-gather(a), dimensions={1}
  ags = (f32[4,8], f32[4,32]) all-gather-start(a), dimensions={1}, replica_groups={{0,1,2,3}}
  agd = f32[4,32] all-gather-done(ags)
  ar = f32[4,8] all-reduce(a), replica_groups={}, to_apply=add
  ars = f32[4,8] all-reduce-start(a), to_apply=add
  ard = f32[4,8] all-reduce-done(ars)
  rs = f32[4,2] reduce-scatter(a), dimensions={1}, to_apply=add
  a2a = f32[4,8] all-to-all(a), dimensions={1}
  cp = f32[4,8] collective-permute(a), source_target_pairs={{0,1},{1,0}}
  cps = (f32[4,8], f32[4,8], u32[], u32[]) collective-permute-start(a), source_target_pairs={{0,1}}
  cpd = f32[4,8] collective-permute-done(cps)
  v = f32[4] parameter(1)
  st = ((f32[4]), f32[4], s32[]) async-start(v), calls=wrapped
  up = ((f32[4]), f32[4], s32[]) async-update(st), calls=wrapped
  dn = f32[4] async-done(up), calls=wrapped
  cs = (f32[4], f32[4], u32[]) copy-start(v)
  cd = f32[4] copy-done(cs)
  tok = token[] after-all()
  inf = ((f32[2], s32[]), token[]) infeed(tok)
  data = (f32[2], s32[]) get-tuple-element(inf), index=0
  t2 = token[] get-tuple-element(inf), index=1
  out = token[] outfeed(data, t2), outfeed_shape=(f32[2], s32[])
  snd = (f32[4], u32[], token[]) send(v, tok), channel_id=1
  sd = token[] send-done(snd), channel_id=1
  rcv = (f32[4], u32[], token[]) recv(tok), channel_id=2
  rd = (f32[4], token[]) recv-done(rcv), channel_id=2
  dep = f32[4] add-dependency(v, sd)
  pid = u32[] partition-id()
  rid = u32[] replica-id()
  key = u64[2] parameter(2)
  rbg = (u64[2], u32[4,4]) rng-bit-generator(key), algorithm=rng_philox
  ROOT r = (f32[4,32], f32[4,32], f32[4,8], f32[4,8], f32[4,2], f32[4,8], f32[4,8], f32[4,8], f32[4], f32[4], f32[4]) tuple(ag, agd, ar, ard, rs, a2a, cp, cpd, dn, cd, dep)
})";
  EXPECT_EQ(Verify(text), "OK");
}

TEST(VerifierTest, PostOptimizationForms) {
  // Fusions, a cuBLAS custom-call with a backend_config and a tuple result, bitcasts with
  // layouts, and a gemm fusion of kind kCustom.
  const std::string text = R"(HloModule m, is_scheduled=true, entry_computation_layout={(bf16[64,32]{1,0}, bf16[32,80]{1,0})->bf16[64,80]{1,0}}

fused_dot {
  p0 = bf16[64,32]{1,0} parameter(0)
  p1 = bf16[32,80]{1,0} parameter(1)
  ROOT d = bf16[64,80]{1,0} dot(p0, p1), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}

ENTRY main {
  a = bf16[64,32]{1,0} parameter(0)
  b = bf16[32,80]{1,0} parameter(1)
  g = (bf16[64,80]{1,0}, s8[33554432]{0}) custom-call(a, b), custom_call_target="__cublas$lt$matmul", backend_config={"gemm_backend_config":{"alpha_real":1}}
  gt = bf16[64,80]{1,0} get-tuple-element(g), index=0
  bc = bf16[5120]{0} bitcast(gt)
  bc2 = bf16[80,64]{0,1} bitcast(bc)
  ROOT f = bf16[64,80]{1,0} fusion(a, b), kind=kCustom, calls=fused_dot, backend_config={"fusion_backend_config":{"kind":"__triton_gemm"}}
})";
  EXPECT_EQ(Verify(text), "OK");
}

TEST(VerifierTest, LinalgAndDataOps) {
  const std::string text = Module(R"(
  c = c64[4,8] parameter(0)
  fft = c64[4,8] fft(c), fft_type=FFT, fft_length={8}
  r = f32[4,8] parameter(1)
  rfft = c64[4,5] fft(r), fft_type=RFFT, fft_length={8}
  irfft = f32[4,8] fft(rfft), fft_type=IRFFT, fft_length={8}
  m = f32[3,3] parameter(2)
  ch = f32[3,3] cholesky(m), lower=true
  ts = f32[3,3] triangular-solve(m, m), left_side=true, lower=true, transpose_a=NO_TRANSPOSE
  bn = f32[2,3] parameter(3)
  sc = f32[3] parameter(4)
  bnt = (f32[2,3], f32[3], f32[3]) batch-norm-training(bn, sc, sc), epsilon=0.001, feature_index=1
  bc = u8[4,8,4] bitcast-convert(r)
  bc2 = f32[4,8] bitcast-convert(bc)
  i = s32[] parameter(5)
  ds = f32[2,8] dynamic-slice(r, i, i), dynamic_slice_sizes={2,8}
  dus = f32[4,8] dynamic-update-slice(r, ds, i, i)
  zero = f32[] constant(0)
  one = f32[] constant(1)
  pad = f32[10,8] pad(r, zero), padding=1_2_1x-1_1
  rev = f32[4,8] reverse(r), dimensions={0,1}
  io = s32[4,8] iota(), iota_dimension=1
  cl = f32[4,8] clamp(zero, r, one)
  gds = s32[] get-dimension-size(r), dimensions={1}
  rp = f32[4,8] reduce-precision(r), exponent_bits=5, mantissa_bits=10
  tk = (f32[4,3], s32[4,3]) topk(r), k=3, largest=true
  ROOT t = (c64[4,8], f32[4,8], f32[3,3], f32[3,3], f32[4,8], f32[4,8], f32[10,8]) tuple(fft, irfft, ch, ts, bc2, dus, pad)
)");
  EXPECT_EQ(Verify(text), "OK");
}

TEST(VerifierTest, MoreFamiliesFromText) {
  const std::string text = R"(HloModule m

add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}

argmax {
  v0 = f32[] parameter(0)
  i0 = s32[] parameter(1)
  v1 = f32[] parameter(2)
  i1 = s32[] parameter(3)
  gt = pred[] compare(v0, v1), direction=GT
  v = f32[] select(gt, v0, v1)
  i = s32[] select(gt, i0, i1)
  ROOT r = (f32[], s32[]) tuple(v, i)
}

ge {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = pred[] compare(a, b), direction=GE
}

cmp4 {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  c = s32[] parameter(2)
  d = s32[] parameter(3)
  ROOT lt = pred[] compare(a, b), direction=LT
}

on_true {
  p = f32[4] parameter(0)
  ROOT n = f32[4] negate(p)
}

on_false {
  p = f32[4] parameter(0)
  ROOT e = f32[4] exponential(p)
}

cond {
  s = (s32[], f32[4]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  ten = s32[] constant(10)
  ROOT lt = pred[] compare(i, ten), direction=LT
}

body {
  s = (s32[], f32[4]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  v = f32[4] get-tuple-element(s), index=1
  one = s32[] constant(1)
  j = s32[] add(i, one)
  w = f32[4] add(v, v)
  ROOT t = (s32[], f32[4]) tuple(j, w)
}

ENTRY main {
  x = f32[4,6] parameter(0)
  idx = s32[4,6] iota(), iota_dimension=1
  z = f32[] constant(0)
  zi = s32[] constant(0)
  am = (f32[4], s32[4]) reduce(x, idx, z, zi), dimensions={1}, to_apply=argmax
  rw = (f32[2,6], s32[2,6]) reduce-window(x, idx, z, zi), window={size=2x1 stride=2x1}, to_apply=argmax
  src = f32[2,3] parameter(1)
  sas = f32[4,6] select-and-scatter(x, src, z), window={size=2x2 stride=2x2}, select=ge, scatter=add
  srt = (f32[4,6], s32[4,6]) sort(x, idx), dimensions={1}, is_stable=true, to_apply=cmp4
  b = f32[3,5,7] parameter(2)
  bi = s32[3,4] parameter(3)
  g = f32[3,4,7] gather(b, bi), offset_dims={2}, collapsed_slice_dims={1}, start_index_map={1}, operand_batching_dims={0}, start_indices_batching_dims={0}, index_vector_dim=2, slice_sizes={1,1,7}
  sc = f32[3,5,7] scatter(b, bi, g), update_window_dims={2}, inserted_window_dims={1}, scatter_dims_to_operand_dims={1}, input_batching_dims={0}, scatter_indices_batching_dims={0}, index_vector_dim=2, to_apply=add
  lhs = f32[11,5] parameter(4)
  rhs = f32[3,5,7] parameter(5)
  gs = s64[3] parameter(6)
  rd = f32[11,7] ragged-dot(lhs, rhs, gs), lhs_contracting_dims={1}, rhs_contracting_dims={1}, lhs_ragged_dims={0}, rhs_group_dims={0}
  p = pred[] parameter(7)
  v4 = f32[4] parameter(8)
  cnd = f32[4] conditional(p, v4, v4), true_computation=on_true, false_computation=on_false
  mp = f32[4] map(v4, v4), dimensions={0}, to_apply=add
  init = (s32[], f32[4]) tuple(zi, v4)
  wh = (s32[], f32[4]) while(init), condition=cond, body=body
  cl = f32[4] call(v4), to_apply=on_true
  one = f32[] constant(1)
  rn = f32[2,3] rng(z, one), distribution=rng_uniform
  sz = s32[] get-dimension-size(v4), dimensions={0}
  dyn = f32[<=4] set-dimension-size(v4, sz), dimensions={0}
  two = s32[] constant(2)
  dr = f32[2,2] dynamic-reshape(v4, two, two)
  bits = u32[4] parameter(9)
  stc = bf16[4] stochastic-convert(v4, bits)
  fin = pred[4] is-finite(v4)
  cx = c64[4] complex(v4, v4)
  re = f32[4] real(cx)
  im = f32[4] imag(cx)
  pc = u32[4] popcnt(bits)
  lz = u32[4] count-leading-zeros(bits)
  tb = (f32[4], u32[4]) tuple(v4, bits)
  ob = (f32[4], u32[4]) opt-barrier(tb)
  a16 = bf16[8,16] parameter(10)
  b16 = bf16[16,4] parameter(11)
  dt = f32[8,4] dot(a16, b16), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  img = f32[4,5,5,3] parameter(12)
  ker = f32[5,5,3,8] parameter(13)
  bgc = f32[1,1,1,8] convolution(img, ker), window={size=5x5}, dim_labels=b01f_01io->b01f, batch_group_count=4
  st = u64[2] rng-get-and-update-state(), delta=16
  f6 = f32[6] parameter(14)
  bni = f32[4,6] batch-norm-inference(x, f6, f6, f6, f6), epsilon=0.001, feature_index=1
  bng = (f32[4,6], f32[6], f32[6]) batch-norm-grad(x, f6, f6, f6, x), epsilon=0.001, feature_index=1
  ROOT out = (f32[4], (f32[2,6], s32[2,6]), f32[4,6], f32[3,5,7], f32[11,7], f32[4], (s32[], f32[4]), f32[2,2]) tuple(cnd, rw, sas, sc, rd, mp, wh, dr)
})";
  EXPECT_EQ(Verify(text), "OK");
}

// ---- options and error collection ----------------------------------------------------------

TEST(VerifierTest, MixedPrecisionAllowedByOption) {
  const std::string text = Module(R"(
  a = f32[4] parameter(0)
  b = bf16[4] parameter(1)
  ROOT s = f32[4] add(a, b))");
  EXPECT_THAT(Verify(text), HasSubstr("mix floating-point types"));
  VerifierOptions o;
  o.allow_mixed_precision = true;
  EXPECT_EQ(Verify(text, o), "OK");
}

TEST(VerifierTest, LayoutSensitiveComparesForwardedLayouts) {
  const std::string text = R"(HloModule m, entry_computation_layout={(f32[4,8]{0,1})->f32[4,8]{1,0}}
ENTRY main {
  a = f32[4,8]{1,0} parameter(0)
  t = (f32[4,8]{1,0}) tuple(a)
  ROOT g = f32[4,8]{0,1} get-tuple-element(t), index=0
})";
  EXPECT_EQ(Verify(text), "OK");
  VerifierOptions o;
  o.layout_sensitive = true;
  const std::string msg = Verify(text, o);
  EXPECT_THAT(msg, HasSubstr("entry_computation_layout parameter 0 is f32[4,8]{0,1} but parameter %a is f32[4,8]{1,0}"));
  EXPECT_THAT(msg, HasSubstr("layout of f32[4,8]{0,1} differs from the forwarded f32[4,8]{1,0}"));
}

TEST(VerifierTest, DynamicDimensionsOption) {
  // set-dimension-size makes dimension 0 dynamic; declaring it static passes by default (XLA
  // compares shapes up to dynamism) and fails with compare_dynamic_dimensions.
  const std::string text = Module(R"(
  a = f32[4] parameter(0)
  n = s32[] constant(2)
  ROOT d = f32[4] set-dimension-size(a, n), dimensions={0})");
  EXPECT_EQ(Verify(text), "OK");
  VerifierOptions o;
  o.compare_dynamic_dimensions = true;
  EXPECT_THAT(Verify(text, o), HasSubstr("shape f32[4] does not match the inferred shape f32[<=4]"));
}

TEST(VerifierTest, SortedBroadcastDimensionsOption) {
  const std::string text = Module(R"(
  a = f32[2,3] parameter(0)
  ROOT b = f32[3,2] broadcast(a), dimensions={1,0})");
  EXPECT_EQ(Verify(text), "OK");
  VerifierOptions o;
  o.require_sorted_broadcast_dimensions = true;
  EXPECT_THAT(Verify(text, o), HasSubstr("broadcast dimensions={1,0} must be increasing"));
}

TEST(VerifierTest, CollectsSeveralErrorsAndCapsThem) {
  std::string body = "  a = f32[2] parameter(0)\n";
  for (int i = 0; i < 25; ++i) body += "  n" + std::to_string(i) + " = f32[3] negate(a)\n";
  body += "  ROOT r = f32[2] negate(a)";
  const std::string msg = Verify(Module(body));
  EXPECT_THAT(msg, HasSubstr("%n0 "));
  EXPECT_THAT(msg, HasSubstr("%n19 "));
  EXPECT_THAT(msg, ::testing::Not(HasSubstr("%n20 ")));
  EXPECT_THAT(msg, HasSubstr("... and 5 more errors"));
  auto m = ParseHloModule(Module(body));
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(CollectVerifierErrors(**m).size(), 25u);
}

// ---- structural errors that HLO text cannot express (built by hand) ------------------------

TEST(VerifierTest, HandBuiltStructuralErrors) {
  HloModule module("hand");
  auto entry = std::make_unique<HloComputation>("main");
  auto p = std::make_unique<HloInstruction>(HloOpcode::kParameter, Shape::Array(PrimitiveType::kF32, {2}), "p");
  p->set_parameter_number(0);
  HloInstruction* param = entry->AddInstruction(std::move(p));
  // negate with two operands: fixed arity 1.
  auto neg = std::make_unique<HloInstruction>(HloOpcode::kNegate, Shape::Array(PrimitiveType::kF32, {2}), "neg");
  neg->AppendOperand(param);
  neg->AppendOperand(param);
  HloInstruction* n = entry->AddInstruction(std::move(neg));
  // A reduce without a reducer.
  auto red = std::make_unique<HloInstruction>(HloOpcode::kReduce, Shape::Scalar(PrimitiveType::kF32), "red");
  red->AppendOperand(param);
  red->AppendOperand(param);
  entry->AddInstruction(std::move(red));
  // A layout that is not a permutation.
  Shape bad = Shape::Array(PrimitiveType::kF32, {2});
  bad.set_layout(Layout({1}));
  auto copy = std::make_unique<HloInstruction>(HloOpcode::kCopy, bad, "copy");
  copy->AppendOperand(param);
  entry->AddInstruction(std::move(copy));
  entry->set_root_instruction(n);
  module.AddComputation(std::move(entry), /*is_entry=*/true);
  // A computation whose parameters are numbered 0 and 2, and one without a ROOT.
  auto gap = std::make_unique<HloComputation>("gap");
  for (int64_t number : {0, 2}) {
    auto q = std::make_unique<HloInstruction>(HloOpcode::kParameter, Shape::Scalar(PrimitiveType::kF32),
                                              "q" + std::to_string(number));
    q->set_parameter_number(number);
    HloInstruction* added = gap->AddInstruction(std::move(q));
    gap->set_root_instruction(added);
  }
  module.AddComputation(std::move(gap));
  auto rootless = std::make_unique<HloComputation>("rootless");
  rootless->AddInstruction(
      std::make_unique<HloInstruction>(HloOpcode::kPartitionId, Shape::Scalar(PrimitiveType::kU32), "id"));
  module.AddComputation(std::move(rootless));
  const std::vector<std::string> errors = CollectVerifierErrors(module);
  const std::string all = ::testing::PrintToString(errors);
  EXPECT_THAT(all, HasSubstr("%neg (computation main): negate takes 1 operand, found 2"));
  EXPECT_THAT(all, HasSubstr("%red (computation main): reduce calls 1 computation(s), found 0"));
  EXPECT_THAT(all, HasSubstr("layout {1} of f32[2] is not a permutation of its 1 dimensions"));
  EXPECT_THAT(all, HasSubstr("computation gap: parameter numbers must be dense 0..1; parameter 1 is missing"));
  EXPECT_THAT(all, HasSubstr("computation rootless: has no ROOT instruction"));

  HloModule empty("empty");
  EXPECT_THAT(VerifyModule(empty).message(), HasSubstr("module empty: there is no ENTRY computation"));
}

// Issue 16: a module built in code skips the parser's size check; the verifier catches arrays
// whose element count or bytes do not fit (the product wraps in int64: 2^32 x 2^32 x 2^32 is 0).
TEST(VerifierTest, HandBuiltOversizedShapes) {
  HloModule module("huge");
  auto entry = std::make_unique<HloComputation>("main");
  const Shape wraps = Shape::Array(PrimitiveType::kF32, {4294967296, 4294967296, 4294967296});
  auto p = std::make_unique<HloInstruction>(HloOpcode::kParameter, wraps, "p");
  p->set_parameter_number(0);
  HloInstruction* param = entry->AddInstruction(std::move(p));
  // Each dimension fine, the bytes 2^64: over the 2^62-byte limit.
  const Shape bytes = Shape::Array(PrimitiveType::kF32, {1099511627776, 4194304});
  auto q = std::make_unique<HloInstruction>(HloOpcode::kParameter, bytes, "q");
  q->set_parameter_number(1);
  entry->AddInstruction(std::move(q));
  entry->set_root_instruction(param);
  module.AddComputation(std::move(entry), /*is_entry=*/true);
  const std::string all = ::testing::PrintToString(CollectVerifierErrors(module));
  EXPECT_THAT(all, HasSubstr("%p (computation main): shape f32[4294967296,4294967296,4294967296] has "
                             "79228162514264337593543950336 elements, more than kiln supports"));
  EXPECT_THAT(all, HasSubstr("%q (computation main): shape f32[1099511627776,4194304] has "
                             "4611686018427387904 elements, more than kiln supports"));
  // Shape's own arithmetic saturates instead of wrapping.
  EXPECT_EQ(wraps.num_elements(), std::numeric_limits<int64_t>::max());
  EXPECT_EQ(wraps.byte_size(), std::numeric_limits<int64_t>::max());
  EXPECT_EQ(Shape::Tuple({bytes, bytes}).byte_size(), std::numeric_limits<int64_t>::max());
  EXPECT_TRUE(CheckShapeSize(Shape::Array(PrimitiveType::kF32, {1073741824, 1073741824})).ok());
  EXPECT_FALSE(CheckShapeSize(Shape::Tuple({Shape::Scalar(PrimitiveType::kF32), wraps})).ok());
}

// What the backends and `kiln --no-verify` still check without the verifier: call cycles,
// operands in range, declared shapes of the operands' extent; nothing about exact types.
TEST(VerifierTest, CheckOperandsInRangeWithoutTheVerifier) {
  auto check = [](std::string_view text) {
    auto m = ParseHloModule(text);
    if (!m.ok()) return "parse error: " + m.status().message();
    Status s = CheckOperandsInRange(**m);
    return s.ok() ? std::string("OK") : s.message();
  };
  EXPECT_THAT(check("HloModule m\nENTRY e {\n  x = f32[4] parameter(0)\n  t = (f32[4], f32[4]) tuple(x, x)\n"
                    "  ROOT g = f32[4] get-tuple-element(t), index=5\n}"),
              HasSubstr("%g (line 5): get-tuple-element index=5 is out of range"));
  EXPECT_THAT(check("HloModule m\nENTRY e {\n  x = f32[4] parameter(0)\n  ROOT s = f32[8] slice(x), slice={[0:8]}\n}"),
              HasSubstr("out of range [0:4]"));
  EXPECT_THAT(check("HloModule m\nENTRY e {\n  x = f32[4] parameter(0)\n  ROOT n = f32[8] negate(x)\n}"),
              HasSubstr("%n (line 4): shape f32[8] does not match the shape f32[4] its operands give"));
  EXPECT_THAT(check("HloModule m\nENTRY e {\n  x = f32[4] parameter(0)\n  ROOT n = f64[4] negate(x)\n}"),
              HasSubstr("does not match"));
  // Same widths pass (the verifier would reject s32 <- negate(f32)); so does what it cannot infer.
  EXPECT_EQ(check("HloModule m\nENTRY e {\n  x = f32[4] parameter(0)\n  ROOT n = s32[4] negate(x)\n}"), "OK");
  EXPECT_THAT(check("HloModule m\nf {\n  p = f32[] parameter(0)\n  ROOT c = f32[] call(p), to_apply=f\n}\n"
                    "ENTRY e {\n  a = f32[] parameter(0)\n  ROOT c = f32[] call(a), to_apply=f\n}"),
              HasSubstr("computation f is part of a cycle of computations calling each other"));
}

// Chains of nested calls deeper than kMaxCallDepth are refused (recursive passes overflowed
// the stack at 200000); the check itself is iterative.
TEST(VerifierTest, CallChainDepth) {
  auto chain = [](int n) {
    std::string text = "HloModule deep\n";
    for (int i = 0; i < n; ++i)
      text += "c" + std::to_string(i) + " {\n  p = f32[] parameter(0)\n  ROOT r = f32[] " +
              (i + 1 < n ? "call(p), to_apply=c" + std::to_string(i + 1) : std::string("negate(p)")) + "\n}\n";
    return text + "ENTRY e {\n  a = f32[] parameter(0)\n  ROOT r = f32[] call(a), to_apply=c0\n}\n";
  };
  EXPECT_EQ(Verify(chain(kMaxCallDepth - 1)), "OK");  // plus the entry: kMaxCallDepth
  EXPECT_THAT(Verify(chain(kMaxCallDepth)), HasSubstr("starts a chain of 1025 nested calls, more than kiln supports (1024)"));
  auto deep = ParseHloModule(chain(100000));
  ASSERT_TRUE(deep.ok()) << deep.status().message();
  EXPECT_THAT(CheckOperandsInRange(**deep).message(), HasSubstr("nested calls, more than kiln supports"));
}

TEST(VerifierTest, CallGraphCycle) {
  const std::string text = R"(HloModule m
f {
  p = f32[] parameter(0)
  ROOT c = f32[] call(p), to_apply=g
}
g {
  p = f32[] parameter(0)
  ROOT c = f32[] call(p), to_apply=f
}
ENTRY main {
  a = f32[] parameter(0)
  ROOT c = f32[] call(a), to_apply=f
})";
  EXPECT_THAT(Verify(text), HasSubstr("is part of a cycle of computations calling each other"));
}

}  // namespace
}  // namespace kiln

namespace kiln {
namespace {

// Modules XLA verifies and runs must verify here too.
TEST(VerifierTest, WhatXlaAcceptsVerifies) {
  // after-all joining arrays, not only tokens (the add-dependency style of ordering).
  EXPECT_EQ(Verify("HloModule m\nENTRY e {\n  a = f32[2] parameter(0)\n  t = token[] after-all(a, a)\n"
                   "  ROOT n = f32[2] negate(a)\n}\n"),
            "OK");
  // A dot without dimension numbers: an outer product.
  EXPECT_EQ(Verify("HloModule m\nENTRY e {\n  a = f32[2] parameter(0)\n  b = f32[3] parameter(1)\n"
                   "  ROOT d = f32[2,3] dot(a, b)\n}\n"),
            "OK");
  EXPECT_NE(Verify("HloModule m\nENTRY e {\n  a = f32[2] parameter(0)\n  b = f32[3] parameter(1)\n"
                   "  ROOT d = f32[3,2] dot(a, b)\n}\n"),
            "OK");  // the outer product's shape is still checked
}

}  // namespace
}  // namespace kiln

namespace kiln {
namespace {

// The dynamic-shape custom calls are checked (XLA's verifier takes any operands there and its
// code generators then abort: an f8 array given as a size).
TEST(VerifierTest, DynamicShapeCustomCalls) {
  EXPECT_EQ(Verify("HloModule m\nENTRY e {\n  p = f32[4] parameter(0)\n  n = s32[] parameter(1)\n"
                   "  d = f32[<=4] custom-call(p, n), custom_call_target=\"SliceToDynamic\"\n"
                   "  b = f32[<=4] custom-call(d), custom_call_target=\"SetBound\"\n"
                   "  ROOT t = (f32[4], s32[]) custom-call(b), custom_call_target=\"PadToStatic\"\n}\n"),
            "OK");
  const std::string scale_as_size = Verify(R"(HloModule m
ENTRY %e {
  %scale = f8e8m0fnu[3,128,4] parameter(0)
  %p0 = f32[<=512] parameter(1)
  %c = (f32[512], s32[]) custom-call(%p0), custom_call_target="PadToStatic"
  %gte0 = f32[512] get-tuple-element(%c), index=0
  ROOT %c2 = f32[<=1024] custom-call(%gte0, %scale), custom_call_target="SliceToDynamic"
})");
  EXPECT_NE(scale_as_size.find("SliceToDynamic's result f32[<=1024] must have operand 0's type and bounds"),
            std::string::npos)
      << scale_as_size;
  const std::string f8_size = Verify(
      "HloModule m\nENTRY e {\n  p = f32[4] parameter(0)\n  n = f8e8m0fnu[2] parameter(1)\n"
      "  ROOT d = f32[<=4] custom-call(p, n), custom_call_target=\"SliceToDynamic\"\n}\n");
  EXPECT_NE(f8_size.find("size operand 1 must be an integer scalar"), std::string::npos) << f8_size;
  EXPECT_NE(Verify("HloModule m\nENTRY e {\n  p = f32[4] parameter(0)\n"
                   "  ROOT d = f32[<=4] custom-call(p), custom_call_target=\"SliceToDynamic\"\n}\n")
                .find("one integer size per result dimension"),
            std::string::npos);
  EXPECT_NE(Verify("HloModule m\nENTRY e {\n  p = f32[<=4] parameter(0)\n"
                   "  ROOT t = (f32[4], s64[]) custom-call(p), custom_call_target=\"PadToStatic\"\n}\n")
                .find("must be s32[]"),
            std::string::npos);
  EXPECT_NE(Verify("HloModule m\nENTRY e {\n  p = f32[<=4] parameter(0)\n"
                   "  ROOT t = f32[4] custom-call(p), custom_call_target=\"PadToStatic\"\n}\n")
                .find("returns (the static array, one s32 size per dimension)"),
            std::string::npos);
  EXPECT_NE(Verify("HloModule m\nENTRY e {\n  p = s32[] parameter(0)\n"
                   "  ROOT b = s64[] custom-call(p), custom_call_target=\"SetBound\"\n}\n")
                .find("SetBound takes one operand and returns its shape"),
            std::string::npos);
}

}  // namespace
}  // namespace kiln
