// Several participants through the public API: Executable::RunParticipants on the interpreter
// and on the cpu (N virtual devices in one process, native collective kernels), each checked
// against the interpreter; the participant count from the module header and from
// CompileOptions; errors for a mismatched count and for Execute on several participants.
#include <gtest/gtest.h>

#include "kiln/api/client.h"
#include "kiln/base/strings.h"

namespace kiln {
namespace {

Literal Ramp(int64_t i, std::vector<int64_t> dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  std::vector<double> v;
  for (int64_t j = 0; j < n; ++j) v.push_back(100.0 * i + j);
  return Literal::FromDoubles(Shape::Array(PrimitiveType::kF32, dims), v);
}

struct Case {
  const char* name;
  const char* body;  // the entry computation, parameter x = f32[8,4]
};

constexpr char kHeader[] = R"(
sum {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] add(a, b)
}
mx {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] maximum(a, b)
}
odd {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  two = f32[] constant(2)
  m = f32[] multiply(a, two)
  ROOT c = f32[] add(m, b)
}
sumbf {
  a = bf16[] parameter(0)
  b = bf16[] parameter(1)
  ROOT c = bf16[] add(a, b)
}
xors {
  a = s32[] parameter(0)
  b = s32[] parameter(1)
  ROOT c = s32[] xor(a, b)
}
mins {
  a = s8[] parameter(0)
  b = s8[] parameter(1)
  ROOT c = s8[] minimum(a, b)
}
cond {
  s = (s32[], f32[8,4]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant(3)
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  s = (s32[], f32[8,4]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  one = s32[] constant(1)
  j = s32[] add(i, one)
  v = f32[8,4] get-tuple-element(s), index=1
  ar = f32[8,4] all-reduce(v), replica_groups={}, to_apply=mx
  h = f32[] constant(0.5)
  hb = f32[8,4] broadcast(h), dimensions={}
  v2 = f32[8,4] multiply(ar, hb)
  ROOT t = (s32[], f32[8,4]) tuple(j, v2)
}
)";

// Bodies valid for any participant count n in {1, 2, 4, 8} (x: f32[8,4]).
const Case kCases[] = {
    {"all_reduce_sum", "ROOT r = f32[8,4] all-reduce(x), replica_groups={}, to_apply=sum"},
    {"all_reduce_max_flattened", "ROOT r = f32[8,4] all-reduce(x), channel_id=1, replica_groups={}, use_global_device_ids=true, to_apply=mx"},
    {"all_reduce_other_reduction", "ROOT r = f32[8,4] all-reduce(x), replica_groups={}, to_apply=odd"},
    {"all_gather_dim1", "ROOT r = f32[8,4N] all-gather(x), dimensions={1}, replica_groups={}"},
    {"all_gather_dim0", "ROOT r = f32[8N,4] all-gather(x), dimensions={0}, replica_groups={}"},
    {"reduce_scatter_dim0", "ROOT r = f32[8/N,4] reduce-scatter(x), dimensions={0}, replica_groups={}, to_apply=sum"},
    {"all_to_all_dim0", "ROOT r = f32[8,4] all-to-all(x), dimensions={0}, replica_groups={}"},
    {"permute_ring", "ROOT r = f32[8,4] collective-permute(x), source_target_pairs=RING"},
    {"replica_id", "id = u32[] replica-id()\n  c = f32[] convert(id)\n  b = f32[8,4] broadcast(c), dimensions={}\n  ROOT r = f32[8,4] add(x, b)"},
    {"async_all_reduce", "s = f32[8,4] all-reduce-start(x), replica_groups={}, to_apply=sum\n  ROOT r = f32[8,4] all-reduce-done(s)"},
    {"broadcast", "ROOT r = f32[8,4] collective-broadcast(x), replica_groups={}"},
    // The native kernels' rearranged paths (a dimension other than the major one).
    {"reduce_scatter_dim1_n_divides_4", "ROOT r = f32[8,4/N] reduce-scatter(x), dimensions={1}, replica_groups={}, to_apply=sum"},
    {"all_to_all_dim1_n_divides_4", "ROOT r = f32[8,4] all-to-all(x), dimensions={1}, replica_groups={}"},
    {"all_gather_start", "s = (f32[8,4], f32[8,4N]) all-gather-start(x), dimensions={1}, replica_groups={}\n  ROOT r = f32[8,4N] all-gather-done(s)"},
    {"permute_start", "s = (f32[8,4], f32[8,4], u32[], u32[]) collective-permute-start(x), source_target_pairs=RING\n  ROOT r = f32[8,4] collective-permute-done(s)"},
    {"all_reduce_tuple", "y = f32[8,4] negate(x)\n  ROOT r = (f32[8,4], f32[8,4]) all-reduce(x, y), replica_groups={}, to_apply=mx"},
    {"all_reduce_bf16", "b = bf16[8,4] convert(x)\n  ROOT r = bf16[8,4] all-reduce(b), replica_groups={}, to_apply=sumbf"},
    {"reduce_scatter_s8_min", "b = s8[8,4] convert(x)\n  ROOT r = s8[8/N,4] reduce-scatter(b), dimensions={0}, replica_groups={}, to_apply=mins"},
    // Reductions the communicator does not compute: gathered and folded by the computation.
    {"reduce_scatter_other_reduction_dim1_n_divides_4", "ROOT r = f32[8,4/N] reduce-scatter(x), dimensions={1}, replica_groups={}, to_apply=odd"},
    {"reduce_scatter_other_reduction_dim0", "ROOT r = f32[8/N,4] reduce-scatter(x), dimensions={0}, replica_groups={}, to_apply=odd"},
    {"all_reduce_xor_s32", "b = s32[8,4] convert(x)\n  ROOT r = s32[8,4] all-reduce(b), replica_groups={}, to_apply=xors"},
    {"all_gather_two_operands_dim1", "y = f32[8,4] negate(x)\n  ROOT r = (f32[8,4N], f32[8,4N]) all-gather(x, y), dimensions={1}, replica_groups={}"},
    {"broadcast_two_operands", "y = f32[8,4] negate(x)\n  ROOT r = (f32[8,4], f32[8,4]) collective-broadcast(x, y), replica_groups={}"},
    {"all_reduce_in_loop", "z = s32[] constant(0)\n  t = (s32[], f32[8,4]) tuple(z, x)\n  w = (s32[], f32[8,4]) while(t), condition=cond, body=body\n  ROOT r = f32[8,4] get-tuple-element(w), index=1"},
};

std::string Instantiate(std::string body, int64_t n) {
  auto replace = [&](const std::string& from, const std::string& to) {
    for (size_t p; (p = body.find(from)) != std::string::npos;) body.replace(p, from.size(), to);
  };
  replace("8/N", std::to_string(8 / n));
  replace("4/N", std::to_string(4 / n));
  replace("8N", std::to_string(8 * n));
  replace("4N", std::to_string(4 * n));
  std::string ring = "{";
  for (int64_t i = 0; i < n; ++i) ring += StrCat(i ? "," : "", "{", i, ",", (i + 1) % n, "}");
  replace("RING", ring + "}");
  return StrCat("HloModule m, replica_count=", n, "\n", kHeader, "ENTRY e {\n  x = f32[8,4] parameter(0)\n  ",
                body, "\n}\n");
}

class Participants : public ::testing::Test {
 protected:
  void SetUp() override {
    auto c = Client::Create();
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    client_ = std::move(c).value();
  }
  std::unique_ptr<Client> client_;
};

TEST_F(Participants, EveryCaseOnInterpreterAndCpuWith1248) {
  for (const Case& c : kCases)
    for (int64_t n : {1, 2, 4, 8}) {
      if (std::string_view(c.name).find("n_divides_4") != std::string_view::npos && 4 % n != 0) continue;
      SCOPED_TRACE(StrCat(c.name, " n=", n));
      const std::string text = Instantiate(c.body, n);
      std::vector<std::vector<Literal>> args(n);
      for (int64_t i = 0; i < n; ++i) args[i].push_back(Ramp(i, {8, 4}));
      std::vector<Literal> want;
      for (const char* device : {"interpreter", "cpu"}) {
        SCOPED_TRACE(device);
        auto exe = client_->CompileText(text, device);
        ASSERT_TRUE(exe.ok()) << exe.status().ToString();
        ASSERT_EQ((*exe)->num_participants(), n);
        // Every collective has a native cpu kernel (kernels/collectives.cc).
        if (std::string_view(device) == "cpu")
          EXPECT_TRUE((*exe)->compile_report().host_fallbacks.empty()) << (*exe)->compile_report().thunk_listing;
        auto got = (*exe)->RunParticipants(args);
        ASSERT_TRUE(got.ok()) << got.status().ToString();
        ASSERT_EQ(static_cast<int64_t>(got->size()), n);
        if (want.empty()) {
          want = std::move(got).value();
          continue;
        }
        for (int64_t i = 0; i < n; ++i)
          EXPECT_TRUE((*got)[i].BitwiseEquals(want[i]))
              << "participant " << i << ": " << (*got)[i].ToShortString() << " vs " << want[i].ToShortString();
      }
    }
}

TEST_F(Participants, GroupModesOn2x2Grid) {
  const char* bodies[] = {
      "ROOT r = f32[8,4] all-reduce(x), replica_groups={{0,1}}, to_apply=sum",
      "ROOT r = f32[8,4] all-reduce(x), channel_id=1, replica_groups={{0},{1}}, to_apply=sum",
      "ROOT r = f32[8,4] all-reduce(x), channel_id=1, replica_groups={{0,3},{1,2}}, use_global_device_ids=true, to_apply=sum",
      "ROOT r = f32[32,4] all-gather(x), channel_id=1, replica_groups={{0,1}}, dimensions={0}, use_global_device_ids=false",
      "ROOT r = f32[8,4] all-to-all(x), channel_id=1, replica_groups={{0,1}}, dimensions={0}",
      "ROOT r = f32[8,4] collective-permute(x), channel_id=1, source_target_pairs={{0,1}}",
      "ROOT r = f32[8,4] collective-permute(x), source_target_pairs={{1,0}}",
  };
  for (const char* body : bodies) {
    SCOPED_TRACE(body);
    const std::string text = StrCat("HloModule m, replica_count=2, num_partitions=2\n", kHeader,
                                    "ENTRY e {\n  x = f32[8,4] parameter(0)\n  ", body, "\n}\n");
    std::vector<std::vector<Literal>> args(4);
    for (int64_t i = 0; i < 4; ++i) args[i].push_back(Ramp(i, {8, 4}));
    std::vector<Literal> want;
    for (const char* device : {"interpreter", "cpu"}) {
      auto exe = client_->CompileText(text, device);
      ASSERT_TRUE(exe.ok()) << exe.status().ToString();
      auto got = (*exe)->RunParticipants(args);
      ASSERT_TRUE(got.ok()) << device << ": " << got.status().ToString();
      if (want.empty()) {
        want = std::move(got).value();
        continue;
      }
      for (int64_t i = 0; i < 4; ++i) EXPECT_TRUE((*got)[i].BitwiseEquals(want[i])) << "participant " << i;
    }
  }
}

TEST_F(Participants, SendRecvAndRaggedAllToAllOnCpu) {
  // Native kernels at the run's rendezvous (no evaluator kernel).
  const char* kRing = R"(HloModule m, num_partitions=3
ENTRY e {
  x = f32[8,4] parameter(0)
  tok = token[] after-all()
  rv = (f32[8,4], u32[], token[]) recv(tok), channel_id=5, frontend_attributes={_xla_send_recv_source_target_pairs="{{0,1},{1,2},{2,0}}"}
  sd = (f32[8,4], u32[], token[]) send(x, tok), channel_id=5, frontend_attributes={_xla_send_recv_source_target_pairs="{{0,1},{1,2},{2,0}}"}
  rd = (f32[8,4], token[]) recv-done(rv), channel_id=5, frontend_attributes={_xla_send_recv_source_target_pairs="{{0,1},{1,2},{2,0}}"}
  sdd = token[] send-done(sd), channel_id=5, frontend_attributes={_xla_send_recv_source_target_pairs="{{0,1},{1,2},{2,0}}"}
  ROOT g = f32[8,4] get-tuple-element(rd), index=0
})";
  auto exe = client_->CompileText(kRing, "cpu");
  ASSERT_TRUE(exe.ok()) << exe.status().ToString();
  EXPECT_TRUE((*exe)->compile_report().host_fallbacks.empty()) << (*exe)->compile_report().thunk_listing;
  std::vector<std::vector<Literal>> args(3);
  for (int64_t i = 0; i < 3; ++i) args[i].push_back(Ramp(i, {8, 4}));
  auto got = (*exe)->RunParticipants(args);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  for (int64_t i = 0; i < 3; ++i) EXPECT_TRUE((*got)[i].BitwiseEquals(Ramp((i + 2) % 3, {8, 4}))) << i;
  const char* kRagged = R"(HloModule m, replica_count=2
ENTRY e {
  x = f32[8,4] parameter(0)
  out = f32[8,4] constant({...})
  io = s32[2] constant({0, 3})
  ss = s32[2] constant({3, 5})
  oo = s32[2] parameter(1)
  rs = s32[2] constant({0, 0})
  ROOT r = f32[8,4] ragged-all-to-all(x, out, io, ss, oo, rs), replica_groups={{0,1}}
})";
  ParseModuleOptions po;
  po.fill_elided_constants = true;
  auto module = ParseModule(kRagged, "<ragged>", po);
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  std::vector<std::vector<Literal>> rargs(2);
  for (int64_t i = 0; i < 2; ++i) {
    rargs[i].push_back(Ramp(i, {8, 4}));
    // Participant 0 writes rows 0..2 of each output, participant 1 rows 3..7.
    rargs[i].push_back(Literal::FromInt64s(Shape::Array(PrimitiveType::kS32, {2}), {i == 0 ? 0 : 3, i == 0 ? 0 : 3}));
  }
  std::vector<Literal> want;
  for (const char* device : {"interpreter", "cpu"}) {
    auto e = client_->Compile(**module, device);
    ASSERT_TRUE(e.ok()) << e.status().ToString();
    if (std::string_view(device) == "cpu")
      EXPECT_TRUE((*e)->compile_report().host_fallbacks.empty()) << (*e)->compile_report().thunk_listing;
    auto r = (*e)->RunParticipants(rargs);
    ASSERT_TRUE(r.ok()) << device << ": " << r.status().ToString();
    if (want.empty()) {
      want = std::move(r).value();
      continue;
    }
    for (int64_t i = 0; i < 2; ++i) EXPECT_TRUE((*r)[i].BitwiseEquals(want[i])) << "participant " << i;
  }
}

// One participant sending to itself, in a plain Run: the executable's own rendezvous carries the
// data; the send is ordered before the recv-done written above it (passes/send_recv_ordering.h).
TEST_F(Participants, SelfSendInAPlainRunOnCpu) {
  const char* kSelf = R"(HloModule m
ENTRY e {
  x = f32[8,4] parameter(0)
  tok = token[] after-all()
  rv = (f32[8,4], u32[], token[]) recv(tok), channel_id=5, frontend_attributes={_xla_send_recv_source_target_pairs="{{0,0}}"}
  rd = (f32[8,4], token[]) recv-done(rv), channel_id=5, frontend_attributes={_xla_send_recv_source_target_pairs="{{0,0}}"}
  sd = (f32[8,4], u32[], token[]) send(x, tok), channel_id=5, frontend_attributes={_xla_send_recv_source_target_pairs="{{0,0}}"}
  sdd = token[] send-done(sd), channel_id=5, frontend_attributes={_xla_send_recv_source_target_pairs="{{0,0}}"}
  ROOT g = f32[8,4] get-tuple-element(rd), index=0
})";
  for (const char* device : {"interpreter", "cpu"}) {
    SCOPED_TRACE(device);
    auto exe = client_->CompileText(kSelf, device);
    ASSERT_TRUE(exe.ok()) << exe.status().ToString();
    if (std::string_view(device) == "cpu")
      EXPECT_TRUE((*exe)->compile_report().host_fallbacks.empty()) << (*exe)->compile_report().thunk_listing;
    std::vector<Literal> one;
    one.push_back(Ramp(3, {8, 4}));
    auto got = (*exe)->Run(one);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_TRUE(got->BitwiseEquals(Ramp(3, {8, 4}))) << got->ToShortString();
  }
}

TEST_F(Participants, NativeKernelsOnCpu) {
  auto exe = client_->CompileText(Instantiate(kCases[0].body, 2), "cpu");
  ASSERT_TRUE(exe.ok()) << exe.status().ToString();
  const std::string& listing = (*exe)->compile_report().thunk_listing;
  EXPECT_NE(listing.find("collective[all-reduce"), std::string::npos) << listing;
  EXPECT_EQ(listing.find("evaluator[all-reduce"), std::string::npos) << listing;
}

TEST_F(Participants, OverrideCountAndErrors) {
  const std::string text = Instantiate(kCases[0].body, 4);
  CompileOptions o;
  o.replica_count = 2;
  auto exe = client_->CompileText(text, "cpu", o);
  ASSERT_TRUE(exe.ok()) << exe.status().ToString();
  EXPECT_EQ((*exe)->num_participants(), 2);
  std::vector<std::vector<Literal>> three(3);
  for (auto& a : three) a.push_back(Ramp(0, {8, 4}));
  auto r = (*exe)->RunParticipants(three);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("runs over 2 participants"), std::string::npos) << r.status().ToString();
  std::vector<Literal> one;
  one.push_back(Ramp(0, {8, 4}));
  auto single = (*exe)->Run(one);
  ASSERT_FALSE(single.ok());
  EXPECT_NE(single.status().message().find("ExecuteParticipants"), std::string::npos) << single.status().ToString();
}

TEST_F(Participants, MissingPeerFailsFastOnCpu) {
  // Replica 1 skips the all-reduce: replica 0 must not hang.
  const std::string text = StrCat("HloModule m, replica_count=2\n", kHeader, R"(
with_ar {
  p = f32[8,4] parameter(0)
  ROOT ar = f32[8,4] all-reduce(p), replica_groups={}, to_apply=sum
}
without {
  ROOT p = f32[8,4] parameter(0)
}
ENTRY e {
  x = f32[8,4] parameter(0)
  r = u32[] replica-id()
  b = s32[] convert(r)
  ROOT c = f32[8,4] conditional(b, x, x), branch_computations={with_ar, without}
})");
  for (const char* device : {"interpreter", "cpu"}) {
    SCOPED_TRACE(device);
    auto exe = client_->CompileText(text, device);
    ASSERT_TRUE(exe.ok()) << exe.status().ToString();
    std::vector<std::vector<Literal>> args(2);
    for (auto& a : args) a.push_back(Ramp(0, {8, 4}));
    ExecuteOptions eo;
    eo.collective_timeout_ms = 5000;
    auto r = (*exe)->RunParticipants(args, eo);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.status().message().find("participant"), std::string::npos) << r.status().ToString();
  }
}

}  // namespace
}  // namespace kiln
