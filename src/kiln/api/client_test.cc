// The public API end to end on every device this build sees (interpreter and cpu always, cuda
// where a GPU is present): compile, run on literals and on buffers, donation, external memory,
// and the errors a caller gets back as values.
#include "kiln/api/client.h"

#include <gtest/gtest.h>

#include <vector>

#include "kiln/api/environment.h"
#include "kiln/hlo/literal.h"

namespace kiln {
namespace {

constexpr std::string_view kAddMul = R"(HloModule add_mul
ENTRY main {
  a = f32[2,3] parameter(0)
  b = f32[2,3] parameter(1)
  s = f32[2,3] add(a, b)
  m = f32[2,3] multiply(a, b)
  ROOT t = (f32[2,3], f32[2,3]) tuple(s, m)
}
)";

// The state is donated: the result takes over parameter 0's memory.
constexpr std::string_view kDonate = R"(HloModule step, input_output_alias={ {}: (0, {}, must-alias) }
ENTRY main {
  w = f32[4] parameter(0)
  g = f32[4] parameter(1)
  ROOT u = f32[4] subtract(w, g)
}
)";

constexpr std::string_view kIdentity = R"(HloModule ident
ENTRY main {
  ROOT p = f32[3] parameter(0)
}
)";

const Client& TheClient() {
  static const Client* c = Client::Create()->release();
  return *c;
}

Literal F32(std::vector<int64_t> dims, std::vector<float> values) {
  Literal l(Shape::ArrayWithDefaultLayout(PrimitiveType::kF32, dims));
  std::copy(values.begin(), values.end(), l.data<float>().begin());
  return l;
}

std::vector<std::string> Devices() {
  std::vector<std::string> out;
  for (const PlatformInfo& p : TheClient().Platforms())
    if (p.built && !p.devices.empty()) out.push_back(p.name);
  return out;
}

TEST(ClientTest, PlatformsAndDeviceNames) {
  bool interpreter = false, cpu = false;
  for (const PlatformInfo& p : TheClient().Platforms()) {
    interpreter |= p.name == "interpreter" && p.built && p.devices.size() == 1;
    cpu |= p.name == "cpu" && p.built && p.devices.size() == 1;
    if (p.name == "rocm") {  // not built, or built with no AMD GPU to run on (kiln's machines)
      EXPECT_FALSE(p.status.ok());
      EXPECT_TRUE(p.devices.empty());
    }
  }
  EXPECT_TRUE(interpreter);
  EXPECT_TRUE(cpu);
  auto d = TheClient().SelectDevice("interpreter:0");
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(Client::DeviceName(*d), "interpreter:0");
  auto best = TheClient().SelectDevice("");
  ASSERT_TRUE(best.ok());
  EXPECT_NE(best->backend->name(), "interpreter");  // a compiled backend beats the oracle
  auto unknown = TheClient().SelectDevice("tpu");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("unknown device 'tpu' (known: interpreter, cpu, cuda, rocm"),
            std::string::npos);
  EXPECT_EQ(TheClient().SelectDevice("rocm").status().code(), StatusCode::kUnavailable);
  EXPECT_FALSE(TheClient().SelectDevice("cpu:1").ok());
  EXPECT_FALSE(TheClient().SelectDevice("cpu:").ok());
  EXPECT_FALSE(Client::Create({.platforms = {"tpu"}}).ok());
  auto only = Client::Create({.platforms = {"interpreter"}});
  ASSERT_TRUE(only.ok());
  EXPECT_EQ((*only)->registry().AvailableNames(), "interpreter");
}

TEST(ClientTest, BadTextIsAValueWithItsPosition) {
  auto exe = TheClient().CompileText("HloModule m\nENTRY e {\n  ROOT x = f32[] bogus()\n}\n", "cpu");
  ASSERT_FALSE(exe.ok());
  EXPECT_NE(exe.status().message().find("<text>:3:"), std::string::npos) << exe.status().message();
}

TEST(ClientTest, UnknownFlagOfABackendFails) {
  CompileOptions o;
  o.flags["cpu_no_such_flag"] = "1";
  auto exe = TheClient().CompileText(kIdentity, "cpu", o);
  ASSERT_FALSE(exe.ok());
  EXPECT_EQ(exe.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(exe.status().message().find("cpu_row_tiling"), std::string::npos);  // lists the known ones
  o.flags = {{"cuda_graph", "0"}};  // another platform's flag: ignored here
  EXPECT_TRUE(TheClient().CompileText(kIdentity, "cpu", o).ok());
}

TEST(ClientTest, OutOfMemoryIsAStatusNotAnAbort) {
  // 4 TiB of f32: no host has it; the evaluator's allocation fails inside Execute.
  auto exe = TheClient().CompileText(R"(HloModule huge
ENTRY main {
  ROOT i = f32[1099511627776] iota(), iota_dimension=0
}
)",
                                     "interpreter");
  ASSERT_TRUE(exe.ok()) << exe.status().message();
  auto out = (*exe)->Execute({});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), StatusCode::kResourceExhausted) << out.status().message();
}

TEST(EnvironmentTest, FlagNamesOfTheHelp) {
  EXPECT_EQ(FlagNames("cpu_a=on|off  x\ncpu_b=N  y\n"), (std::vector<std::string>{"cpu_a", "cpu_b"}));
}

class DeviceTest : public ::testing::TestWithParam<std::string> {};

TEST_P(DeviceTest, RunOnLiterals) {
  auto exe = TheClient().CompileText(kAddMul, GetParam());
  ASSERT_TRUE(exe.ok()) << exe.status().message();
  EXPECT_EQ((*exe)->platform(), GetParam());
  EXPECT_EQ((*exe)->argument_shapes().size(), 2u);
  EXPECT_EQ((*exe)->result_shapes().size(), 2u);
  EXPECT_FALSE((*exe)->compile_report().summary.empty());
  std::vector<Literal> args;
  args.push_back(F32({2, 3}, {1, 2, 3, 4, 5, 6}));
  args.push_back(F32({2, 3}, {0.5, -1, 2, 0, 10, -3}));
  auto out = (*exe)->Run(args);
  ASSERT_TRUE(out.ok()) << out.status().message();
  ASSERT_TRUE(out->shape().IsTuple());
  EXPECT_EQ(out->tuple_element(0).Get<float>({1, 1}), 15.0f);
  EXPECT_EQ(out->tuple_element(1).Get<float>({1, 2}), -18.0f);
  EXPECT_FALSE((*exe)->Run(std::span<const Literal>(args.data(), 1)).ok());  // too few
}

TEST_P(DeviceTest, ExecuteOnBuffers) {
  auto exe = TheClient().CompileText(kAddMul, GetParam());
  ASSERT_TRUE(exe.ok()) << exe.status().message();
  auto a = TheClient().BufferFromLiteral(F32({2, 3}, {1, 2, 3, 4, 5, 6}), GetParam());
  auto b = TheClient().BufferFromLiteral(F32({2, 3}, {1, 1, 1, 1, 1, 1}), GetParam());
  ASSERT_TRUE(a.ok() && b.ok());
  Buffer* args[] = {a->get(), b->get()};
  for (int run = 0; run < 3; ++run) {  // repeated runs on the same buffers (cuda: graph replay)
    auto out = (*exe)->Execute(args);
    ASSERT_TRUE(out.ok()) << out.status().message();
    ASSERT_EQ(out->size(), 2u);
    EXPECT_EQ((*out)[0]->platform(), GetParam());
    auto s = (*out)[0]->ToLiteral();
    ASSERT_TRUE(s.ok());
    EXPECT_EQ(s->Get<float>({0, 2}), 4.0f);
    EXPECT_FALSE((*a)->is_deleted());  // not donated: only read
  }
  ExecuteOptions discard;
  discard.discard_results = true;
  auto none = (*exe)->Execute(args, discard);
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());

  // Errors: count, shape, device, deleted.
  Buffer* one[] = {a->get()};
  EXPECT_EQ((*exe)->Execute(one).status().code(), StatusCode::kInvalidArgument);
  auto wrong = TheClient().BufferFromLiteral(F32({3, 2}, {1, 2, 3, 4, 5, 6}), GetParam());
  Buffer* bad_shape[] = {a->get(), wrong->get()};
  auto s = (*exe)->Execute(bad_shape);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("argument 1"), std::string::npos) << s.status().message();
  const std::string other = GetParam() == "interpreter" ? "cpu" : "interpreter";
  auto elsewhere = TheClient().BufferFromLiteral(F32({2, 3}, {1, 2, 3, 4, 5, 6}), other);
  Buffer* bad_device[] = {elsewhere->get(), b->get()};
  auto d = (*exe)->Execute(bad_device);
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.status().message().find("lives on " + other + ":0"), std::string::npos) << d.status().message();
  (*b)->Delete();
  EXPECT_EQ((*exe)->Execute(args).status().code(), StatusCode::kFailedPrecondition);
}

TEST_P(DeviceTest, DonatedArgumentIsConsumed) {
  auto exe = TheClient().CompileText(kDonate, GetParam());
  ASSERT_TRUE(exe.ok()) << exe.status().message();
  EXPECT_EQ((*exe)->donated(), (std::vector<bool>{true, false}));
  auto w = TheClient().BufferFromLiteral(F32({4}, {10, 20, 30, 40}), GetParam());
  auto g = TheClient().BufferFromLiteral(F32({4}, {1, 2, 3, 4}), GetParam());
  ASSERT_TRUE(w.ok() && g.ok());
  std::unique_ptr<Buffer> state = std::move(*w);
  for (int step = 0; step < 3; ++step) {  // a training loop: the result is the next state
    Buffer* args[] = {state.get(), g->get()};
    auto out = (*exe)->Execute(args);
    ASSERT_TRUE(out.ok()) << out.status().message();
    EXPECT_TRUE(state->is_deleted());
    auto again = (*exe)->Execute(args);
    ASSERT_FALSE(again.ok());
    EXPECT_NE(again.status().message().find("donated to step"), std::string::npos) << again.status().message();
    state = std::move((*out)[0]);
  }
  auto l = state->ToLiteral();
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(l->Get<float>({3}), 28.0f);  // 40 - 3 * 4
  EXPECT_FALSE((*g)->is_deleted());
}

TEST_P(DeviceTest, ResultNeverSharesAnArgumentItDoesNotOwn) {
  auto exe = TheClient().CompileText(kIdentity, GetParam());
  ASSERT_TRUE(exe.ok()) << exe.status().message();
  auto a = TheClient().BufferFromLiteral(F32({3}, {7, 8, 9}), GetParam());
  Buffer* args[] = {a->get()};
  auto out = (*exe)->Execute(args);
  ASSERT_TRUE(out.ok()) << out.status().message();
  EXPECT_NE((*out)[0]->opaque_pointer(), (*a)->opaque_pointer());
  (*a)->Delete();
  auto l = (*out)[0]->ToLiteral();
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(l->Get<float>({1}), 8.0f);
}

TEST_P(DeviceTest, ExternalMemoryIsReleasedOnce) {
  // Memory the caller owns on the device: a host array for the host backends; for cuda, the
  // device memory of another buffer (as a framework's tensor would be).
  std::vector<float> host = {1, 2, 3};
  auto owner = TheClient().BufferFromLiteral(F32({3}, host), GetParam());
  ASSERT_TRUE(owner.ok());
  void* memory = GetParam() == "cuda" ? (*owner)->opaque_pointer() : host.data();
  int released = 0;
  {
    auto exe = TheClient().CompileText(kIdentity, GetParam());
    ASSERT_TRUE(exe.ok());
    auto wrapped = TheClient().BufferFromPointer(memory, Shape::ArrayWithDefaultLayout(PrimitiveType::kF32, {3}),
                                                 GetParam(), [&] { ++released; });
    ASSERT_TRUE(wrapped.ok()) << wrapped.status().message();
    EXPECT_EQ((*wrapped)->opaque_pointer(), memory);  // no copy
    Buffer* args[] = {wrapped->get()};
    auto out = (*exe)->Execute(args);
    ASSERT_TRUE(out.ok()) << out.status().message();
    auto l = (*out)[0]->ToLiteral();
    ASSERT_TRUE(l.ok());
    EXPECT_EQ(l->Get<float>({2}), 3.0f);
    EXPECT_EQ(released, 0);
  }
  EXPECT_EQ(released, 1);
  EXPECT_FALSE(TheClient().BufferFromPointer(nullptr, Shape::ArrayWithDefaultLayout(PrimitiveType::kF32, {3}),
                                             GetParam()).ok());
}

TEST_P(DeviceTest, StatefulRngStartsFromTheSeed) {
  auto exe = TheClient().CompileText(R"(HloModule rng_state
ENTRY main {
  a = u64[2] rng-get-and-update-state(), delta=4
  b = u64[2] rng-get-and-update-state(), delta=4, control-predecessors={a}
  ROOT t = (u64[2], u64[2]) tuple(a, b)
}
)",
                                     GetParam());
  ASSERT_TRUE(exe.ok()) << exe.status().message();
  ExecuteOptions o;
  o.seed = 42;
  for (int run = 0; run < 2; ++run) {  // every run starts from the seed
    auto out = (*exe)->Run({}, o);
    ASSERT_TRUE(out.ok()) << out.status().message();
    uint64_t a = out->tuple_element(0).Get<uint64_t>({0}), b = out->tuple_element(1).Get<uint64_t>({0});
    EXPECT_EQ(std::min(a, b), 42u);  // each op sees the state once, advanced by the other's delta
    EXPECT_EQ(std::max(a, b), 46u);
    EXPECT_EQ(out->tuple_element(0).Get<uint64_t>({1}), 0u);
  }
}

INSTANTIATE_TEST_SUITE_P(Devices, DeviceTest, ::testing::ValuesIn(Devices()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace kiln
