#include "kiln/tools/backend_registry.h"

#include <gtest/gtest.h>

#include "kiln/hlo/parser.h"

namespace kiln {
namespace {

TEST(BackendRegistryTest, SelectDevice) {
  BackendRegistry registry;
  RegisterBuiltinBackends(registry);
  ASSERT_NE(registry.Find("interpreter"), nullptr);
  ASSERT_NE(registry.Find("cpu"), nullptr);
#if defined(KILN_HAVE_CUDA_COMPILER)
  // The CUDA backend is registered first; it is the best one only where it sees a GPU.
  const std::string available = "cuda, cpu, interpreter";
  auto gpus = registry.Find("cuda")->Devices();
  EXPECT_EQ(registry.Best(), registry.Find(gpus.ok() && !gpus->empty() ? "cuda" : "cpu"));
#else
  const std::string available = "cpu, interpreter";
  EXPECT_EQ(registry.Best(), registry.Find("cpu"));
#endif
  EXPECT_EQ(registry.AvailableNames(), available);

  auto sel = SelectDevice(registry, "interpreter:0");
  ASSERT_TRUE(sel.ok()) << sel.status().message();
  EXPECT_EQ(sel->backend->name(), "interpreter");
  EXPECT_EQ(sel->ordinal, 0);

  auto not_built = SelectDevice(registry, "rocm");
  ASSERT_FALSE(not_built.ok());
  EXPECT_EQ(not_built.status().message(), "device 'rocm' is not built yet (available: " + available + ")");
  auto unknown = SelectDevice(registry, "tpu");
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.status().message(),
            "unknown device 'tpu' (known: interpreter, cpu, cuda, rocm; available: " + available + ")");
  EXPECT_FALSE(SelectDevice(registry, "interpreter:1").ok());
  EXPECT_FALSE(SelectDevice(registry, "interpreter:x").ok());
}

TEST(BackendRegistryTest, InterpreterRuns) {
  auto m = ParseHloModule(R"(
HloModule m
ENTRY e {
  p = f32[2] parameter(0)
  ROOT t = (f32[2]) tuple(p)
}
)");
  ASSERT_TRUE(m.ok()) << m.status().message();
  auto backend = CreateInterpreterBackend();
  std::vector<Literal> args;
  args.push_back(Literal::FromDoubles(Shape::ArrayWithDefaultLayout(PrimitiveType::kF32, {2}), {1, 2}));
  auto r = backend->Run(**m, args, {});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(r->tuple_element(0).BitwiseEquals(args[0]));
}

TEST(BackendRegistryTest, CpuRunsCompilesAndPrepares) {
  auto m = ParseHloModule(R"(
HloModule m
ENTRY e {
  p = f32[2] parameter(0)
  n = f32[2] negate(p)
  ROOT t = (f32[2], f32[2]) tuple(n, p)
}
)");
  ASSERT_TRUE(m.ok()) << m.status().message();
  auto backend = CreateCpuBackend();
  std::vector<Literal> args;
  args.push_back(Literal::FromDoubles(Shape::ArrayWithDefaultLayout(PrimitiveType::kF32, {2}), {1, 2}));
  BackendRunOptions ro;
  ro.threads = 2;
  auto r = backend->Run(**m, args, ro);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->tuple_element(0).GetAsDouble(1), -2);
  EXPECT_TRUE(r->tuple_element(1).BitwiseEquals(args[0]));
  BackendCompileOptions co;
  co.stats = true;
  auto report = backend->Compile(**m, co);
  ASSERT_TRUE(report.ok()) << report.status().message();
  EXPECT_NE(report->find("layout-normalization"), std::string::npos) << *report;
  EXPECT_NE(report->find("memory: arguments 8 B"), std::string::npos) << *report;
  auto prepared = backend->Prepare(**m, args, ro);
  ASSERT_TRUE(prepared.ok()) << prepared.status().message();
  EXPECT_TRUE((*prepared)->Execute().ok());
  EXPECT_NE((*prepared)->Report().find("memory:"), std::string::npos);
  // The interpreter does not compile.
  EXPECT_EQ(CreateInterpreterBackend()->Compile(**m, co).status().code(), StatusCode::kUnimplemented);
}

}  // namespace
}  // namespace kiln
