// Excerpt of openxla/xla xla/hlo/transforms/simplifiers/tuple_simplifier_test.cc at 310209ae3ddead8eaad69f0a1cf453b76f43079e:
// some tests' HLO raw strings verbatim, the C++ between them left out.

TEST_F(TupleSimplifierTest, TupleOfParameters) {
  constexpr absl::string_view kModuleStr = R"(
    HloModule TupleOfParameters, entry_computation_layout={(f32[], f32[], f32[])->(f32[], f32[], f32[])}

    ENTRY %TupleOfParameters (param0: f32[], param1: f32[], param2: f32[]) -> (f32[], f32[], f32[]) {
      %param0 = f32[] parameter(0)
      %param1 = f32[] parameter(1)
      %param2 = f32[] parameter(2)
      ROOT %tuple = (f32[], f32[], f32[]) tuple(f32[] %param0, f32[] %param1, f32[] %param2)
    }
  )";
}

TEST_F(TupleSimplifierTest, GteOfTupleOfParameter) {
  constexpr absl::string_view kModuleStr = R"(
    HloModule GteOfTupleOfParameter, entry_computation_layout={((f32[], f32[], f32[]))->f32[]}

    ENTRY %GteOfTupleOfParameter (param: (f32[], f32[], f32[])) -> f32[] {
      %param = (f32[], f32[], f32[]) parameter(0)
      ROOT %get-tuple-element = f32[] get-tuple-element((f32[], f32[], f32[]) %param), index=1
    }
  )";
}

TEST_F(TupleSimplifierTest, GteOfTuple) {
  constexpr absl::string_view kModuleStr = R"(
    HloModule GteOfTuple, entry_computation_layout={(f32[], f32[], f32[])->f32[]}

    ENTRY %GteOfTuple (param0: f32[], param1: f32[], param2: f32[]) -> f32[] {
      %param0 = f32[] parameter(0)
      %param1 = f32[] parameter(1)
      %param2 = f32[] parameter(2)
      %tuple = (f32[], f32[], f32[]) tuple(f32[] %param0, f32[] %param1, f32[] %param2)
      ROOT %get-tuple-element = f32[] get-tuple-element((f32[], f32[], f32[]) %tuple), index=1
    }
  )";
}

TEST_F(TupleSimplifierTest, TupleOfGteInstructions) {
  constexpr absl::string_view kModuleStr = R"(
    HloModule TupleOfGteInstructions, entry_computation_layout={((f32[], f32[], f32[]))->(f32[], f32[], f32[])}

    ENTRY %TupleOfGteInstructions (param: (f32[], f32[], f32[])) -> (f32[], f32[], f32[]) {
      %param = (f32[], f32[], f32[]) parameter(0)
      %get-tuple-element = f32[] get-tuple-element((f32[], f32[], f32[]) %param), index=0
      %get-tuple-element.1 = f32[] get-tuple-element((f32[], f32[], f32[]) %param), index=1
      %get-tuple-element.2 = f32[] get-tuple-element((f32[], f32[], f32[]) %param), index=2
      ROOT %tuple = (f32[], f32[], f32[]) tuple(f32[] %get-tuple-element, f32[] %get-tuple-element.1, f32[] %get-tuple-element.2)
    }
  )";
}

TEST_F(TupleSimplifierTest, TupleOfGteNotRemovedIfOrderIsNotPreserved) {
  constexpr absl::string_view kModuleStr = R"(
    HloModule TupleOfGteInstructions, entry_computation_layout={((f32[], f32[], f32[]))->(f32[], f32[], f32[])}

    ENTRY %TupleOfGteInstructions (param: (f32[], f32[], f32[])) -> (f32[], f32[], f32[]) {
      %param = (f32[], f32[], f32[]) parameter(0)
      %get-tuple-element = f32[] get-tuple-element((f32[], f32[], f32[]) %param), index=0
      %get-tuple-element.1 = f32[] get-tuple-element((f32[], f32[], f32[]) %param), index=1
      %get-tuple-element.2 = f32[] get-tuple-element((f32[], f32[], f32[]) %param), index=2
      ROOT %tuple = (f32[], f32[], f32[]) tuple(f32[] %get-tuple-element, f32[] %get-tuple-element.2, f32[] %get-tuple-element.1)
    }
  )";
}

TEST_F(TupleSimplifierTest, IncompatibleTuples) {
  constexpr absl::string_view kModuleStr = R"(
    HloModule IncompatibleTuples, entry_computation_layout={((f32[], f32[], f32[]))->(f32[], f32[])}

    ENTRY %IncompatibleTuples (param: (f32[], f32[], f32[])) -> (f32[], f32[]) {
      %param = (f32[], f32[], f32[]) parameter(0)
      %get-tuple-element = f32[] get-tuple-element((f32[], f32[], f32[]) %param), index=0
      %get-tuple-element.1 = f32[] get-tuple-element((f32[], f32[], f32[]) %param), index=1
      ROOT %tuple = (f32[], f32[]) tuple(f32[] %get-tuple-element, f32[] %get-tuple-element.1)
    }
  )";
}
