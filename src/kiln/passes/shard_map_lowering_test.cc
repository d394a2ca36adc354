// ShardMapLowering on what jax 0.10 emits for one shard_map over a 2x2 mesh (all_gather over
// x, axis_index over y, ppermute over y; in_specs (P('x','y'), P('y')), out_specs
// (P(None,'y'), P('y'))), in its Shardy and its GSPMD spelling: the per-device program it makes
// runs over 4 participants and gives every device its tile of what jax computed. Also the
// refusal of an unpartitioned sharded program.
#include "kiln/passes/shard_map_lowering.h"

#include <gtest/gtest.h>

#include "kiln/eval/participants.h"
#include "kiln/hlo/computation.h"
#include "kiln/hlo/parser.h"

namespace kiln {
namespace {

constexpr char kShardy[] = R"hlo(
HloModule jit_f, entry_computation_layout={(f32[4,4]{1,0}, f32[4]{0})->(f32[4,4]{1,0}, f32[4]{0})}, frontend_attributes={xla.sdy.meshes={mesh = #sdy.mesh<["x"=2, "y"=2]>}}

xla.sdy.manual_computation_body.1 {
  shard_map.5 = f32[2,2]{1,0} parameter(0)
  all_gather.1 = f32[4,2]{1,0} all-gather(shard_map.5), channel_id=1, replica_groups={{0,2},{1,3}}, dimensions={0}, use_global_device_ids=true
  constant.3 = f32[] constant(2)
  broadcast.1 = f32[4,2]{1,0} broadcast(constant.3), dimensions={}
  mul.1 = f32[4,2]{1,0} multiply(all_gather.1, broadcast.1)
  axis_index.4 = u32[] partition-id()
  constant.4 = u32[] constant(1)
  axis_index.5 = u32[] divide(axis_index.4, constant.4)
  constant.5 = u32[] constant(2)
  axis_index.6 = u32[] remainder(axis_index.5, constant.5)
  axis_index.7 = s32[] convert(axis_index.6)
  convert_element_type.1 = f32[] convert(axis_index.7)
  add.2 = f32[4,2]{1,0} broadcast(convert_element_type.1), dimensions={}
  add.3 = f32[4,2]{1,0} add(mul.1, add.2)
  shard_map.6 = f32[2]{0} parameter(1)
  ppermute.1 = f32[2]{0} collective-permute(shard_map.6), channel_id=1, source_target_pairs={{0,1},{1,0},{2,3},{3,2}}
  ROOT tuple.1 = (f32[4,2]{1,0}, f32[2]{0}) tuple(add.3, ppermute.1)
}

ENTRY main.2 {
  a.1 = f32[4,4]{1,0} parameter(0), sharding={devices=[2,2]<=[4]}, frontend_attributes={xla.sdy.sharding="#sdy.sharding<@mesh, [{\"x\"}, {\"y\"}]>"}
  b.1 = f32[4]{0} parameter(1), sharding={devices=[2,2]<=[2,2]T(1,0) last_tile_dim_replicate}, frontend_attributes={xla.sdy.sharding="#sdy.sharding<@mesh, [{\"y\"}]>"}
  shard_map.15 = (f32[2,2]{1,0}, f32[2]{0}) custom-call(a.1, b.1), custom_call_target="xla.sdy.GlobalToLocalShape", custom_call_has_side_effect=true, frontend_attributes={xla.sdy.in_shardings="#sdy.sharding_per_value<[<@mesh, [{\"x\"}, {\"y\"}]>, <@mesh, [{\"y\"}]>]>",xla.sdy.manual_axes="#sdy<manual_axes{\"x\", \"y\"}>"}
  shard_map.16 = f32[2,2]{1,0} get-tuple-element(shard_map.15), index=0
  shard_map.17 = f32[2]{0} get-tuple-element(shard_map.15), index=1
  shard_map.18 = (f32[4,2]{1,0}, f32[2]{0}) call(shard_map.16, shard_map.17), to_apply=xla.sdy.manual_computation_body.1, frontend_attributes={inlineable="false"}
  shard_map.19 = f32[4,2]{1,0} get-tuple-element(shard_map.18), index=0, frontend_attributes={inlineable="false"}
  shard_map.20 = f32[2]{0} get-tuple-element(shard_map.18), index=1, frontend_attributes={inlineable="false"}
  shard_map.21 = (f32[4,4]{1,0}, f32[4]{0}) custom-call(shard_map.19, shard_map.20), custom_call_target="xla.sdy.LocalToGlobalShape", custom_call_has_side_effect=true, frontend_attributes={xla.sdy.manual_axes="#sdy<manual_axes{\"x\", \"y\"}>",xla.sdy.out_shardings="#sdy.sharding_per_value<[<@mesh, [{}, {\"y\"}]>, <@mesh, [{\"y\"}]>]>"}
  shard_map.22 = f32[4,4]{1,0} get-tuple-element(shard_map.21), index=0
  shard_map.24 = f32[4,4]{1,0} custom-call(shard_map.22), custom_call_target="xla.sdy.FuncResultSharding", custom_call_has_side_effect=true, frontend_attributes={xla.sdy.sharding="#sdy.sharding_per_value<[<@mesh, [{}, {\"y\"}]>]>"}
  reshape.2 = f32[4,4]{1,0} reshape(shard_map.24), sharding={devices=[1,2,2]<=[2,2]T(1,0) last_tile_dim_replicate}
  shard_map.23 = f32[4]{0} get-tuple-element(shard_map.21), index=1
  shard_map.25 = f32[4]{0} custom-call(shard_map.23), custom_call_target="xla.sdy.FuncResultSharding", custom_call_has_side_effect=true, frontend_attributes={xla.sdy.sharding="#sdy.sharding_per_value<[<@mesh, [{\"y\"}]>]>"}
  reshape.3 = f32[4]{0} reshape(shard_map.25), sharding={devices=[2,2]<=[2,2]T(1,0) last_tile_dim_replicate}
  ROOT tuple.3 = (f32[4,4]{1,0}, f32[4]{0}) tuple(shard_map.24, shard_map.25), sharding={{devices=[1,2,2]<=[2,2]T(1,0) last_tile_dim_replicate}, {devices=[2,2]<=[2,2]T(1,0) last_tile_dim_replicate}}
}
)hlo";

constexpr char kGspmd[] = R"hlo(
HloModule jit_f, entry_computation_layout={(f32[4,4]{1,0}, f32[4]{0})->(f32[4,4]{1,0}, f32[4]{0})}

shmap_body.1 {
  a__x_______y____.1 = f32[2,2]{1,0} parameter(0)
  all_gather.1 = f32[4,2]{1,0} all-gather(a__x_______y____.1), channel_id=1, replica_groups={{0,2},{1,3}}, dimensions={0}, use_global_device_ids=true
  constant.3 = f32[] constant(2)
  broadcast.1 = f32[4,2]{1,0} broadcast(constant.3), dimensions={}
  mul.1 = f32[4,2]{1,0} multiply(all_gather.1, broadcast.1)
  axis_index.4 = u32[] partition-id()
  constant.4 = u32[] constant(1)
  axis_index.5 = u32[] divide(axis_index.4, constant.4)
  constant.5 = u32[] constant(2)
  axis_index.6 = u32[] remainder(axis_index.5, constant.5)
  axis_index.7 = s32[] convert(axis_index.6)
  convert_element_type.1 = f32[] convert(axis_index.7)
  add.2 = f32[4,2]{1,0} broadcast(convert_element_type.1), dimensions={}
  add.3 = f32[4,2]{1,0} add(mul.1, add.2)
  a__y____.1 = f32[2]{0} parameter(1)
  ppermute.1 = f32[2]{0} collective-permute(a__y____.1), channel_id=1, source_target_pairs={{0,1},{1,0},{2,3},{3,2}}
  ROOT tuple.1 = (f32[4,2]{1,0}, f32[2]{0}) tuple(add.3, ppermute.1)
}

ENTRY main.2 {
  a.1 = f32[4,4]{1,0} parameter(0), sharding={devices=[2,2]<=[4]}
  shard_map.11 = f32[4,4]{1,0} custom-call(a.1), custom_call_target="Sharding", sharding={devices=[2,2]<=[4]}
  shard_map.12 = f32[2,2]{1,0} custom-call(shard_map.11), custom_call_target="SPMDFullToShardShape", sharding={manual}
  b.1 = f32[4]{0} parameter(1), sharding={devices=[2,2]<=[2,2]T(1,0) last_tile_dim_replicate}
  shard_map.13 = f32[4]{0} custom-call(b.1), custom_call_target="Sharding", sharding={devices=[2,2]<=[2,2]T(1,0) last_tile_dim_replicate}
  shard_map.14 = f32[2]{0} custom-call(shard_map.13), custom_call_target="SPMDFullToShardShape", sharding={manual}
  shard_map.15 = (f32[4,2]{1,0}, f32[2]{0}) call(shard_map.12, shard_map.14), to_apply=shmap_body.1
  shard_map.16 = f32[4,2]{1,0} get-tuple-element(shard_map.15), index=0
  shard_map.18 = f32[4,2]{1,0} custom-call(shard_map.16), custom_call_target="Sharding", sharding={manual}
  shard_map.19 = f32[4,4]{1,0} custom-call(shard_map.18), custom_call_target="SPMDShardToFullShape", sharding={devices=[1,2,2]<=[2,2]T(1,0) last_tile_dim_replicate}
  reshape.2 = f32[4,4]{1,0} reshape(shard_map.19), sharding={devices=[1,2,2]<=[2,2]T(1,0) last_tile_dim_replicate}
  shard_map.17 = f32[2]{0} get-tuple-element(shard_map.15), index=1
  shard_map.20 = f32[2]{0} custom-call(shard_map.17), custom_call_target="Sharding", sharding={manual}
  shard_map.21 = f32[4]{0} custom-call(shard_map.20), custom_call_target="SPMDShardToFullShape", sharding={devices=[2,2]<=[2,2]T(1,0) last_tile_dim_replicate}
  reshape.3 = f32[4]{0} reshape(shard_map.21), sharding={devices=[2,2]<=[2,2]T(1,0) last_tile_dim_replicate}
  ROOT tuple.3 = (f32[4,4]{1,0}, f32[4]{0}) tuple(shard_map.19, shard_map.21), sharding={{devices=[1,2,2]<=[2,2]T(1,0) last_tile_dim_replicate}, {devices=[2,2]<=[2,2]T(1,0) last_tile_dim_replicate}}
}
)hlo";

Literal F32(std::vector<int64_t> dims, std::vector<double> v) {
  return Literal::FromDoubles(Shape::Array(PrimitiveType::kF32, std::move(dims)), v);
}
std::vector<double> Values(const Literal& l) {
  std::vector<double> out;
  for (int64_t i = 0; i < l.element_count(); ++i) out.push_back(l.GetAsDouble(i));
  return out;
}

void CheckLowered(const char* text) {
  auto m = ParseHloModule(text);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  HloModule& module = **m;
  ASSERT_TRUE(IsShardMapProgram(module));
  auto changed = LowerShardMap(module);
  ASSERT_TRUE(changed.ok()) << changed.status().ToString();
  EXPECT_TRUE(*changed);
  EXPECT_EQ(module.header().num_partitions, 4);
  const HloComputation* entry = module.entry_computation();
  EXPECT_EQ(entry->parameter_instruction(0)->shape().ToString(false), "f32[2,2]");
  EXPECT_EQ(entry->parameter_instruction(1)->shape().ToString(false), "f32[2]");
  EXPECT_EQ(entry->root_instruction()->shape().ToString(false), "(f32[4,2], f32[2])");
  ASSERT_TRUE(entry->root_instruction()->sharding().has_value());
  // Lowering again changes nothing.
  auto again = LowerShardMap(module);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_FALSE(*again);
  // Device d = (x, y) = (d / 2, d % 2) holds a[2x:2x+2, 2y:2y+2] and b[2y:2y+2].
  std::vector<std::vector<Literal>> args(4);
  for (int64_t d = 0; d < 4; ++d) {
    const int64_t x = d / 2, y = d % 2;
    std::vector<double> a;
    for (int64_t r = 0; r < 2; ++r)
      for (int64_t c = 0; c < 2; ++c) a.push_back((2 * x + r) * 4 + 2 * y + c);
    args[d].push_back(F32({2, 2}, a));
    args[d].push_back(F32({2}, {double(2 * y), double(2 * y + 1)}));
  }
  auto r = RunParticipants(module, args);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  // jax: out0 = [[0,2,5,7],[8,10,13,15],[16,18,21,23],[24,26,29,31]] split in columns by y;
  // out1 = [2,3,0,1] split by y.
  EXPECT_EQ(Values((*r)[0].tuple_element(0)), (std::vector<double>{0, 2, 8, 10, 16, 18, 24, 26}));
  EXPECT_EQ(Values((*r)[3].tuple_element(0)), (std::vector<double>{5, 7, 13, 15, 21, 23, 29, 31}));
  EXPECT_EQ(Values((*r)[0].tuple_element(1)), (std::vector<double>{2, 3}));
  EXPECT_EQ(Values((*r)[1].tuple_element(1)), (std::vector<double>{0, 1}));
}

TEST(ShardMapLowering, ShardyProgramRunsPerDevice) { CheckLowered(kShardy); }
TEST(ShardMapLowering, GspmdProgramRunsPerDevice) { CheckLowered(kGspmd); }

TEST(ShardMapLowering, RefusesUnpartitionedShardedProgram) {
  auto m = ParseHloModule(R"(
HloModule jit_f
ENTRY e {
  x = f32[8] parameter(0), sharding={devices=[4]<=[4]}
  ROOT y = f32[8] add(x, x)
})");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  auto r = LowerShardMap(**m);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("no automatic SPMD partitioner"), std::string::npos) << r.status().ToString();
}

TEST(ShardMapLowering, RefusesCodeOnGlobalArrays) {
  auto m = ParseHloModule(R"(
HloModule jit_f
body {
  ROOT p = f32[2] parameter(0)
}
ENTRY e {
  x = f32[8] parameter(0), sharding={devices=[4]<=[4]}
  y = f32[8] add(x, x)
  s = f32[8] custom-call(y), custom_call_target="Sharding", sharding={devices=[4]<=[4]}
  l = f32[2] custom-call(s), custom_call_target="SPMDFullToShardShape", sharding={manual}
  c = f32[2] call(l), to_apply=body
  ROOT g = f32[8] custom-call(c), custom_call_target="SPMDShardToFullShape", sharding={devices=[4]<=[4]}
})");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  auto r = LowerShardMap(**m);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("global arrays"), std::string::npos) << r.status().ToString();
}

}  // namespace
}  // namespace kiln
