// Excerpt of openxla/xla xla/tests/reduce_hlo_test.cc at 001918b7024cf5f020051a9d25d2dd57a5896aaa:
// the test's HLO raw string verbatim.

class ReduceWithLayoutTest
    : public HloTestBase,
      public ::testing::WithParamInterface<ReduceLayout> {
 public:
  StatusOr<std::unique_ptr<HloModule>> GetParsedModule() {
    const char* const hlo_string = R"(
HloModule BadReduce

Sum {
  x.1 = f32[] parameter(0)
  y.1 = f32[] parameter(1)
  ROOT add.1 = f32[] add(x.1, y.1)
}

ENTRY reduce.1 {
  parameter = f32[2,2,2,3]{3,2,1,0} parameter(0)
  init_value = f32[] constant(0)
  reduce = f32[2,2,3]{2,1,0} reduce(parameter, init_value), dimensions={1}, to_apply=Sum
  ROOT copy = f32[2,2,3]{2,1,0} copy(reduce)
}
)";

    return ParseAndReturnVerifiedModule(hlo_string);
  }
};
