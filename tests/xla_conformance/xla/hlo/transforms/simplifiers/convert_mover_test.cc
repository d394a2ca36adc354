// Excerpt of openxla/xla xla/hlo/transforms/simplifiers/convert_mover_test.cc at 64c925bc590fe60eefa2b260af82d7bd9025f0b8:
// the tests' HLO raw strings verbatim, the C++ between them left out.

TEST_F(ConvertMoverTest, MoveDownThroughConcat) {
  absl::string_view module_string = R"(
  HloModule module

  ENTRY main {
    ROOT root = concatenate(f32[10] convert(f16[10] parameter(0)),
                            f32[10] convert(f16[10] parameter(1))),
                dimensions={0}
  })";
}

TEST_F(ConvertMoverTest, NoMoveDownThroughConcatWithDifferentSrcTypes) {
  absl::string_view module_string = R"(
  HloModule module

  ENTRY main {
    ROOT root = concatenate(f32[10] convert(bf16[10] parameter(0)),
                            f32[10] convert(f16[10] parameter(1))),
                dimensions={0}
  })";
}

TEST_F(ConvertMoverTest, MoveUpReshape) {
  absl::string_view module_string = R"(
  HloModule module

  ENTRY main {
    ROOT root = f16[10,10] convert(f32[10,10] reshape(f32[100] parameter(0)))
  })";
}

TEST_F(ConvertMoverTest, MoveUpTwoTransposes) {
  absl::string_view module_string = R"(
  HloModule module

  ENTRY main {
    t1 = transpose(f32[3,4] parameter(0)), dimensions={1,0}
    t2 = transpose(t1), dimensions={1,0}
    ROOT root = f16[3,4] convert(t2)
  })";
}

TEST_F(ConvertMoverTest, MoveDownTwoSlices) {
  absl::string_view module_string = R"(
  HloModule module

  ENTRY main {
    slice1 = f32[9] slice(f32[10] convert(f16[10] parameter(0))), slice={[0:9]}
    ROOT slice2 = f32[8] slice(slice1), slice={[0:8]}
  })";
}

TEST_F(ConvertMoverTest, MoveDownC64) {
  absl::string_view module_string = R"(
  HloModule module

  ENTRY main {
    ROOT root = concatenate(c64[10] convert(f32[10] parameter(0)),
                            c64[10] convert(f32[10] parameter(1))),
                dimensions={0}
  })";
}

TEST_F(ConvertMoverTest, MoveDownC64Constant) {
  absl::string_view module_string = R"(
  HloModule module

  ENTRY main {
    ROOT root = concatenate(c64[2] convert(f32[2] parameter(0)),
                            c64[2] convert(f32[2] parameter(1)),
                            c64[2] constant({(1,1), (-1,-1)})),
                dimensions={0}
  })";
}

TEST_F(ConvertMoverTest, MoveUpPad) {
  absl::string_view module_string = R"(
  HloModule module

  ENTRY main {
    pad = f32[10] pad(f32[8] parameter(0), f32[] constant(0)), padding=1_1
    ROOT root = f16[10] convert(pad)
  })";
}

TEST_F(ConvertMoverTest, MoveUpPadWithOutOfRangeConstant) {
  absl::string_view module_string = R"(
  HloModule module

  ENTRY main {
    pad = s32[10] pad(s32[8] parameter(0), s32[] constant(1000)), padding=1_1
    ROOT root = s8[10] convert(pad)
  })";
}

TEST_F(ConvertMoverTest, MoveDownPad) {
  absl::string_view module_string = R"(
  HloModule module

  ENTRY main {
    ROOT pad = f32[10] pad(f32[8] convert(f16[8] parameter(0)), f32[] constant(0)),
               padding=1_1
  })";
}

TEST_F(ConvertMoverTest, NoMoveDownPadBecauseConstantIsOutOfRange) {
  absl::string_view module_string = R"(
  HloModule module

  ENTRY main {
    ROOT pad = f32[10] pad(f32[8] convert(f16[8] parameter(0)), f32[] constant(1e9)),
               padding=1_1
  })";
}
