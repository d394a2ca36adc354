// The collectives over several participants (eval/participants.h): every op, its -start/-done
// and async-start forms, replica groups in list and iota forms, and the four group modes of
// eval/collective_groups.h, each participant's result checked by hand.
#include <gtest/gtest.h>

#include <functional>

#include "kiln/base/strings.h"
#include "kiln/eval/collective_groups.h"
#include "kiln/eval/evaluator.h"
#include "kiln/eval/participants.h"
#include "kiln/hlo/parser.h"

namespace kiln {
namespace {

constexpr char kSum[] = R"(
sum {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] add(a, b)
}
)";

Literal F32(std::vector<int64_t> dims, std::vector<double> v) {
  return Literal::FromDoubles(Shape::Array(PrimitiveType::kF32, std::move(dims)), v);
}
std::vector<double> Values(const Literal& l) {
  std::vector<double> out;
  for (int64_t i = 0; i < l.element_count(); ++i) out.push_back(l.GetAsDouble(i));
  return out;
}
// Participant i's argument: f32[n] with elements 10*i + j.
Literal Ramp(int64_t i, int64_t n = 4) {
  std::vector<double> v;
  for (int64_t j = 0; j < n; ++j) v.push_back(10.0 * i + j);
  return F32({n}, v);
}

StatusOr<std::vector<Literal>> TryRun(std::string_view hlo, int64_t replicas, int64_t partitions,
                                      const std::function<std::vector<Literal>(int64_t)>& args,
                                      std::chrono::milliseconds timeout = std::chrono::seconds(20)) {
  KILN_ASSIGN_OR_RETURN(std::unique_ptr<HloModule> m, ParseHloModule(hlo));
  std::vector<std::vector<Literal>> sets;
  for (int64_t i = 0; i < replicas * partitions; ++i) sets.push_back(args(i));
  ParticipantsOptions o;
  o.replica_count = replicas;
  o.num_partitions = partitions;
  o.timeout = timeout;
  return RunParticipants(*m, sets, o);
}

std::vector<Literal> RunAll(std::string_view hlo, int64_t replicas, int64_t partitions,
                         const std::function<std::vector<Literal>(int64_t)>& args) {
  auto r = TryRun(hlo, replicas, partitions, args);
  EXPECT_TRUE(r.ok()) << r.status().ToString() << "\n" << hlo;
  if (!r.ok()) return {};
  return std::move(r).value();
}

std::vector<Literal> OneRamp(int64_t i) {
  std::vector<Literal> v;
  v.push_back(Ramp(i));
  return v;
}

TEST(Collectives, AllReduceSumsOverAllReplicas) {
  auto r = RunAll(StrCat(kSum, R"(
ENTRY e {
  x = f32[4] parameter(0)
  ROOT ar = f32[4] all-reduce(x), replica_groups={}, to_apply=sum
})"), 4, 1, OneRamp);
  ASSERT_EQ(r.size(), 4u);
  for (const Literal& l : r) EXPECT_EQ(Values(l), (std::vector<double>{60, 64, 68, 72}));
}

TEST(Collectives, AllReduceGroupsListAndIota) {
  const char* kMax = R"(
mx {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] maximum(a, b)
}
)";
  for (const char* groups : {"{{0,2},{1,3}}", "[2,2]<=[2,2]T(1,0)"}) {
    SCOPED_TRACE(groups);
    auto r = RunAll(StrCat(kMax, "ENTRY e {\n  x = f32[4] parameter(0)\n  ROOT ar = f32[4] all-reduce(x), replica_groups=",
                        groups, ", to_apply=mx\n}"),
                 4, 1, OneRamp);
    ASSERT_EQ(r.size(), 4u);
    EXPECT_EQ(Values(r[0]), Values(Ramp(2)));
    EXPECT_EQ(Values(r[2]), Values(Ramp(2)));
    EXPECT_EQ(Values(r[1]), Values(Ramp(3)));
    EXPECT_EQ(Values(r[3]), Values(Ramp(3)));
  }
  // [2,2]<=[4] is {{0,1},{2,3}}.
  auto r = RunAll(StrCat(kSum, R"(
ENTRY e {
  x = f32[4] parameter(0)
  ROOT ar = f32[4] all-reduce(x), replica_groups=[2,2]<=[4], to_apply=sum
})"), 4, 1, OneRamp);
  ASSERT_EQ(r.size(), 4u);
  EXPECT_EQ(Values(r[1]), (std::vector<double>{10, 12, 14, 16}));
  EXPECT_EQ(Values(r[3]), (std::vector<double>{50, 52, 54, 56}));
}

TEST(Collectives, AllReduceAnyComputationInRankOrderAndTuples) {
  // f(a, b) = 2a + b is not associative: ((x0*2 + x1)*2 + x2).
  auto r = RunAll(R"(
f {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  two = f32[] constant(2)
  m = f32[] multiply(a, two)
  ROOT c = f32[] add(m, b)
}
ENTRY e {
  x = f32[4] parameter(0)
  y = f32[2] parameter(1)
  ROOT ar = (f32[4], f32[2]) all-reduce(x, y), replica_groups={{0,1,2}}, to_apply=f
})",
               3, 1, [](int64_t i) {
                 std::vector<Literal> v;
                 v.push_back(Ramp(i));
                 v.push_back(F32({2}, {double(i), 1}));
                 return v;
               });
  ASSERT_EQ(r.size(), 3u);
  for (const Literal& l : r) {
    EXPECT_EQ(Values(l.tuple_element(0)), (std::vector<double>{40, 47, 54, 61}));
    EXPECT_EQ(Values(l.tuple_element(1)), (std::vector<double>{4, 7}));
  }
}

TEST(Collectives, AllGatherConcatenatesInRankOrder) {
  auto r = RunAll(R"(
ENTRY e {
  x = f32[4] parameter(0)
  r = f32[2,2] reshape(x)
  ROOT ag = f32[2,6] all-gather(r), dimensions={1}, replica_groups={{2,0,1}}
})", 3, 1, OneRamp);
  ASSERT_EQ(r.size(), 3u);
  for (const Literal& l : r)
    EXPECT_EQ(Values(l), (std::vector<double>{20, 21, 0, 1, 10, 11, 22, 23, 2, 3, 12, 13}));
}

TEST(Collectives, ReduceScatterGivesEachRankItsChunk) {
  auto r = RunAll(StrCat(kSum, R"(
ENTRY e {
  x = f32[4] parameter(0)
  ROOT rs = f32[2] reduce-scatter(x), dimensions={0}, replica_groups={{1,0}}, to_apply=sum
})"), 2, 1, OneRamp);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(Values(r[1]), (std::vector<double>{10, 12}));  // rank 0
  EXPECT_EQ(Values(r[0]), (std::vector<double>{14, 16}));  // rank 1
}

TEST(Collectives, AllToAllArrayAndTupleForms) {
  auto r = RunAll(R"(
ENTRY e {
  x = f32[4] parameter(0)
  ROOT a = f32[4] all-to-all(x), dimensions={0}
})", 2, 1, OneRamp);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(Values(r[0]), (std::vector<double>{0, 1, 10, 11}));
  EXPECT_EQ(Values(r[1]), (std::vector<double>{2, 3, 12, 13}));
  auto t = RunAll(R"(
ENTRY e {
  x = f32[4] parameter(0)
  a = f32[2] slice(x), slice={[0:2]}
  b = f32[2] slice(x), slice={[2:4]}
  ROOT t = (f32[2], f32[2]) all-to-all(a, b), replica_groups={{0,1}}
})", 2, 1, OneRamp);
  ASSERT_EQ(t.size(), 2u);
  EXPECT_EQ(Values(t[0].tuple_element(0)), (std::vector<double>{0, 1}));
  EXPECT_EQ(Values(t[0].tuple_element(1)), (std::vector<double>{10, 11}));
  EXPECT_EQ(Values(t[1].tuple_element(0)), (std::vector<double>{2, 3}));
  EXPECT_EQ(Values(t[1].tuple_element(1)), (std::vector<double>{12, 13}));
}

TEST(Collectives, RaggedAllToAll) {
  // Participant i sends rows [0, i+1) to 0 and [i+1, 4) to 1; receivers place them at the
  // offsets the sender names.
  auto r = RunAll(R"(
ENTRY e {
  x = f32[4] parameter(0)
  out = f32[6] parameter(1)
  io = s32[2] parameter(2)
  ss = s32[2] parameter(3)
  oo = s32[2] parameter(4)
  rs = s32[2] parameter(5)
  ROOT r = f32[6] ragged-all-to-all(x, out, io, ss, oo, rs), replica_groups={{0,1}}
})",
               2, 1, [](int64_t i) {
                 auto s32 = [](std::vector<int64_t> v) {
                   return Literal::FromInt64s(Shape::Array(PrimitiveType::kS32, {2}), v);
                 };
                 std::vector<Literal> v;
                 v.push_back(Ramp(i));
                 v.push_back(F32({6}, {-1, -1, -1, -1, -1, -1}));
                 v.push_back(s32({0, i + 1}));
                 v.push_back(s32({i + 1, 3 - i}));
                 // participant 0 writes at 0 in both outputs; participant 1 after 0's rows.
                 v.push_back(i == 0 ? s32({0, 0}) : s32({1, 3}));
                 v.push_back(s32({0, 0}));
                 return v;
               });
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(Values(r[0]), (std::vector<double>{0, 10, 11, -1, -1, -1}));
  EXPECT_EQ(Values(r[1]), (std::vector<double>{1, 2, 3, 12, 13, -1}));
}

TEST(Collectives, CollectivePermuteCyclesPartialPairsAndZeros) {
  auto r = RunAll(R"(
ENTRY e {
  x = f32[4] parameter(0)
  cyc = f32[4] collective-permute(x), source_target_pairs={{0,1},{1,2},{2,0}}
  part = f32[4] collective-permute(x), source_target_pairs={{0,2}}
  ROOT t = (f32[4], f32[4]) tuple(cyc, part)
})", 3, 1, OneRamp);
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(Values(r[0].tuple_element(0)), Values(Ramp(2)));
  EXPECT_EQ(Values(r[1].tuple_element(0)), Values(Ramp(0)));
  EXPECT_EQ(Values(r[2].tuple_element(0)), Values(Ramp(1)));
  EXPECT_EQ(Values(r[0].tuple_element(1)), (std::vector<double>{0, 0, 0, 0}));
  EXPECT_EQ(Values(r[1].tuple_element(1)), (std::vector<double>{0, 0, 0, 0}));
  EXPECT_EQ(Values(r[2].tuple_element(1)), Values(Ramp(0)));
}

TEST(Collectives, CollectivePermuteWithChannelUsesPartitionIds) {
  // 2 replicas x 2 partitions; devices 0..3 = (r0,p0) (r0,p1) (r1,p0) (r1,p1).
  auto r = RunAll(R"(
ENTRY e {
  x = f32[4] parameter(0)
  ROOT cp = f32[4] collective-permute(x), channel_id=1, source_target_pairs={{0,1},{1,0}}
})", 2, 2, OneRamp);
  ASSERT_EQ(r.size(), 4u);
  EXPECT_EQ(Values(r[0]), Values(Ramp(1)));
  EXPECT_EQ(Values(r[1]), Values(Ramp(0)));
  EXPECT_EQ(Values(r[2]), Values(Ramp(3)));
  EXPECT_EQ(Values(r[3]), Values(Ramp(2)));
}

TEST(Collectives, CollectiveBroadcastFromRankZero) {
  auto r = RunAll(R"(
ENTRY e {
  x = f32[4] parameter(0)
  ROOT b = f32[4] collective-broadcast(x), replica_groups={{1,0},{2,3}}
})", 4, 1, OneRamp);
  ASSERT_EQ(r.size(), 4u);
  EXPECT_EQ(Values(r[0]), Values(Ramp(1)));
  EXPECT_EQ(Values(r[1]), Values(Ramp(1)));
  EXPECT_EQ(Values(r[2]), Values(Ramp(2)));
  EXPECT_EQ(Values(r[3]), Values(Ramp(2)));
}

TEST(Collectives, ReplicaAndPartitionIds) {
  auto r = RunAll(R"(
ENTRY e {
  r = u32[] replica-id()
  p = u32[] partition-id()
  ROOT t = (u32[], u32[]) tuple(r, p)
})", 2, 3, [](int64_t) { return std::vector<Literal>{}; });
  ASSERT_EQ(r.size(), 6u);
  for (int64_t i = 0; i < 6; ++i) {
    EXPECT_EQ(r[i].tuple_element(0).GetAsInt64(0), i / 3);
    EXPECT_EQ(r[i].tuple_element(1).GetAsInt64(0), i % 3);
  }
}

// The four group modes on 2 replicas x 2 partitions; each participant contributes 1 << device.
TEST(Collectives, GroupModes) {
  auto run = [](std::string_view attrs) {
    return RunAll(StrCat(R"(
sum {
  a = s32[] parameter(0)
  b = s32[] parameter(1)
  ROOT c = s32[] add(a, b)
}
ENTRY e {
  x = s32[] parameter(0)
  ROOT ar = s32[] all-reduce(x), )", attrs, ", to_apply=sum\n}"),
               2, 2, [](int64_t i) {
                 std::vector<Literal> v;
                 v.push_back(Literal::FromInt64s(Shape::Array(PrimitiveType::kS32, {}), {1 << i}));
                 return v;
               });
  };
  auto sums = [](const std::vector<Literal>& r) {
    std::vector<int64_t> v;
    for (const Literal& l : r) v.push_back(l.GetAsInt64(0));
    return v;
  };
  // cross-replica: replicas {0,1} within each partition: devices {0,2} and {1,3}.
  EXPECT_EQ(sums(run("replica_groups={{0,1}}")), (std::vector<int64_t>{5, 10, 5, 10}));
  // cross-replica-and-partition: replica 0 and 1, every partition: all four.
  EXPECT_EQ(sums(run("channel_id=1, replica_groups={{0,1}}")),
            (std::vector<int64_t>{15, 15, 15, 15}));
  // ... and replica groups {{0},{1}}: each replica's two partitions.
  EXPECT_EQ(sums(run("channel_id=1, replica_groups={{0},{1}}")),
            (std::vector<int64_t>{3, 3, 12, 12}));
  // flattened-id: global ids.
  EXPECT_EQ(sums(run("channel_id=1, replica_groups={{0,3},{1,2}}, use_global_device_ids=true")),
            (std::vector<int64_t>{9, 6, 6, 9}));
  // cross-partition (all-to-all with a channel): partitions within each replica.
  auto a2a = RunAll(R"(
ENTRY e {
  x = f32[4] parameter(0)
  ROOT a = f32[4] all-to-all(x), channel_id=2, replica_groups={{0,1}}, dimensions={0}
})", 2, 2, OneRamp);
  ASSERT_EQ(a2a.size(), 4u);
  EXPECT_EQ(Values(a2a[0]), (std::vector<double>{0, 1, 10, 11}));
  EXPECT_EQ(Values(a2a[3]), (std::vector<double>{22, 23, 32, 33}));
}

TEST(Collectives, GroupModeErrors) {
  auto m = ParseHloModule(StrCat(kSum, R"(
ENTRY e {
  x = f32[4] parameter(0)
  ROOT ar = f32[4] all-reduce(x), replica_groups={{0,1}}, use_global_device_ids=true, to_apply=sum
})"));
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  const HloInstruction* ar = (*m)->entry_computation()->root_instruction();
  auto g = CollectiveGroupOf(*ar, DeviceGrid{2, 1}, 0);
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("needs a channel_id"), std::string::npos);
  auto r = TryRun(StrCat(kSum, R"(
ENTRY e {
  x = f32[4] parameter(0)
  ROOT ar = f32[4] all-reduce(x), replica_groups={{0,1}}, to_apply=sum
})"), 3, 1, OneRamp);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << r.status().ToString();
  EXPECT_NE(r.status().message().find("participant 2"), std::string::npos) << r.status().ToString();
  EXPECT_NE(r.status().message().find("in no replica group"), std::string::npos);
}

TEST(Collectives, AsyncFormsAndWrappers) {
  auto r = RunAll(StrCat(kSum, R"(
rs_body {
  p = f32[4] parameter(0)
  ROOT rs = f32[2] reduce-scatter(p), dimensions={0}, replica_groups={{0,1}}, to_apply=sum
}
ENTRY e {
  x = f32[4] parameter(0)
  ars = f32[4] all-reduce-start(x), replica_groups={}, to_apply=sum
  ard = f32[4] all-reduce-done(ars)
  ags = (f32[4], f32[8]) all-gather-start(ard), dimensions={0}, replica_groups={{0,1}}
  agd = f32[8] all-gather-done(ags)
  cps = (f32[8], f32[8], u32[], u32[]) collective-permute-start(agd), source_target_pairs={{0,1},{1,0}}
  cpd = f32[8] collective-permute-done(cps)
  as = ((f32[4]), f32[2], s32[]) async-start(x), calls=rs_body
  ad = f32[2] async-done(as)
  ROOT t = (f32[8], f32[2]) tuple(cpd, ad)
})"), 2, 1, OneRamp);
  ASSERT_EQ(r.size(), 2u);
  for (const Literal& l : r)
    EXPECT_EQ(Values(l.tuple_element(0)), (std::vector<double>{10, 12, 14, 16, 10, 12, 14, 16}));
  EXPECT_EQ(Values(r[0].tuple_element(1)), (std::vector<double>{10, 12}));
  EXPECT_EQ(Values(r[1].tuple_element(1)), (std::vector<double>{14, 16}));
}

TEST(Collectives, SendRecvRing) {
  auto r = RunAll(R"(
ENTRY e {
  x = f32[4] parameter(0)
  tok = token[] after-all()
  rv = (f32[4], u32[], token[]) recv(tok), channel_id=5, frontend_attributes={_xla_send_recv_source_target_pairs="{{0,1},{1,2},{2,0}}"}
  sd = (f32[4], u32[], token[]) send(x, tok), channel_id=5, frontend_attributes={_xla_send_recv_source_target_pairs="{{0,1},{1,2},{2,0}}"}
  rd = (f32[4], token[]) recv-done(rv), channel_id=5, frontend_attributes={_xla_send_recv_source_target_pairs="{{0,1},{1,2},{2,0}}"}
  sdd = token[] send-done(sd), channel_id=5, frontend_attributes={_xla_send_recv_source_target_pairs="{{0,1},{1,2},{2,0}}"}
  ROOT g = f32[4] get-tuple-element(rd), index=0
})", 1, 3, OneRamp);
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(Values(r[0]), Values(Ramp(2)));
  EXPECT_EQ(Values(r[1]), Values(Ramp(0)));
  EXPECT_EQ(Values(r[2]), Values(Ramp(1)));
}

TEST(Collectives, CollectiveInALoopMeetsOncePerIteration) {
  auto r = RunAll(StrCat(kSum, R"(
cond {
  s = (s32[], f32[4]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant(3)
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  s = (s32[], f32[4]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  one = s32[] constant(1)
  j = s32[] add(i, one)
  v = f32[4] get-tuple-element(s), index=1
  ar = f32[4] all-reduce(v), replica_groups={}, to_apply=sum
  ROOT t = (s32[], f32[4]) tuple(j, ar)
}
ENTRY e {
  x = f32[4] parameter(0)
  z = s32[] constant(0)
  t = (s32[], f32[4]) tuple(z, x)
  w = (s32[], f32[4]) while(t), condition=cond, body=body
  ROOT v = f32[4] get-tuple-element(w), index=1
})"), 2, 1, OneRamp);
  ASSERT_EQ(r.size(), 2u);
  // (x0 + x1) * 2 * 2
  for (const Literal& l : r) EXPECT_EQ(Values(l), (std::vector<double>{40, 48, 56, 64}));
}

TEST(Collectives, MissingPeerIsAnErrorNotAHang) {
  // Replica 1 takes the branch without the all-reduce and ends its program.
  const std::string hlo = StrCat(kSum, R"(
with_ar {
  p = f32[4] parameter(0)
  ROOT ar = f32[4] all-reduce(p), replica_groups={}, to_apply=sum
}
without {
  ROOT p = f32[4] parameter(0)
}
ENTRY e {
  x = f32[4] parameter(0)
  r = u32[] replica-id()
  b = s32[] convert(r)
  ROOT c = f32[4] conditional(b, x, x), branch_computations={with_ar, without}
})");
  auto r = TryRun(hlo, 2, 1, OneRamp);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("without joining"), std::string::npos) << r.status().ToString();
}

TEST(Collectives, FailingParticipantReleasesTheOthers) {
  // Participant 1 divides by a wrong-shaped argument and fails before the all-reduce.
  auto r = TryRun(StrCat(kSum, R"(
ENTRY e {
  x = f32[4] parameter(0)
  ROOT ar = f32[4] all-reduce(x), replica_groups={}, to_apply=sum
})"), 2, 1, [](int64_t i) { return std::vector<Literal>{i == 1 ? Ramp(1, 3) : Ramp(0)}; });
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << r.status().ToString();
  EXPECT_NE(r.status().message().find("participant 1"), std::string::npos) << r.status().ToString();
}

TEST(Collectives, AloneTheEvaluatorRefusesGroupsOfSeveral) {
  auto m = ParseHloModule(StrCat(kSum, R"(
ENTRY e {
  x = f32[4] parameter(0)
  ROOT ar = f32[4] all-reduce(x), replica_groups={}, to_apply=sum
})"));
  ASSERT_TRUE(m.ok());
  Evaluator e(EvaluatorOptions{.replica_count = 2});
  auto r = e.Run(**m, std::vector<Literal>{Ramp(0)});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(r.status().message().find("runs alone"), std::string::npos) << r.status().ToString();
}

}  // namespace
}  // namespace kiln
