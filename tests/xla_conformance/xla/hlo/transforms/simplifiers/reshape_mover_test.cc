// Excerpt of openxla/xla xla/hlo/transforms/simplifiers/reshape_mover_test.cc at 3974a56635805c1476c5a2e720bf8cb1330a8e8e:
// the tests' HLO raw strings verbatim (the first 16000 characters' tests), the C++ between them left out.

TEST_F(ReshapeMoverTest, ReshapesWithDifferentInputShapesNotMoved) {
  const std::string hlo_string = R"(
    HloModule test
    ENTRY test {
      reshape0 = f32[8,7] reshape(f32[1,8,1,7] parameter(0))
      reshape1 = f32[8,7] reshape(f32[1,8,7,1] parameter(1))
      ROOT add = add(reshape0, reshape1)
    }
  )";
  TF_ASSERT_OK_AND_ASSIGN(auto m, ParseAndReturnVerifiedModule(hlo_string));
}

TEST_F(ReshapeMoverTest, OneConstantAndOneReshapesOnRngNotMoved) {
  const std::string hlo_string = R"(
    HloModule test
    ENTRY test {
      rng = f32[1,8,1,7,1] rng(f32[] constant(0), f32[] constant(1)), distribution=rng_uniform
      ROOT add = add(f32[8,7] reshape(rng), f32[8,7] constant({...}))
    }
  )";
  TF_ASSERT_OK_AND_ASSIGN(auto m, ParseAndReturnVerifiedModule(hlo_string));
}

TEST_F(ReshapeMoverTest, EquivalentReshapesMoved) {
  const std::string hlo_string = R"(
    HloModule test
    ENTRY test {
      reshape0 = f32[8,7] reshape(f32[1,8,1,7] parameter(0))
      reshape1 = f32[8,7] reshape(f32[1,8,1,7] parameter(1))
      ROOT add = f32[8,7] add(reshape0, reshape1)
    }
  )";
  TF_ASSERT_OK_AND_ASSIGN(auto m, ParseAndReturnVerifiedModule(hlo_string));
}

TEST_F(ReshapeMoverTest, SinkReshapeBelowSelect) {
  const std::string hlo_string = R"(
    HloModule test
    ENTRY test {
      ROOT select = f32[2,3] select(
        pred[2,3] reshape(pred[6] parameter(0)),
        f32[2,3] reshape(f32[6] parameter(1)),
        f32[2,3] reshape(f32[6] parameter(2)))
    }
  )";
  TF_ASSERT_OK_AND_ASSIGN(auto m, ParseAndReturnVerifiedModule(hlo_string));
}

TEST_F(ReshapeMoverTest, SinkReshapeBelowSelectWithConstant) {
  const std::string hlo_string = R"(
    HloModule test
    ENTRY test {
      ROOT select = f32[2,3] select(
        pred[2,3] reshape(pred[6] parameter(0)),
        f32[2,3] reshape(f32[6] parameter(1)),
        f32[2,3] constant({...}))
    }
  )";
  TF_ASSERT_OK_AND_ASSIGN(auto m, ParseAndReturnVerifiedModule(hlo_string));
}

TEST_F(ReshapeMoverTest, OneParameterAndOneReshapeNotMoved) {
  const std::string hlo_string = R"(
    HloModule test
    ENTRY test {
      reshape0 = f32[8,7] reshape(f32[1,8,1,7] parameter(0))
      ROOT add = add(reshape0, f32[8,7] parameter(1))
    }
  )";
  TF_ASSERT_OK_AND_ASSIGN(auto m, ParseAndReturnVerifiedModule(hlo_string));
}

TEST_F(ReshapeMoverTest, DontSinkReshapesOfConstants) {
  const std::string hlo_string = R"(
    HloModule test
    ENTRY test {
      ROOT select = select(
        pred[3,2] parameter(0),
        f32[3,2] reshape(f32[2,3] constant({...})),
        f32[3,2] reshape(f32[2,3] constant({...})))
    }
  )";
  TF_ASSERT_OK_AND_ASSIGN(auto m, ParseAndReturnVerifiedModule(hlo_string));
}

TEST_F(ReshapeMoverTest, OneNontrivialReshapeMoved) {
  const std::string hlo_string = R"(
    HloModule test
    ENTRY test {
      ROOT add = add(
        f32[3,2] reshape(f32[2,3] parameter(0)),
        f32[3,2] constant({...}))
    }
  )";
  TF_ASSERT_OK_AND_ASSIGN(auto m, ParseAndReturnVerifiedModule(hlo_string));
}

TEST_F(ReshapeMoverTest, MultipleReshapes) {
  const std::string hlo_string = R"(
    HloModule test
    ENTRY test {
      add0 = f32[8,7,1] add(
        f32[8,7,1] reshape(f32[1,8,1,7] parameter(0)),
        f32[8,7,1] reshape(f32[1,8,1,7] parameter(1)))
      ROOT add1 = f32[8,7] add(
        f32[8,7] reshape(add0),
        f32[8,7] reshape(f32[8,7,1] parameter(2)))
    }
  )";
  TF_ASSERT_OK_AND_ASSIGN(auto m, ParseAndReturnVerifiedModule(hlo_string));
}

TEST_F(ReshapeMoverTest, SinkTransposeAcrossBroadcastScalar) {
  const std::string hlo_string = R"(
    HloModule TransposeMulInversedTransposeModule
    ENTRY TransposeMulInversedTranspose {
      src0 = f32[20,8]{1,0} parameter(0)
      transpose0 = f32[8,20]{1,0} transpose(src0), dimensions={1,0}
      src1 = f32[] parameter(1)
      broadcast0 = f32[8,20]{1,0} broadcast(src1), dimensions={}
      ROOT multiply0 = f32[8,20]{1,0} multiply(transpose0, broadcast0)
    }
  )";
  TF_ASSERT_OK_AND_ASSIGN(auto m, ParseAndReturnVerifiedModule(hlo_string));
}

TEST_F(ReshapeMoverTest, ReshapeWithUsersOutsideCandidatesNotSink) {
  const std::string hlo_string = R"(
    HloModule ReshapeWithUsersOutsideCandidates
    ENTRY ReshapeWithMultipleUsers {
      param0 = f32[20,8]{1,0} parameter(0)
      reshape0 = f32[8,20]{1,0} reshape(param0)
      param1 = f32[] parameter(1)
      broadcast0 = f32[8,20]{1,0} broadcast(param1), dimensions={}
      param2 = f32[20,8]{1,0} parameter(2)
      reshape1 = f32[8,20]{1,0} reshape(param2)
      param3 = f32[20,8]{1,0} parameter(3)
      reshape2 = f32[8,20]{1,0} reshape(param3)
      param4 = f32[8,20]{1,0} parameter(4)
      add0 = f32[8,20]{1,0} add(reshape0, broadcast0)
      add1 = f32[8,20]{1,0} add(reshape0, reshape1)
      add2 = f32[8,20]{1,0} add(reshape1, param4)
      ROOT tuple = (f32[8,20]{1,0},f32[8,20]{1,0},
        f32[8,20]{1,0}) tuple(add0, add1, add2)
    }
  )";
  TF_ASSERT_OK_AND_ASSIGN(auto m, ParseAndReturnVerifiedModule(hlo_string));
}

TEST_F(ReshapeMoverTest, ReshapeNoUsersOutsideCandidatesSink2) {
  const std::string hlo_string = R"(
    HloModule ReshapeNoUsersOutsideCandidates2
    ENTRY ReshapeWithMultipleUsers2 {
      param0 = f32[20,8]{1,0} parameter(0)
      reshape0 = f32[8,20]{1,0} reshape(param0)
      ROOT add0 = f32[8,20]{1,0} add(reshape0, reshape0)
    }
  )";
  TF_ASSERT_OK_AND_ASSIGN(auto m, ParseAndReturnVerifiedModule(hlo_string));
}

TEST_F(ReshapeMoverTest, ReshapeOfRank1BroadcastIsNotTrivial) {
  const std::string hlo_string = R"(
    HloModule test
    ENTRY test {
      a = f32[2,3] broadcast(f32[2] parameter(0)), dimensions={0}
      b = f32[2,3] reshape(f32[6] parameter(1))
      ROOT add0 = add(a, b)
    }
  )";
  TF_ASSERT_OK_AND_ASSIGN(auto m, ParseAndReturnVerifiedModule(hlo_string));
}

TEST_F(ReshapeMoverTest, ReshapeOfRank2BroadcastIsAllowed) {
  const std::string hlo_string = R"(
    HloModule test
    ENTRY test {
      a = f32[2,3,35] broadcast(f32[2,3] parameter(0)), dimensions={0,1}
      b = f32[2,3,35] reshape(f32[2,3,5,7] parameter(1))
      ROOT add0 = add(a, b)
    }
  )";
  TF_ASSERT_OK_AND_ASSIGN(auto m, ParseAndReturnVerifiedModule(hlo_string));
}

TEST_F(ReshapeMoverTest, SinkDisallowedIfReshapeChangesBroadcastDims) {
  const std::string hlo_string = R"(
    HloModule test
    ENTRY test {
      a = f32[2,3,35] broadcast(f32[2,3] parameter(0)), dimensions={0,1}
      b = f32[2,3,35] reshape(f32[6,5,7] parameter(1))
      ROOT add0 = add(a, b)
    }
  )";
  TF_ASSERT_OK_AND_ASSIGN(auto m, ParseAndReturnVerifiedModule(hlo_string));
}

TEST_F(ReshapeMoverTest, TransposeOfBroadcastIsAllowed) {
  const std::string hlo_string = R"(
    HloModule test
    ENTRY test {
      a = f32[2,3] broadcast(f32[2] parameter(0)), dimensions={0}
      b = f32[2,3] transpose(f32[3,2] parameter(1)), dimensions={1,0}

      ROOT add0 = add(a, b)
    }
  )";
  TF_ASSERT_OK_AND_ASSIGN(auto m, ParseAndReturnVerifiedModule(hlo_string));
}

TEST_F(ReshapeMoverTest, TransposeReordersBroadcastDims) {
  const std::string hlo_string = R"(
    HloModule test
    ENTRY test {
      a = f32[2,3,5] broadcast(f32[2,3] parameter(0)), dimensions={0,1}
      b = f32[2,3,5] transpose(f32[3,2,5] parameter(1)), dimensions={1,0,2}

      ROOT add0 = add(a, b)
    }
  )";
  TF_ASSERT_OK_AND_ASSIGN(auto m, ParseAndReturnVerifiedModule(hlo_string));
}
