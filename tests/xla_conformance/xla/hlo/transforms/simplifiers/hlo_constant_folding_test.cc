// Excerpt of openxla/xla xla/hlo/transforms/simplifiers/hlo_constant_folding_test.cc at 50e1f8a15b00ea5f3ee7782d2878b85d71f3f844:
// the HLO raw strings of characters 8000-24000 verbatim, the C++ between them left out.

const char* const kConstantFoldReduce = R"(
  HloModule ConstantFoldReduce

  add {
    a = s32[] parameter(0)
    b = s32[] parameter(1)
    ROOT add = s32[] add(a, b)
  }

  ENTRY r {
    x = s32[3] constant({1, 2, 3})
    init = s32[] constant(0)
    ROOT reduce = s32[] reduce(x, init), dimensions={0}, to_apply=add
  })";

constexpr absl::string_view kConstantFoldReduceWithMetadata = R"(
  HloModule ConstantFoldReduce

  add {
    a = s32[] parameter(0)
    b = s32[] parameter(1)
    ROOT add = s32[] add(a, b)
  }

  ENTRY r {
    x = s32[3] constant({1, 2, 3}), metadata={op_name="constant"}
    init = s32[] constant(0), metadata={op_name="zero_constant"}
    ROOT reduce = s32[] reduce(x, init), metadata={op_name="reduce"}, dimensions={0}, to_apply=add
  })";

const char* const kConstantFoldLargePad = R"(
  HloModule ConstantFoldLargePad

  ENTRY r {
    a = f32[1,1,1] constant({{{7}}})
    b = f32[] constant(42)
    ROOT pad = f32[2048,2048,128] pad(a, b), padding=1024_1023x1024_1023x64_63
  })";

TEST_F(HloConstantFoldingTest, ConstantFoldShuffleRotate) {
  const char* const kModuleStr = R"(
    HloModule fold_shuffle

    ENTRY r {
      vec = f32[5]{0} constant({1.0, 2.0, 3.0, 4.0, 5.0})
      ROOT const = f32[5]{0} shuffle(vec), dimensions={0}, mode=rotate,
        shifts={2}
    })";
}

TEST_F(HloConstantFoldingTest, DoesNotFoldPadBroadcast) {
  const char* const kConstantFoldPadBroadcast = R"(
  HloModule ConstantFoldLargePad

  ENTRY r {
    a = f32[] constant(239)
    broadcast_a = f32[4] broadcast(a), dimensions={}
    b = f32[] constant(42)
    ROOT pad = f32[8] pad(f32[4] broadcast_a, f32[] b), padding=4_0
  })";
}

TEST_F(HloConstantFoldingTest, DoesNotFoldSlicesWithLargeOperand) {
  const char* const kModuleStr = R"(
  HloModule test

  ENTRY r {
    a = f32[] constant(42)
    broadcast = f32[1000000000]{0} broadcast(a), dimensions={}
    slice1 = f32[10000]{0} slice(broadcast), slice={[0:10000]}
    slice2 = f32[10000]{0} slice(broadcast), slice={[10000:20000]}
    ROOT add = f32[10000]{0} add(slice1, slice2)
  })";
}

TEST_F(HloConstantFoldingTest, DontFoldSubcomputationContainingAfterAll) {
  const char* const kModuleStr = R"(
  HloModule test

  Fn {
    tok = token[] after-all()
    ROOT root = f32[10] iota(), iota_dimension=0
  }

  ENTRY entry {
    ROOT call = f32[10] call(), to_apply=Fn
  })";
}

TEST_F(HloConstantFoldingTest, DontFoldSubcomputationTransitivelyContainingRng) {
  const char* const kModuleStr = R"(
  HloModule test

  InnerFn {
    c0 = f32[] constant(0)
    c1 = f32[] constant(1)
    ROOT rng = f32[10] rng(c0, c1), distribution=rng_uniform
  }

  Fn {
    ROOT fusion = f32[10] fusion(), kind=kLoop, calls=InnerFn
  }

  ENTRY entry {
    ROOT call = f32[10] call(), to_apply=Fn
  })";
}

TEST_F(HloConstantFoldingTest, ConstantFoldCopyOp) {
  const char* const kModuleStr = R"(
  HloModule m
  ENTRY main {
    %p0 = f32[] parameter(0)
    %constant.2 = f32[] constant(0)
    ROOT %copy.3 = f32[] copy(f32[] %constant.2)
  })";
}

TEST_F(HloConstantFoldingTest, DontFoldCopyOp_NonSafelyRemovableOp) {
  const char* const kModuleStr = R"(
  HloModule m
  ENTRY main {
    %p0 = f32[] parameter(0)
    %copy.1 = f32[] copy(f32[] %p0)
    %constant.2 = f32[] constant(0)
    ROOT %copy.3 = f32[] copy(f32[] %constant.2), control-predecessors={%copy.1}
  })";
}

TEST_F(HloConstantFoldingTest, FoldOpsWhereOneOperandIsBroadcast) {
  const char* const kModuleStr = R"(
  HloModule test

  ENTRY entry {
    not_folded1 = f32[4] broadcast(f32[] constant(1))
    not_folded2 = add(f32[4] broadcast(f32[] constant(2)),
                      f32[4] broadcast(f32[] constant(3)))
    folded1 = add(f32[4] broadcast(f32[] constant(5)),
                  f32[4] constant({0,1,2,3}))
    folded2 = add(f32[4] constant({0,1,2,3}),
                  f32[4] broadcast(f32[] constant(5)))
    ROOT root = tuple(not_folded1, not_folded2, folded1, folded2)
  })";
}

TEST_F(HloConstantFoldingTest, FoldOpsWhereOneOperandIsIota) {
  const char* const kModuleStr = R"(
  HloModule test

  ENTRY entry {
    iota = f32[4] iota(), iota_dimension=0
    not_folded1 = add(f32[4] iota,
                      f32[4] iota)
    folded1 = add(f32[4] iota,
                  f32[4] constant({0,1,2,3}))
    folded2 = add(f32[4] constant({0,1,2,3}),
                  f32[4] iota)
    ROOT root = tuple(iota, not_folded1, folded1, folded2)
  })";
}

TEST_F(HloConstantFoldingTest, FoldInt4Ops) {
  const char* const kModuleStr = R"(
  HloModule test

  ENTRY entry {
    c0 = s4[2]{0:E(4)} constant({1, 2})
    c1 = s4[2]{0:E(4)} constant({3, 4})
    add1 = s4[2]{0:E(4)} add(c0, c1)
    c2 = s4[]{:E(4)} constant(5)
    add2 = s4[2]{0:E(4)} add(c0, s4[2]{0:E(4)} broadcast(c2))
    ROOT root = tuple(add1, add2)
  })";
}

TEST_F(HloConstantFoldingTest, BigReduceWindow) {
  constexpr absl::string_view kModuleStr = R"(
    HloModule test

    add_bf16 {
      lhs = bf16[] parameter(0)
      rhs = bf16[] parameter(1)
      ROOT add = bf16[] add(lhs, rhs)
    }

    ENTRY accumulated_all_reduce {
      x = bf16[160,10,10,512]{3,2,1,0} broadcast(bf16[] constant(1.0))
      init = bf16[] constant(0)
      ROOT reduce-window = reduce-window(x, init), window={size=1x2x2x1 stride=1x2x2x1}, to_apply=add_bf16
    }
  )";
}

TEST_F(HloConstantFoldingTest, TimingConsumingTest) {
  constexpr absl::string_view mod_str = R"(
    HloModule jit_f, entry_computation_layout={()->f32[]}
    region_0.4 {
      Arg_0.5 = f32[] parameter(0)
      Arg_1.6 = f32[] parameter(1)
      ROOT add.7 = f32[] add(Arg_0.5, Arg_1.6)
    }

    ENTRY main.9 {
      constant.1 = f32[] constant(1)
      broadcast.2 = f32[32,999,40,512]{3,2,1,0} broadcast(constant.1), dimensions={}
      constant.3 = f32[] constant(0)
      ROOT reduce.8 = f32[] reduce(broadcast.2, constant.3), dimensions={0,1,2,3}, to_apply=region_0.4
    }
   )";
}

TEST_F(HloConstantFoldingTest, FoldWhile) {
  constexpr absl::string_view mod_str = R"(
    HloModule test
    condition_fn
    {
      parameter = (s32[], s32[10]) parameter(0)
      index = s32[] get-tuple-element(parameter), index=0
      ROOT compare.1 = pred[] compare(index, s32[] constant(5)), direction=LT
    }

    body_fn
    {
      parameter = (s32[], s32[10]) parameter(0)
      index = s32[] get-tuple-element(parameter), index=0
      value = s32[10] get-tuple-element(parameter), index=1
      incremented = s32[] add(index, s32[] constant(1))
      ROOT result = (s32[], s32[10]) tuple(incremented, value)
    }

    ENTRY main.9 {
      constant.1 = s32[] constant(0)
      broadcast.1 = s32[10] broadcast(s32[] constant(1))
      tuple_arg = (s32[], s32[10]) tuple(constant.1, broadcast.1)
      ROOT while = (s32[], s32[10]) while(tuple_arg), condition=condition_fn, body=body_fn
    }
   )";
}

// (characters 23900-39900 of the file)

TEST_F(HloConstantFoldingTest, FoldCall) {
  const char* const kModuleStr = R"(
    HloModule test

    Fn {
      param0 = f32[] parameter(0)
      param1 = f32[] parameter(1)
      ROOT add = f32[] add(param0, param1)
    }

    ENTRY entry {
      constant.0 = f32[] constant(1)
      constant.1 = f32[] constant(2)
      ROOT call = f32[] call(constant.0, constant.1), to_apply=Fn
    })";
}

TEST_F(HloConstantFoldingTest, FoldCallToFft) {
  const char* const kModuleStr = R"(
    HloModule test

    Fn {
      param0 = c64[8] parameter(0)
      ROOT fft = c64[8] fft(param0), fft_type=FFT, fft_length={32}
    }

    ENTRY entry {
      constant.0 = c64[8] constant({(0,0), (0,0), (0,0), (0,0), (0,0), (0,0), (0,0), (0,0)})
      ROOT call = c64[8] call(constant.0), to_apply=Fn
    })";
}

TEST_F(HloConstantFoldingTest, InterproceduralSingleCallsite) {
  const char* const kModuleStr = R"(
    HloModule test

    Fn {
      param0 = f32[8] parameter(0)
      param1 = f32[8] parameter(1)
      iota = f32[8] iota(), iota_dimension=0
      add.0 = f32[8] add(param0, iota)
      ROOT add.1 = f32[8] add(add.0, param1)
    }

    ENTRY entry {
      entry.param = f32[8] parameter(0)
      constant.0 = f32[8] constant({1, -1, 1, -1, 1, -1, 1, -1})
      ROOT call = f32[8] call(constant.0, entry.param), to_apply=Fn
    })";
}

TEST_F(HloConstantFoldingTest, InterproceduralMultipleCallsitesSomeConstants) {
  const char* const kModuleStr = R"(
    HloModule test

    Fn {
      param0 = f32[] parameter(0)
      param1 = f32[] parameter(1)
      param2 = f32[] parameter(2)
      param3 = f32[] parameter(3)
      mul = f32[] multiply(param0, param1)
      sub = f32[] subtract(mul, param2)
      ROOT add = f32[] add(sub, param3)
    }

    ENTRY entry {
      entry.param = f32[] parameter(0)
      constant.0 = f32[] constant(1)
      constant.1 = f32[] constant(2)
      call.0 = f32[] call(constant.0, constant.1, entry.param, constant.1), to_apply=Fn
      call.1 = f32[] call(constant.0, entry.param, constant.0, constant.1), to_apply=Fn
      ROOT add = f32[] add(call.0, call.1)
    })";
}

TEST_F(HloConstantFoldingTest, InterproceduralMultipleCallsitesSomeDifferentConstants) {
  const char* const kModuleStr = R"(
    HloModule test

    Fn {
      param0 = f32[8] parameter(0)
      param1 = f32[8] parameter(1)
      param2 = f32[8] parameter(2)
      iota = f32[8] iota(), iota_dimension=0
      add.0 = f32[8] add(param0, iota)
      add.1 = f32[8] add(add.0, param1)
      ROOT sub = f32[8] subtract(add.1, param2)
    }

    ENTRY entry {
      entry.param0 = f32[8] parameter(0)
      entry.param1 = f32[8] parameter(1)
      constant.0 = f32[8] constant({1, -1, 1, -1, 1, -1, 1, -1})
      constant.1 = f32[8] constant({2, -2, 2, -2, 2, -2, 2, -2})
      call.0 = f32[8] call(constant.0, entry.param0, constant.0), to_apply=Fn
      call.1 = f32[8] call(constant.1, entry.param1, constant.0), to_apply=Fn
      ROOT add = f32[8] add(call.0, call.1)
    })";
}

TEST_F(HloConstantFoldingTest, InterproceduralDeadParameter) {
  const char* const kModuleStr = R"(
    HloModule test

    Fn {
      param0 = f32[8] parameter(0)
      param1 = f32[8] parameter(1)
      iota = f32[8] iota(), iota_dimension=0
      ROOT add.1 = f32[8] add(iota, param1)
    }

    ENTRY entry {
      entry.param = f32[8] parameter(0)
      constant.0 = f32[8] constant({1, -1, 1, -1, 1, -1, 1, -1})
      ROOT call = f32[8] call(constant.0, entry.param), to_apply=Fn
    })";
}

TEST_F(HloConstantFoldingTest, DontFoldGetRngSeed) {
  const char* const kModuleStr = R"(
    HloModule test
    ENTRY entry {
      ROOT call = u64[] custom-call(), custom_call_target="GetRngSeed"
    })";
}

TEST_F(HloConstantFoldingTest, DontFoldOptimizationBarrier) {
  const char* const kModuleStr = R"(
    HloModule test
    ENTRY entry {
      c = u32[2]{0} constant({1, 2})
      ROOT ob = u32[2]{0} opt-barrier(c)
    })";
}

TEST_F(HloConstantFoldingTest, DontFoldCallContainingOptimizationBarrier) {
  const char* const kModuleStr = R"(
    HloModule test

    body {
      p = u32[2]{0} parameter(0)
      ROOT ob = u32[2]{0} opt-barrier(p)
    }

    ENTRY entry {
      c = u32[2]{0} constant({1, 2})
      ROOT call = u32[2]{0} call(c), to_apply=body
    })";
}

TEST_F(HloConstantFoldingTest, DontFoldSubByteWidthChangingBitcasts) {
  const char* const kModuleStr = R"(
    HloModule test
    ENTRY entry {
      c32 = s32[4]{0} constant({305419896, -1, 0, 559038737})
      bc = s4[4,8]{1,0:E(4)} bitcast-convert(c32)
      c4 = s4[16]{0:E(4)} constant({0, 1, 2, 3, 4, 5, 6, 7, -8, -7, -6, -5, -4, -3, -2, -1})
      b = s8[8]{0} bitcast(c4)
      ROOT t = (s4[4,8]{1,0:E(4)}, s8[8]{0}) tuple(bc, b)
    })";
}

TEST_F(HloConstantFoldingTest, FoldedConstantKeepsTiledLayout) {
  const char* const kModuleStr = R"(
    HloModule test
    ENTRY entry {
      c0 = u32[1]{0:T(128)} constant({1})
      c1 = u32[1]{0:T(128)} constant({2})
      cc = u32[2]{0:T(128)} concatenate(c0, c1), dimensions={0}
      p0 = u32[2]{0:T(128)} parameter(0)
      ROOT t = (u32[2]{0:T(128)}, u32[2]{0:T(128)}) tuple(cc, p0)
    })";
}

TEST_F(HloConstantFoldingTest, LateOptionsFoldUnstackFusionViaGteRewrite) {
  const char* const kModuleStr = R"(
    HloModule test

    unstack_comp {
      p = u32[2]{0} parameter(0)
      sl_hi = u32[1]{0} slice(p), slice={[1:2]}
      sl_lo = u32[1]{0} slice(p), slice={[0:1]}
      ROOT t = (u32[1]{0}, u32[1]{0}) tuple(sl_hi, sl_lo)
    }

    ENTRY entry {
      key = u32[2]{0} constant({305419896, 43981})
      f = (u32[1]{0}, u32[1]{0}) fusion(key), kind=kLoop, calls=unstack_comp
      g0 = u32[1]{0} get-tuple-element(f), index=0
      g1 = u32[1]{0} get-tuple-element(f), index=1
      r0 = u32[] reshape(g0)
      r1 = u32[] reshape(g1)
      x = u32[] xor(r0, r1)
      p0 = u32[] parameter(0)
      ROOT out = u32[] add(x, p0)
    })";
}
