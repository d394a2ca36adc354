// Excerpt of openxla/xla xla/hlo/transforms/simplifiers/algebraic_simplifier_test.cc
// (offset 400000..416000 of the public-code index's copy): raw strings verbatim, C++ between left out.

TEST_F(AlgebraicSimplifierTest, TupleReduceReshape) {
  constexpr absl::string_view hlo_string = R"(
HloModule module

reducer {
  parameter.1 = f32[] parameter(0)
  parameter.3 = f32[] parameter(2)
  add.2 = f32[] add(parameter.1, parameter.3)
  parameter.0 = f32[] parameter(1)
  parameter.2 = f32[] parameter(3)
  add.3 = f32[] add(parameter.0, parameter.2)
  ROOT tuple.4 = (f32[], f32[]) tuple(add.2, add.3)
}

ENTRY entry {
  parameter.6 = (f32[], f32[]) parameter(0)
  get-tuple-element.10 = f32[] get-tuple-element(parameter.6), index=0
  get-tuple-element.11 = f32[] get-tuple-element(parameter.6), index=1
  constant = f32[] constant(0)
  ROOT reduce = (f32[], f32[]) reduce(get-tuple-element.10, get-tuple-element.11, constant, constant), dimensions={}, to_apply=reducer
}
)";
}

TEST_F(AlgebraicSimplifierTest, TupleReduceBroadcast) {
  constexpr absl::string_view hlo_string = R"(
HloModule module

reducer {
  parameter.1 = f32[] parameter(0)
  parameter.3 = f32[] parameter(2)
  mul.2 = f32[] add(parameter.1, parameter.3)
  parameter.0 = f32[] parameter(1)
  parameter.2 = f32[] parameter(3)
  add.3 = f32[] add(parameter.0, parameter.2)
  ROOT tuple.4 = (f32[], f32[]) tuple(mul.2, add.3)
}

ENTRY entry {
  parameter.6 = (f32[0, 10, 10], f32[0, 10, 10]) parameter(0)
  get-tuple-element.10 = f32[0, 10, 10] get-tuple-element(parameter.6), index=0
  get-tuple-element.11 = f32[0, 10, 10] get-tuple-element(parameter.6), index=1
  constant.0 = f32[] constant(0)
  constant.1 = f32[] constant(1)
  ROOT reduce = (f32[10, 10], f32[10, 10]) reduce(get-tuple-element.10, get-tuple-element.11, constant.0, constant.1), dimensions={0}, to_apply=reducer
}
)";
}

TEST_F(AlgebraicSimplifierTest, GatherOfReshapeOfPad2) {
  constexpr absl::string_view hlo_string = R"(
HloModule module

ENTRY %entry {
  iota.3 = s32[2,4,1]{2,1,0} iota(), iota_dimension=0
  constant.36 = s32[] constant(0)
  pad = s32[2,4,2]{2,1,0} pad(iota.3, constant.36), padding=0_0x0_0x0_1
  reshape = s32[8,2]{1,0} reshape(pad)
  reshape.300 = s32[3,40,1]{2,1,0} parameter(0)
  gather.363 = s32[3,40,2]{2,1,0} gather(reshape, reshape.300),
    offset_dims={2}, collapsed_slice_dims={0}, start_index_map={0},
    index_vector_dim=2, slice_sizes={1,2}
}
)";
}

TEST_F(AlgebraicSimplifierTest, GatherOfReshapeOfPad3) {
  constexpr absl::string_view hlo_string = R"(
HloModule module

ENTRY %entry {
  parameter.0 = f32[2,4256]{1,0} parameter(0)
  constant = f32[] constant(0)
  pad.264 = f32[2,4480]{1,0} pad(parameter.0, constant), padding=0_0x0_224
  slice.267 = f32[2,4480]{1,0} slice(pad.264), slice={[0:2], [0:4480]}
  reshape.269 = f32[2,28,160]{2,1,0} reshape(slice.267)
  parameter.1 = s32[27,2]{1,0} parameter(1)
  ROOT gather.271 = f32[2,27,2,160]{3,2,1,0} gather(reshape.269, parameter.1), offset_dims={0,3}, collapsed_slice_dims={1}, start_index_map={1}, index_vector_dim=2, slice_sizes={2,1,160}
}
)";
}

TEST_F(AlgebraicSimplifierTest, GatherOfReshapeOfPad4) {
  constexpr absl::string_view hlo_string = R"(
HloModule module

ENTRY %entry {
  dot.165 = bf16[2048,8192]{1,0} parameter(0)
  constant.16 = bf16[] constant(0)
  reshape.60 = s32[16,1]{1,0} parameter(1)
  pad.6 = bf16[4096,8192]{1,0} pad(
    bf16[2048,8192]{1,0} %dot.165, bf16[] %constant.16), padding=0_2048x0_0
  reshape.170 = bf16[4096,16,512]{2,1,0} reshape(bf16[4096,8192]{1,0} %pad.6)
  gather.175 = bf16[4096,16,512]{2,1,0} gather(
    bf16[4096,16,512]{2,1,0} %reshape.170, s32[16,1]{1,0} %reshape.60),
    offset_dims={0,2}, collapsed_slice_dims={1}, start_index_map={1},
    index_vector_dim=1, slice_sizes={4096,1,512}
}
)";
}

TEST_F(AlgebraicSimplifierTest, RecipSqrt) {
  constexpr absl::string_view hlo_string = R"(
    HloModule m
    test {
      p0 = f32[] parameter(0)
      p1 = f32[] parameter(1)
      sqrt = f32[] sqrt(p0)
      ROOT div = f32[] divide(p1, sqrt)
    }
)";
}

TEST_F(AlgebraicSimplifierTest, RecipRsqrt) {
  constexpr absl::string_view kModuleStr = R"(
    HloModule m
    test {
      p0 = f32[] parameter(0)
      p1 = f32[] parameter(1)
      rsqrt = f32[] rsqrt(p0)
      ROOT div = f32[] divide(p1, rsqrt)
    }
  )";
}

TEST_F(AlgebraicSimplifierTest, DivideByBroadcast) {
  constexpr absl::string_view kModuleStr = R"(
    HloModule m
    test {
      p0 = f32[] parameter(0)
      p1 = f32[8] parameter(1)
      broadcast_p0 = f32[8] broadcast(p0)
      ROOT div = f32[8] divide(p1, broadcast_p0)
    }
  )";
}
