// The profiler on the host platform, against scripted fake candidates.
#include "kiln/autotune/profiler.h"

#include <gtest/gtest.h>

#include "kiln/autotune/testing/fake_backend.h"
#include "kiln/autotune/testing/test_util.h"
#include "kiln/hlo/computation.h"

namespace kiln::autotune {
namespace {

using testing::FakeBackend;
using testing::FakeBehavior;
using testing::FakeConfig;

constexpr char kAdd[] = R"(
HloModule m
ENTRY e {
  a = f32[1000]{0} parameter(0)
  b = f32[1000]{0} parameter(1)
  ROOT s = f32[1000]{0} add(a, b)
})";

class ProfilerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    host_ = testing::HostDevice::Create();
    ASSERT_NE(host_.device, nullptr);
    module_ = testing::ParseOrDie(kAdd);
    ASSERT_NE(module_, nullptr);
    add_ = module_->entry_computation()->root_instruction();
    backend_ = std::make_unique<FakeBackend>(
        "fake", true, host_.device,
        std::vector<FakeConfig>{
            {.id = 0, .behavior = FakeBehavior::kCorrect},
            {.id = 1, .behavior = FakeBehavior::kWrong},
            {.id = 2, .behavior = FakeBehavior::kPartial},
            {.id = 3, .behavior = FakeBehavior::kRedzoneWrite},
            {.id = 4, .behavior = FakeBehavior::kFrontWrite},
            {.id = 5, .behavior = FakeBehavior::kKernelError},
            {.id = 6, .behavior = FakeBehavior::kEnqueueError},
            {.id = 7, .behavior = FakeBehavior::kCorrect, .busy_us = 20000},
            {.id = 8, .behavior = FakeBehavior::kCorrect, .busy_us = 400000},
            {.id = 9, .behavior = FakeBehavior::kCorrect, .scratch_bytes = 4096},
            {.id = 10, .behavior = FakeBehavior::kCorrect, .busy_us = 3000},
            {.id = 11, .behavior = FakeBehavior::kCompileError},
        });
    options_.redzone.redzone_bytes = 64 << 10;
    options_.repetitions = 3;
    options_.timeout_s = 5;
    auto profiler = Profiler::Create(*host_.device, options_);
    ASSERT_TRUE(profiler.ok()) << profiler.status().ToString();
    profiler_ = std::move(profiler).value();
    KILN_ASSERT_OK(profiler_->Prepare(*add_));
  }

  std::unique_ptr<Candidate> Compile(int id) {
    auto c = backend_->Compile(*add_, FakeBackend::MakeConfig("fake", id));
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    return c.ok() ? std::move(c).value() : nullptr;
  }
  Measurement Run(int id, ProfileRequest request = {}) {
    auto c = Compile(id);
    if (!c) return Measurement{Verdict::kCompileFailed, "compile"};
    return profiler_->Profile(*c, request);
  }
  void MakeReference() {
    Measurement m = Run(0, {.make_reference = true});
    ASSERT_TRUE(m.ok()) << m.message;
    ASSERT_TRUE(profiler_->has_reference());
  }

  testing::HostDevice host_;
  std::unique_ptr<HloModule> module_;
  HloInstruction* add_ = nullptr;
  std::unique_ptr<FakeBackend> backend_;
  ProfileOptions options_;
  std::unique_ptr<Profiler> profiler_;
};

TEST_F(ProfilerTest, CorrectCandidateIsTimed) {
  MakeReference();
  Measurement m = Run(10);
  ASSERT_TRUE(m.ok()) << m.message;
  EXPECT_TRUE(m.timed);
  EXPECT_GE(m.median_us, 2900);  // spins 3 ms
  EXPECT_LE(m.min_us, m.median_us);
  EXPECT_GE(m.max_us, m.median_us);
  EXPECT_GT(m.warmup_us, 0);
  EXPECT_EQ(backend_->launch_calls(), 1 + 3 + 1 + 3);  // reference and candidate: warm-up + 3
}

TEST_F(ProfilerTest, WrongResultsAreCaught) {
  MakeReference();
  Measurement wrong = Run(1);
  EXPECT_EQ(wrong.verdict, Verdict::kWrongResult);
  EXPECT_NE(wrong.message.find("1000 elements differ"), std::string::npos) << wrong.message;
  Measurement partial = Run(2);  // the unwritten element still holds the NaN pattern
  EXPECT_EQ(partial.verdict, Verdict::kWrongResult);
  EXPECT_NE(partial.message.find("1 element differ"), std::string::npos) << partial.message;
  EXPECT_NE(partial.message.find("first at 999"), std::string::npos) << partial.message;
  EXPECT_TRUE(Run(0).ok());
}

TEST_F(ProfilerTest, RedzoneWritesAreCaughtAndRepaired) {
  MakeReference();
  Measurement rear = Run(3);
  EXPECT_EQ(rear.verdict, Verdict::kRedzoneWritten);
  EXPECT_NE(rear.message.find("output 0"), std::string::npos) << rear.message;
  EXPECT_NE(rear.message.find("8 bytes past the end"), std::string::npos) << rear.message;
  // The next candidate is not blamed for the previous one's damage.
  EXPECT_TRUE(Run(0).ok());
  Measurement front = Run(4);
  EXPECT_EQ(front.verdict, Verdict::kRedzoneWritten);
  EXPECT_NE(front.message.find("before the start"), std::string::npos) << front.message;
  EXPECT_TRUE(Run(0).ok());
}

TEST_F(ProfilerTest, LaunchFailuresLeaveTheProfilerUsable) {
  MakeReference();
  Measurement kernel = Run(5);
  EXPECT_EQ(kernel.verdict, Verdict::kLaunchFailed);
  EXPECT_NE(kernel.message.find("fake kernel failure"), std::string::npos) << kernel.message;
  Measurement enqueue = Run(6);
  EXPECT_EQ(enqueue.verdict, Verdict::kLaunchFailed);
  EXPECT_NE(enqueue.message.find("fake enqueue failure"), std::string::npos) << enqueue.message;
  Measurement after = Run(10);
  EXPECT_TRUE(after.ok()) << after.message;
}

TEST_F(ProfilerTest, SlowCandidatesAreCutOffAndHungOnesTimeOut) {
  MakeReference();
  Measurement slow = Run(7, {.best_us = 1000});  // 20 ms vs a 1 ms best
  EXPECT_EQ(slow.verdict, Verdict::kTooSlow);
  EXPECT_FALSE(slow.timed);
  EXPECT_GE(slow.median_us, 19000);
  EXPECT_EQ(backend_->launch_calls(), 4 + 2);  // the warm-up and one timed run

  options_.timeout_s = 0.05;
  auto profiler = Profiler::Create(*host_.device, options_);
  ASSERT_TRUE(profiler.ok());
  KILN_ASSERT_OK((*profiler)->Prepare(*add_));
  auto hung = Compile(8);  // spins 400 ms
  Measurement m = (*profiler)->Profile(*hung);
  EXPECT_EQ(m.verdict, Verdict::kTimeout);
  auto fine = Compile(0);
  EXPECT_TRUE((*profiler)->Profile(*fine).ok());
}

TEST_F(ProfilerTest, ScratchIsAllocatedAndReported) {
  MakeReference();
  Measurement m = Run(9);
  ASSERT_TRUE(m.ok()) << m.message;
  EXPECT_EQ(m.scratch_bytes, 4096u);
}

TEST_F(ProfilerTest, DeterminismModeSkipsTiming) {
  MakeReference();
  Measurement m = Run(10, {.time_it = false});
  ASSERT_TRUE(m.ok()) << m.message;
  EXPECT_FALSE(m.timed);
  EXPECT_EQ(m.median_us, m.warmup_us);
}

TEST_F(ProfilerTest, WithoutAReferenceOutputsAreNotJudged) {
  // Nothing trusted ran: a wrong candidate cannot be told from a right one.
  EXPECT_FALSE(profiler_->has_reference());
  EXPECT_TRUE(Run(1).ok());
}

TEST_F(ProfilerTest, InputsAreDeterministicAndInRange) {
  // Two profilers with the same seed give the reference the same outputs: a candidate checked
  // against one profiler's reference passes against the other's.
  auto other = Profiler::Create(*host_.device, options_);
  ASSERT_TRUE(other.ok());
  KILN_ASSERT_OK((*other)->Prepare(*add_));
  auto c = Compile(0);
  ASSERT_TRUE((*other)->Profile(*c, {.make_reference = true}).ok());
  MakeReference();
  EXPECT_TRUE(profiler_->Profile(*c).ok());
  EXPECT_TRUE((*other)->Profile(*c).ok());
}

TEST(ArrayLeavesTest, FlattensTuplesAndRejectsTokens) {
  Shape t = Shape::Tuple({Shape::ArrayWithDefaultLayout(PrimitiveType::kF32, {2}),
                          Shape::Tuple({Shape::ArrayWithDefaultLayout(PrimitiveType::kS8, {3}),
                                        Shape::ArrayWithDefaultLayout(PrimitiveType::kBF16, {4})})});
  KILN_ASSERT_OK_AND_ASSIGN(std::vector<Shape> leaves, ArrayLeaves(t));
  ASSERT_EQ(leaves.size(), 3u);
  EXPECT_EQ(leaves[1].element_type(), PrimitiveType::kS8);
  EXPECT_EQ(LeafBytes(leaves[2]), 8u);
  EXPECT_EQ(ArrayLeaves(Shape::Token()).status().code(), StatusCode::kUnimplemented);
}

}  // namespace
}  // namespace kiln::autotune
