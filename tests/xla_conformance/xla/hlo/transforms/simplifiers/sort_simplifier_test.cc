// Excerpt of openxla/xla xla/hlo/transforms/simplifiers/sort_simplifier_test.cc at 827aca0eb2748018b7e803606250f9ea56939ab0:
// the tests' HLO raw strings verbatim, the C++ between them left out.

TEST_F(SortSimplifierTest, RemoveUnusedSortOperandArrayResult) {
  const char* hlo_string = R"(
   HloModule permutation_sort

   compare {
     p.0.lhs = f32[] parameter(0)
     p.0.rhs = f32[] parameter(1)
     p.1.lhs = s32[] parameter(2)
     p.1.rhs = s32[] parameter(3)
     ROOT lt = pred[] compare(p.0.lhs, p.0.rhs), direction=LT
   }

   ENTRY sort_computation {
     keys = f32[64,8732]{1,0} parameter(0)
     values = s32[64,8732]{1,0} parameter(1)
     sort = (f32[64,8732]{1,0}, s32[64,8732]{1,0}) sort(keys, values),
       dimensions={1}, to_apply=compare
     ROOT gte = f32[64,8732]{1,0} get-tuple-element(sort), index=0
   })";
}

TEST_F(SortSimplifierTest, RemoveUnusedSortOperandTuple) {
  const char* hlo_string = R"(
   HloModule permutation_sort

   compare {
     p.0.lhs = f32[] parameter(0)
     p.0.rhs = f32[] parameter(1)
     p.1.lhs = s32[] parameter(2)
     p.1.rhs = s32[] parameter(3)
     p.2.lhs = u32[] parameter(4)
     p.2.rhs = u32[] parameter(5)
     ROOT lt = pred[] compare(p.0.lhs, p.0.rhs), direction=LT
   }

   ENTRY sort_computation {
     keys = f32[64,87] parameter(0)
     values.0 = s32[64,87] parameter(1)
     values.1 = u32[64,87] parameter(2)
     sort = (f32[64,87], s32[64,87], u32[64,87]) sort(
         keys, values.0, values.1),
       dimensions={1}, to_apply=compare
     gte.0 = f32[64,87] get-tuple-element(sort), index=0
     gte.1 = u32[64,87] get-tuple-element(sort), index=2
     ROOT tuple = (f32[64,87], u32[64,87]) tuple(gte.0, gte.1)
   })";
}

TEST_F(SortSimplifierTest, RemoveUnusedFirstOperand) {
  const char* hlo_string = R"(
   HloModule permutation_sort

   compare {
     p.0.lhs = f32[] parameter(0)
     p.0.rhs = f32[] parameter(1)
     p.1.lhs = s32[] parameter(2)
     p.1.rhs = s32[] parameter(3)
     ROOT lt = pred[] compare(p.1.lhs, p.1.rhs), direction=LT
   }

   ENTRY sort_computation {
     keys = f32[64,8732]{1,0} parameter(0)
     values = s32[64,8732]{1,0} parameter(1)
     sort = (f32[64,8732]{1,0}, s32[64,8732]{1,0}) sort(keys, values),
       dimensions={1}, to_apply=compare
     ROOT gte = s32[64,8732]{1,0} get-tuple-element(sort), index=1
   })";
}

TEST_F(SortSimplifierTest, DontRemoveUnusedSortOperandWhenSortIsRoot) {
  const char* hlo_string = R"(
   HloModule sort_root

   compare {
     p.0.lhs = f32[] parameter(0)
     p.0.rhs = f32[] parameter(1)
     p.1.lhs = s32[] parameter(2)
     p.1.rhs = s32[] parameter(3)
     ROOT lt = pred[] compare(p.0.lhs, p.0.rhs), direction=LT
   }

   ENTRY sort_computation {
     keys = f32[64] parameter(0)
     values = s32[64] parameter(1)
     ROOT sort = (f32[64], s32[64]) sort(keys, values),
       dimensions={0}, to_apply=compare
   })";
  SortSimplifier simplifier;
  EXPECT_THAT(simplifier.Run(module.get()), IsOkAndHolds(false));
}

TEST_F(SortSimplifierTest, DoesNotRemoveOldComparatorWhenShared) {
  const char* hlo_string = R"(
   HloModule shared_comparator

   // CHECK-DAG: %compare ({{.*}}p.0.lhs: f32[], {{.*}}p.0.rhs: f32[], {{.*}}p.1.lhs: s32[], {{.*}}p.1.rhs: s32[]) -> pred[]
   // CHECK-DAG: %compare.clone ({{.*}}) -> pred[]
   compare {
     p.0.lhs = f32[] parameter(0)
     p.0.rhs = f32[] parameter(1)
     p.1.lhs = s32[] parameter(2)
     p.1.rhs = s32[] parameter(3)
     ROOT lt = pred[] compare(p.0.lhs, p.0.rhs), direction=LT
   }

   // CHECK: ENTRY %sort_computation
   ENTRY sort_computation {
     keys1 = f32[64] parameter(0)
     values1 = s32[64] parameter(1)
     // CHECK: %[[NEW_SORT:.*]] = f32[64]{{.*}}sort(%keys1), dimensions={0}, to_apply=%compare.clone
     sort1 = (f32[64], s32[64]) sort(keys1, values1),
       dimensions={0}, to_apply=compare
     gte1 = f32[64] get-tuple-element(sort1), index=0

     keys2 = f32[64] parameter(2)
     values2 = s32[64] parameter(3)
     // CHECK: %sort2 = (f32[64]{{.*}}, s32[64]{{.*}}) sort(%keys2, %values2), dimensions={0}, to_apply=%compare
     sort2 = (f32[64], s32[64]) sort(keys2, values2),
       dimensions={0}, to_apply=compare
     gte2.0 = f32[64] get-tuple-element(sort2), index=0
     gte2.1 = s32[64] get-tuple-element(sort2), index=1

     // CHECK: ROOT %tuple = (f32[64]{{.*}}, f32[64]{{.*}}, s32[64]{{.*}}) tuple(%[[NEW_SORT]], %sort2#0, %sort2#1)
     ROOT tuple = (f32[64], f32[64], s32[64]) tuple(gte1, gte2.0, gte2.1)
   })";
}
