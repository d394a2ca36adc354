#include "kiln/tools/backend_registry.h"

#include <gtest/gtest.h>

#include "kiln/hlo/parser.h"

namespace kiln {
namespace {

TEST(BackendRegistryTest, SelectDevice) {
  BackendRegistry registry;
  RegisterBuiltinBackends(registry);
  ASSERT_NE(registry.Find("interpreter"), nullptr);
  EXPECT_EQ(registry.Best(), registry.Find("interpreter"));
  EXPECT_EQ(registry.AvailableNames(), "interpreter");

  auto sel = SelectDevice(registry, "interpreter:0");
  ASSERT_TRUE(sel.ok()) << sel.status().message();
  EXPECT_EQ(sel->backend->name(), "interpreter");
  EXPECT_EQ(sel->ordinal, 0);

  auto not_built = SelectDevice(registry, "rocm");
  ASSERT_FALSE(not_built.ok());
  EXPECT_EQ(not_built.status().message(), "device 'rocm' is not built yet (available: interpreter)");
  auto unknown = SelectDevice(registry, "tpu");
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.status().message(),
            "unknown device 'tpu' (known: interpreter, cpu, cuda, rocm; available: interpreter)");
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

}  // namespace
}  // namespace kiln
