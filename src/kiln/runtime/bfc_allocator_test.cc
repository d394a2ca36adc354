// BFC allocator over a fake backing region: addresses are never dereferenced, so the tests use
// a fake address space with a capacity.
#include "kiln/runtime/bfc_allocator.h"

#include <map>
#include <memory>
#include <random>
#include <thread>

#include <gtest/gtest.h>

#include "kiln/runtime/test_macros.h"

namespace kiln::runtime {
namespace {

constexpr uint64_t KiB = 1024, MiB = 1024 * 1024;

// The fake backing store's state, shared with the test after the allocator takes ownership.
struct FakeSpace {
  uint64_t capacity = UINT64_MAX;  // live region bytes it will hand out
  uint64_t next_address = uint64_t{1} << 40;
  std::map<uint64_t, uint64_t> live;  // base → size
  uint64_t live_bytes = 0;
  int allocate_calls = 0;
  int free_calls = 0;
};

class FakeSubAllocator final : public SubAllocator {
 public:
  explicit FakeSubAllocator(std::shared_ptr<FakeSpace> space) : space_(std::move(space)) {}
  StatusOr<void*> AllocateRegion(uint64_t bytes) override {
    ++space_->allocate_calls;
    if (bytes > space_->capacity - space_->live_bytes) {
      return ResourceExhausted("fake device out of memory (", bytes, " bytes asked, ",
                               space_->capacity - space_->live_bytes, " left)");
    }
    uint64_t base = space_->next_address;
    space_->next_address += (bytes + 65535) & ~uint64_t{65535};  // leave no adjacency
    space_->next_address += 65536;
    space_->live[base] = bytes;
    space_->live_bytes += bytes;
    return reinterpret_cast<void*>(base);
  }
  Status FreeRegion(void* base, uint64_t bytes) override {
    ++space_->free_calls;
    auto it = space_->live.find(reinterpret_cast<uint64_t>(base));
    if (it == space_->live.end() || it->second != bytes) return Internal("bad FreeRegion");
    space_->live_bytes -= bytes;
    space_->live.erase(it);
    return OkStatus();
  }
  MemoryKind memory_kind() const override { return MemoryKind::kDevice; }

 private:
  std::shared_ptr<FakeSpace> space_;
};

struct Fixture {
  std::shared_ptr<FakeSpace> space = std::make_shared<FakeSpace>();
  std::unique_ptr<BfcAllocator> bfc;
};

Fixture Make(BfcOptions options, uint64_t capacity = UINT64_MAX) {
  Fixture f;
  f.space->capacity = capacity;
  StatusOr<std::unique_ptr<BfcAllocator>> bfc =
      BfcAllocator::Create(std::make_unique<FakeSubAllocator>(f.space), std::move(options));
  EXPECT_TRUE(bfc.ok()) << bfc.status().ToString();
  if (bfc.ok()) f.bfc = std::move(bfc).value();
  return f;
}

BfcOptions Options(uint64_t initial_region, uint64_t limit = 0) {
  BfcOptions options;
  options.name = "test";
  options.initial_region_bytes = initial_region;
  options.limit_bytes = limit;
  return options;
}

AllocatorStats Stats(const BfcAllocator& bfc) { return *bfc.GetStats(); }

TEST(BfcAllocatorTest, BinsBySizeClass) {
  EXPECT_EQ(BfcAllocator::BinIndex(1), 0);
  EXPECT_EQ(BfcAllocator::BinIndex(256), 0);
  EXPECT_EQ(BfcAllocator::BinIndex(511), 0);
  EXPECT_EQ(BfcAllocator::BinIndex(512), 1);
  EXPECT_EQ(BfcAllocator::BinIndex(1023), 1);
  EXPECT_EQ(BfcAllocator::BinIndex(1024), 2);
  EXPECT_EQ(BfcAllocator::BinIndex(256 * MiB - 1), 19);
  EXPECT_EQ(BfcAllocator::BinIndex(256 * MiB), 20);
  EXPECT_EQ(BfcAllocator::BinIndex(uint64_t{1} << 62), 20);
}

TEST(BfcAllocatorTest, RoundsAndAligns) {
  Fixture f = Make(Options(1 * MiB));
  KILN_ASSERT_OK_AND_ASSIGN(DeviceMemory a, f.bfc->Allocate(1));
  KILN_ASSERT_OK_AND_ASSIGN(DeviceMemory b, f.bfc->Allocate(300));
  EXPECT_EQ(a.size, 1u);
  EXPECT_EQ(a.address() % 256, 0u);
  EXPECT_EQ(b.address(), a.address() + 256) << "a 1-byte request takes one 256-byte unit";
  EXPECT_EQ(Stats(*f.bfc).bytes_in_use, 256u + 512u);
  KILN_ASSERT_OK_AND_ASSIGN(DeviceMemory zero, f.bfc->Allocate(0));
  EXPECT_TRUE(zero.is_null());
  KILN_EXPECT_OK(f.bfc->CheckInvariants());
}

TEST(BfcAllocatorTest, SplitsAndCoalesces) {
  Fixture f = Make(Options(1 * MiB));
  KILN_ASSERT_OK_AND_ASSIGN(DeviceMemory a, f.bfc->Allocate(1000));
  KILN_ASSERT_OK_AND_ASSIGN(DeviceMemory b, f.bfc->Allocate(1000));
  KILN_ASSERT_OK_AND_ASSIGN(DeviceMemory c, f.bfc->Allocate(1000));
  EXPECT_EQ(b.address(), a.address() + 1024);
  EXPECT_EQ(c.address(), b.address() + 1024);
  EXPECT_EQ(Stats(*f.bfc).num_regions, 1u);

  KILN_ASSERT_OK(f.bfc->Deallocate(b));  // a hole between two live chunks
  KILN_EXPECT_OK(f.bfc->CheckInvariants());
  EXPECT_EQ(Stats(*f.bfc).largest_free_block, 1 * MiB - 3 * 1024);
  KILN_ASSERT_OK(f.bfc->Deallocate(a));  // merges with b's hole
  KILN_EXPECT_OK(f.bfc->CheckInvariants());
  KILN_ASSERT_OK_AND_ASSIGN(DeviceMemory ab, f.bfc->Allocate(2048));
  EXPECT_EQ(ab.address(), a.address()) << "a and b should have merged into one 2 KiB chunk";
  KILN_ASSERT_OK(f.bfc->Deallocate(ab));
  KILN_ASSERT_OK(f.bfc->Deallocate(c));  // everything merges back into one chunk
  KILN_EXPECT_OK(f.bfc->CheckInvariants());
  AllocatorStats stats = Stats(*f.bfc);
  EXPECT_EQ(stats.largest_free_block, 1 * MiB);
  EXPECT_EQ(stats.fragmentation, 0.0);
  EXPECT_EQ(stats.bytes_in_use, 0u);
}

TEST(BfcAllocatorTest, PicksTheBestFit) {
  Fixture f = Make(Options(1 * MiB));
  // Holes of 4 KiB, 2 KiB and 8 KiB separated by live 256-byte guards.
  std::vector<DeviceMemory> keep;
  std::vector<DeviceMemory> holes;
  for (uint64_t size : {4 * KiB, 2 * KiB, 8 * KiB}) {
    KILN_ASSERT_OK_AND_ASSIGN(DeviceMemory hole, f.bfc->Allocate(size));
    KILN_ASSERT_OK_AND_ASSIGN(DeviceMemory guard, f.bfc->Allocate(256));
    holes.push_back(hole);
    keep.push_back(guard);
  }
  for (DeviceMemory h : holes) KILN_ASSERT_OK(f.bfc->Deallocate(h));
  KILN_ASSERT_OK_AND_ASSIGN(DeviceMemory x, f.bfc->Allocate(2000));
  EXPECT_EQ(x.address(), holes[1].address()) << "2000 bytes fit best in the 2 KiB hole";
  KILN_ASSERT_OK_AND_ASSIGN(DeviceMemory y, f.bfc->Allocate(3000));
  EXPECT_EQ(y.address(), holes[0].address()) << "3000 bytes fit best in the 4 KiB hole";
  KILN_ASSERT_OK_AND_ASSIGN(DeviceMemory z, f.bfc->Allocate(5000));
  EXPECT_EQ(z.address(), holes[2].address()) << "5000 bytes fit best in the 8 KiB hole";
  // y took 3072 of the 4 KiB hole: the 1 KiB rest was split off and is free.
  KILN_ASSERT_OK_AND_ASSIGN(DeviceMemory w, f.bfc->Allocate(1024));
  EXPECT_EQ(w.address(), holes[0].address() + 3072);
  KILN_EXPECT_OK(f.bfc->CheckInvariants());
}

TEST(BfcAllocatorTest, GrowsRegionsGeometrically) {
  Fixture f = Make(Options(1 * MiB));
  KILN_ASSERT_OK_AND_ASSIGN(DeviceMemory a, f.bfc->Allocate(700 * KiB));
  EXPECT_EQ(Stats(*f.bfc).num_regions, 1u);
  EXPECT_EQ(Stats(*f.bfc).bytes_reserved, 1 * MiB);
  KILN_ASSERT_OK_AND_ASSIGN(DeviceMemory b, f.bfc->Allocate(700 * KiB));
  EXPECT_EQ(Stats(*f.bfc).num_regions, 2u);
  EXPECT_EQ(Stats(*f.bfc).bytes_reserved, 3 * MiB) << "the second region doubles to 2 MiB";
  KILN_ASSERT_OK_AND_ASSIGN(DeviceMemory c, f.bfc->Allocate(700 * KiB));
  EXPECT_EQ(Stats(*f.bfc).num_regions, 2u) << "fits in the rest of the 2 MiB region";
  KILN_ASSERT_OK_AND_ASSIGN(DeviceMemory d, f.bfc->Allocate(10 * MiB));
  EXPECT_EQ(Stats(*f.bfc).num_regions, 3u);
  EXPECT_EQ(Stats(*f.bfc).bytes_reserved, 13 * MiB) << "a big request gets a region its size";
  EXPECT_EQ(f.space->live.size(), 3u);
  for (DeviceMemory m : {a, b, c, d}) KILN_ASSERT_OK(f.bfc->Deallocate(m));
  KILN_EXPECT_OK(f.bfc->CheckInvariants());
}

TEST(BfcAllocatorTest, CapsRegionGrowth) {
  BfcOptions options = Options(1 * MiB);
  options.max_region_bytes = 2 * MiB;
  Fixture f = Make(options);
  std::vector<DeviceMemory> blocks;
  for (int i = 0; i < 4; ++i) {
    KILN_ASSERT_OK_AND_ASSIGN(DeviceMemory m, f.bfc->Allocate(1 * MiB));
    blocks.push_back(m);
  }
  // Regions: 1 MiB, 2 MiB (holds two), 2 MiB (capped).
  EXPECT_EQ(Stats(*f.bfc).bytes_reserved, 5 * MiB);
  for (DeviceMemory m : blocks) KILN_ASSERT_OK(f.bfc->Deallocate(m));
}

TEST(BfcAllocatorTest, EnforcesTheLimitAndReportsOom) {
  Fixture f = Make(Options(1 * MiB, 4 * MiB));
  KILN_ASSERT_OK_AND_ASSIGN(DeviceMemory weights, f.bfc->Allocate(3 * MiB, "weights"));
  KILN_ASSERT_OK_AND_ASSIGN(DeviceMemory small, f.bfc->Allocate(100 * KiB, "scratch"));
  StatusOr<DeviceMemory> big = f.bfc->Allocate(2 * MiB, "activations");
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.status().code(), StatusCode::kResourceExhausted);
  const std::string& message = big.status().message();
  EXPECT_NE(message.find("bfc 'test': out of memory allocating 2.00 MiB for 'activations'"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("limit of 4.00 MiB"), std::string::npos) << message;
  EXPECT_NE(message.find("Largest live allocations: 3.00 MiB 'weights' #1; 100.00 KiB "
                         "'scratch' #2."),
            std::string::npos)
      << message;
  EXPECT_EQ(Stats(*f.bfc).num_ooms, 1u);
  EXPECT_LE(Stats(*f.bfc).bytes_reserved, 4 * MiB);
  // What still fits under the limit is allocated.
  KILN_ASSERT_OK_AND_ASSIGN(DeviceMemory rest, f.bfc->Allocate(900 * KiB));
  for (DeviceMemory m : {weights, small, rest}) KILN_ASSERT_OK(f.bfc->Deallocate(m));
  KILN_EXPECT_OK(f.bfc->CheckInvariants());
}

TEST(BfcAllocatorTest, ListsOnlyTheLargestLiveAllocations) {
  BfcOptions options = Options(1 * MiB, 2 * MiB);
  options.oom_report_allocations = 2;
  Fixture f = Make(options);
  std::vector<DeviceMemory> blocks;
  for (int i = 1; i <= 5; ++i) {
    KILN_ASSERT_OK_AND_ASSIGN(DeviceMemory m,
                              f.bfc->Allocate(i * 10 * KiB, "t" + std::to_string(i)));
    blocks.push_back(m);
  }
  auto largest = f.bfc->LargestLiveAllocations(3);
  ASSERT_EQ(largest.size(), 3u);
  EXPECT_EQ(largest[0].tag, "t5");
  EXPECT_EQ(largest[1].tag, "t4");
  EXPECT_EQ(largest[2].tag, "t3");
  EXPECT_EQ(largest[0].requested_bytes, 50 * KiB);
  StatusOr<DeviceMemory> oom = f.bfc->Allocate(4 * MiB);
  ASSERT_FALSE(oom.ok());
  EXPECT_NE(oom.status().message().find("'t5' #5; 40.00 KiB 't4' #4; and 3 more"),
            std::string::npos)
      << oom.status().message();
}

TEST(BfcAllocatorTest, ResolvesFractionalLimits) {
  BfcOptions options = Options(1 * MiB);
  options.limit_fraction = 0.5;
  options.memory_size = 1000 * MiB;
  Fixture f = Make(options);
  EXPECT_EQ(Stats(*f.bfc).bytes_limit, 500 * MiB);

  options.limit_bytes = 100 * MiB;  // both: the smaller wins
  Fixture g = Make(options);
  EXPECT_EQ(Stats(*g.bfc).bytes_limit, 100 * MiB);

  BfcOptions no_size = Options(1 * MiB);
  no_size.limit_fraction = 0.5;
  EXPECT_EQ(BfcAllocator::Create(std::make_unique<FakeSubAllocator>(f.space), no_size)
                .status()
                .code(),
            StatusCode::kInvalidArgument);
  BfcOptions too_big = options;
  too_big.limit_fraction = 1.5;
  EXPECT_EQ(BfcAllocator::Create(std::make_unique<FakeSubAllocator>(f.space), too_big)
                .status()
                .code(),
            StatusCode::kInvalidArgument);
  BfcOptions bad_alignment = Options(1 * MiB);
  bad_alignment.alignment = 100;
  EXPECT_EQ(BfcAllocator::Create(std::make_unique<FakeSubAllocator>(f.space), bad_alignment)
                .status()
                .code(),
            StatusCode::kInvalidArgument);
}

TEST(BfcAllocatorTest, FallsBackToTheExactSizeWhenTheBackingStoreIsShort) {
  Fixture f = Make(Options(4 * MiB), /*capacity=*/3 * MiB);
  KILN_ASSERT_OK_AND_ASSIGN(DeviceMemory a, f.bfc->Allocate(1 * MiB));
  EXPECT_EQ(Stats(*f.bfc).bytes_reserved, 1 * MiB) << "4 MiB failed, the exact 1 MiB succeeded";
  KILN_ASSERT_OK_AND_ASSIGN(DeviceMemory b, f.bfc->Allocate(2 * MiB));
  StatusOr<DeviceMemory> c = f.bfc->Allocate(1 * MiB);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("fake device out of memory"), std::string::npos)
      << c.status().message();
  KILN_ASSERT_OK(f.bfc->Deallocate(a));
  KILN_ASSERT_OK(f.bfc->Deallocate(b));
}

TEST(BfcAllocatorTest, ReleasesFreeRegions) {
  Fixture f = Make(Options(1 * MiB));
  KILN_ASSERT_OK_AND_ASSIGN(DeviceMemory a, f.bfc->Allocate(700 * KiB));
  KILN_ASSERT_OK_AND_ASSIGN(DeviceMemory b, f.bfc->Allocate(700 * KiB));
  KILN_ASSERT_OK(f.bfc->Deallocate(a));
  EXPECT_EQ(f.bfc->ReleaseFreeRegions(), 1 * MiB) << "only a's region is wholly free";
  EXPECT_EQ(Stats(*f.bfc).num_regions, 1u);
  EXPECT_EQ(f.space->live.size(), 1u);
  KILN_ASSERT_OK(f.bfc->Deallocate(b));
  EXPECT_EQ(f.bfc->ReleaseFreeRegions(), 2 * MiB);
  EXPECT_EQ(f.space->live_bytes, 0u);
  KILN_EXPECT_OK(f.bfc->CheckInvariants());
}

TEST(BfcAllocatorTest, ReleasesCachedRegionsToStayUnderTheLimit) {
  Fixture f = Make(Options(1 * MiB, 4 * MiB));
  KILN_ASSERT_OK_AND_ASSIGN(DeviceMemory a, f.bfc->Allocate(3 * MiB));
  KILN_ASSERT_OK(f.bfc->Deallocate(a));
  // 3 MiB are cached; 3.5 MiB does not fit in them nor next to them, unless they go back.
  KILN_ASSERT_OK_AND_ASSIGN(DeviceMemory b, f.bfc->Allocate(3 * MiB + 512 * KiB));
  EXPECT_EQ(Stats(*f.bfc).num_regions, 1u);
  EXPECT_EQ(Stats(*f.bfc).bytes_reserved, 3 * MiB + 512 * KiB);
  KILN_ASSERT_OK(f.bfc->Deallocate(b));
}

TEST(BfcAllocatorTest, RejectsForeignAndDoubleFrees) {
  Fixture f = Make(Options(1 * MiB));
  KILN_ASSERT_OK_AND_ASSIGN(DeviceMemory a, f.bfc->Allocate(1000));
  KILN_ASSERT_OK(f.bfc->Deallocate(a));
  Status twice = f.bfc->Deallocate(a);
  EXPECT_EQ(twice.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(twice.message().find("double free"), std::string::npos);
  Status foreign = f.bfc->Deallocate(DeviceMemory{reinterpret_cast<void*>(0x1234), 16});
  EXPECT_EQ(foreign.code(), StatusCode::kInvalidArgument);
  KILN_EXPECT_OK(f.bfc->CheckInvariants());
}

TEST(BfcAllocatorTest, Preallocates) {
  BfcOptions options = Options(1 * MiB, 8 * MiB);
  options.preallocate = true;
  Fixture f = Make(options);
  EXPECT_EQ(Stats(*f.bfc).bytes_reserved, 8 * MiB);
  EXPECT_EQ(f.space->allocate_calls, 1);
  KILN_ASSERT_OK_AND_ASSIGN(DeviceMemory a, f.bfc->Allocate(5 * MiB));
  KILN_ASSERT_OK_AND_ASSIGN(DeviceMemory b, f.bfc->Allocate(3 * MiB));
  EXPECT_EQ(f.space->allocate_calls, 1);
  EXPECT_FALSE(f.bfc->Allocate(256).ok());
  KILN_ASSERT_OK(f.bfc->Deallocate(a));
  KILN_ASSERT_OK(f.bfc->Deallocate(b));
  BfcOptions unlimited = Options(1 * MiB);
  unlimited.preallocate = true;
  EXPECT_EQ(BfcAllocator::Create(std::make_unique<FakeSubAllocator>(f.space), unlimited)
                .status()
                .code(),
            StatusCode::kInvalidArgument);
}

TEST(BfcAllocatorTest, KeepsStatistics) {
  Fixture f = Make(Options(1 * MiB));
  std::vector<DeviceMemory> quarters;
  for (int i = 0; i < 4; ++i) {
    KILN_ASSERT_OK_AND_ASSIGN(DeviceMemory m, f.bfc->Allocate(256 * KiB));
    quarters.push_back(m);
  }
  AllocatorStats full = Stats(*f.bfc);
  EXPECT_EQ(full.bytes_in_use, 1 * MiB);
  EXPECT_EQ(full.largest_free_block, 0u);
  EXPECT_EQ(full.fragmentation, 0.0);
  EXPECT_EQ(full.num_live_allocs, 4u);
  KILN_ASSERT_OK(f.bfc->Deallocate(quarters[0]));
  KILN_ASSERT_OK(f.bfc->Deallocate(quarters[2]));
  AllocatorStats holes = Stats(*f.bfc);
  EXPECT_EQ(holes.bytes_in_use, 512 * KiB);
  EXPECT_EQ(holes.peak_bytes_in_use, 1 * MiB);
  EXPECT_EQ(holes.largest_free_block, 256 * KiB);
  EXPECT_DOUBLE_EQ(holes.fragmentation, 0.5) << "two separate 256 KiB holes";
  EXPECT_EQ(holes.num_allocs, 4u);
  EXPECT_EQ(holes.num_live_allocs, 2u);
  EXPECT_NE(holes.ToString().find("fragmentation 0.500"), std::string::npos) << holes.ToString();
  KILN_ASSERT_OK(f.bfc->Deallocate(quarters[1]));
  KILN_ASSERT_OK(f.bfc->Deallocate(quarters[3]));
}

TEST(BfcAllocatorTest, SurvivesRandomWorkloads) {
  BfcOptions options = Options(256 * KiB, 64 * MiB);
  Fixture f = Make(options);
  std::mt19937_64 rng(42);
  std::vector<DeviceMemory> live;
  uint64_t ooms = 0;
  for (int step = 0; step < 20000; ++step) {
    bool allocate = live.empty() || rng() % 100 < 55;
    if (allocate) {
      // Mostly small, sometimes large sizes.
      uint64_t size = rng() % 10 == 0 ? 1 + rng() % (4 * MiB) : 1 + rng() % (16 * KiB);
      StatusOr<DeviceMemory> m = f.bfc->Allocate(size);
      if (m.ok()) {
        live.push_back(*m);
      } else {
        ASSERT_EQ(m.status().code(), StatusCode::kResourceExhausted);
        ++ooms;
      }
    } else {
      size_t i = rng() % live.size();
      KILN_ASSERT_OK(f.bfc->Deallocate(live[i]));
      live[i] = live.back();
      live.pop_back();
    }
    if (step % 1000 == 0) KILN_ASSERT_OK(f.bfc->CheckInvariants());
  }
  // Live allocations never overlap.
  std::sort(live.begin(), live.end(),
            [](const DeviceMemory& a, const DeviceMemory& b) { return a.address() < b.address(); });
  for (size_t i = 1; i < live.size(); ++i) {
    ASSERT_LE(live[i - 1].address() + live[i - 1].size, live[i].address());
  }
  for (DeviceMemory m : live) KILN_ASSERT_OK(f.bfc->Deallocate(m));
  KILN_ASSERT_OK(f.bfc->CheckInvariants());
  AllocatorStats stats = Stats(*f.bfc);
  EXPECT_EQ(stats.bytes_in_use, 0u);
  EXPECT_LE(stats.peak_bytes_reserved, 64 * MiB);
  EXPECT_EQ(stats.num_ooms, ooms);
  // With everything free, each region is one free chunk again.
  EXPECT_EQ(f.bfc->ReleaseFreeRegions(), stats.bytes_reserved);
}

TEST(BfcAllocatorTest, IsThreadSafe) {
  Fixture f = Make(Options(1 * MiB));
  std::vector<std::thread> threads;
  std::atomic<int> errors{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 rng(t);
      std::vector<DeviceMemory> mine;
      for (int i = 0; i < 3000; ++i) {
        if (mine.empty() || rng() % 2 == 0) {
          StatusOr<DeviceMemory> m = f.bfc->Allocate(1 + rng() % 50000);
          if (m.ok()) mine.push_back(*m); else ++errors;
        } else {
          if (!f.bfc->Deallocate(mine.back()).ok()) ++errors;
          mine.pop_back();
        }
      }
      for (DeviceMemory m : mine) {
        if (!f.bfc->Deallocate(m).ok()) ++errors;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(errors.load(), 0);
  KILN_EXPECT_OK(f.bfc->CheckInvariants());
  EXPECT_EQ(Stats(*f.bfc).bytes_in_use, 0u);
}

TEST(BfcAllocatorTest, ReturnsRegionsOnDestruction) {
  Fixture f = Make(Options(1 * MiB));
  KILN_ASSERT_OK_AND_ASSIGN(DeviceMemory a, f.bfc->Allocate(3 * MiB));
  (void)a;  // leaked on purpose: the destructor logs and frees the region anyway
  EXPECT_EQ(f.space->live.size(), 1u);
  f.bfc.reset();
  EXPECT_TRUE(f.space->live.empty());
}

}  // namespace
}  // namespace kiln::runtime
