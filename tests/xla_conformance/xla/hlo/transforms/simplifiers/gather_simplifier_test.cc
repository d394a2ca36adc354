// Excerpt of openxla/xla xla/hlo/transforms/simplifiers/gather_simplifier_test.cc at 80c095fc2f5ba8b1e8c8b7df79c0be532416dd69:
// the tests' HLO raw strings verbatim, the C++ (and FileCheck patterns) between them left out.

TEST_F(GatherSimplifierTest, TransformsStartIndices) {
  constexpr absl::string_view kModuleStr = R"(
    HloModule gather_simplifier

    ENTRY kernel_entry {
      operand = f32[33,34] parameter(0)
      indices = s32[42,43] parameter(1)
      ROOT gather = f32[42,43,7,8] gather(operand, indices),
          offset_dims={2,3},
          collapsed_slice_dims={},
          start_index_map={0},
          index_vector_dim=2,
          slice_sizes={7,8}
    })";
}

TEST_F(GatherSimplifierTest, RewritesScalarOperandGatherToBroadcast) {
  constexpr absl::string_view kModuleStr = R"(
    HloModule gather_simplifier

    ENTRY kernel_entry {
      operand = f32[] parameter(0)
      indices = s32[7,0] parameter(1)
      ROOT gather = f32[7] gather(operand, indices),
          offset_dims={},
          collapsed_slice_dims={},
          start_index_map={},
          index_vector_dim=1,
          slice_sizes={}
    })";
}

TEST_F(GatherSimplifierTest, RemovesCollapsedSliceDims) {
  constexpr absl::string_view kModuleStr = R"(
    HloModule gather_simplifier

    ENTRY kernel_entry {
      operand = f32[33,34] parameter(0)
      indices = s32[42,1] parameter(1)
      ROOT gather = f32[42] gather(operand, indices),
          offset_dims={},
          collapsed_slice_dims={0,1},
          start_index_map={0},
          index_vector_dim=1,
          slice_sizes={1,1}
    })";
}

TEST_F(GatherSimplifierTest, KeepsStartIndexIntact) {
  constexpr absl::string_view kModuleStr = R"(
    HloModule gather_simplifier

    ENTRY kernel_entry {
      operand = f32[33,34,35] parameter(0)
      indices = s32[42,3] parameter(1)
      ROOT gather = f32[42,1,2,3] gather(operand, indices),
          offset_dims={1,2,3},
          collapsed_slice_dims={},
          start_index_map={2,0,1},
          index_vector_dim=1,
          slice_sizes={1,2,3}
    })";
}

TEST_F(GatherSimplifierTest, CollapsesSomeDims) {
  constexpr absl::string_view kModuleStr = R"(
    HloModule gather_simplifier

    ENTRY kernel_entry {
      operand = f32[33,34,35] parameter(0)
      indices = s32[42,1] parameter(1)
      ROOT gather = f32[7,42] gather(operand, indices),
          offset_dims={0},
          collapsed_slice_dims={0,2},
          start_index_map={0},
          index_vector_dim=1,
          slice_sizes={1,7,1}
    })";
}

TEST_F(GatherSimplifierTest, ZeroDimStartIndices) {
  constexpr absl::string_view kModuleStr = R"(
    HloModule gather_simplifier

    ENTRY kernel_entry {
      operand = f32[8,16] parameter(0)
      indices = s32[2] parameter(1)

      ROOT gather = f32[8,16] gather(f32[8,16] operand, s32[2] indices),
          offset_dims={0,1},
          collapsed_slice_dims={},
          start_index_map={0,1},
          index_vector_dim=0,
          slice_sizes={8,16}
    })";
}

TEST_F(GatherSimplifierTest, ZeroSizeSlice) {
  constexpr absl::string_view kModuleStr = R"(
    HloModule gather_simplifier

    ENTRY kernel_entry {
      operand = f32[0,2] parameter(0)
      indices = s32[3] parameter(1)

      ROOT gather = f32[3,2] gather(f32[0,2] operand, s32[3]{0} indices),
          offset_dims={1},
          collapsed_slice_dims={0},
          start_index_map={0},
          index_vector_dim=1,
          slice_sizes={0,2}
    })";
}
