// The conformance cases (see conformance.h). Every case runs on every driver instantiated.
#include <algorithm>
#include <atomic>
#include <cstring>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include "kiln/runtime/bfc_allocator.h"
#include "kiln/runtime/cts/conformance.h"
#include "kiln/runtime/stream_pool.h"
#include "kiln/runtime/test_macros.h"

namespace kiln::runtime::cts {

void ConformanceTest::SetUp() {
  StatusOr<Device*> device = GetParam().device();
  if (!device.ok()) {
    GTEST_SKIP() << "no " << GetParam().name << " device: " << device.status().message();
  }
  device_ = *device;
  StatusOr<ModuleSpec> spec = GetParam().kernels(*device_);
  ASSERT_TRUE(spec.ok()) << "building the suite's kernels: " << spec.status().ToString();
  StatusOr<std::unique_ptr<Module>> module = device_->LoadModule(*spec);
  ASSERT_TRUE(module.ok()) << "loading the suite's kernels: " << module.status().ToString();
  module_ = std::move(module).value();
}

Kernel& ConformanceTest::kernel(const std::string& name) {
  StatusOr<Kernel*> k = module_->GetKernel(name);
  EXPECT_TRUE(k.ok()) << k.status().ToString();
  return **k;  // a failed lookup already failed the test; the crash that follows is loud
}

namespace {

std::vector<uint8_t> RandomBytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> v(n);
  for (auto& b : v) b = static_cast<uint8_t>(rng());
  return v;
}

StatusOr<std::unique_ptr<Stream>> NewStream(Device& device,
                                            StreamPriority priority = StreamPriority::kNormal) {
  StreamOptions options;
  options.priority = priority;
  return device.CreateStream(options);
}

}  // namespace

TEST_P(ConformanceTest, DescribesDevice) {
  const DeviceDescription& d = device().description();
  EXPECT_FALSE(d.platform.empty());
  EXPECT_FALSE(d.name.empty());
  EXPECT_GT(d.memory_bytes, 0u);
  EXPECT_GT(d.multiprocessor_count, 0);
  EXPECT_GT(d.warp_size, 0);
  EXPECT_GT(d.max_threads_per_block, 0);
  EXPECT_GT(d.shared_memory_per_block, 0u);
  EXPECT_FALSE(d.ToString().empty());
  EXPECT_EQ(d.Fingerprint(), d.Fingerprint());
  KILN_ASSERT_OK_AND_ASSIGN(MemoryUsage usage, device().GetMemoryUsage());
  EXPECT_GT(usage.total_bytes, 0u);
  EXPECT_LE(usage.free_bytes, usage.total_bytes);
}

TEST_P(ConformanceTest, AllocatesAndFrees) {
  Allocator& allocator = device().device_allocator();
  KILN_ASSERT_OK_AND_ASSIGN(DeviceMemory none, allocator.Allocate(0));
  EXPECT_TRUE(none.is_null());
  KILN_EXPECT_OK(allocator.Deallocate(none));
  std::vector<DeviceMemory> blocks;
  for (uint64_t size : {1ull, 255ull, 4096ull, 1ull << 20, (3ull << 20) + 5}) {
    KILN_ASSERT_OK_AND_ASSIGN(DeviceMemory m, allocator.Allocate(size, "cts"));
    EXPECT_FALSE(m.is_null());
    EXPECT_EQ(m.size, size);
    EXPECT_EQ(m.address() % allocator.alignment(), 0u);
    blocks.push_back(m);
  }
  for (DeviceMemory m : blocks) KILN_EXPECT_OK(allocator.Deallocate(m));
  // Freeing twice is detected.
  Status again = allocator.Deallocate(blocks[0]);
  EXPECT_EQ(again.code(), StatusCode::kInvalidArgument) << again.ToString();
}

TEST_P(ConformanceTest, CopiesRoundTripRandomData) {
  KILN_ASSERT_OK_AND_ASSIGN(auto stream, NewStream(device()));
  for (size_t size : {size_t{1}, size_t{4097}, (size_t{1} << 20) + 3}) {
    std::vector<uint8_t> in = RandomBytes(size, static_cast<uint32_t>(size));
    std::vector<uint8_t> out(size, 0);
    KILN_ASSERT_OK_AND_ASSIGN(auto a, OwnedDeviceMemory::Allocate(device().device_allocator(), size));
    KILN_ASSERT_OK_AND_ASSIGN(auto b, OwnedDeviceMemory::Allocate(device().device_allocator(), size));
    KILN_ASSERT_OK(stream->MemcpyHostToDevice(a, in.data(), size));
    KILN_ASSERT_OK(stream->MemcpyDeviceToDevice(b, a, size));
    KILN_ASSERT_OK(stream->MemcpyDeviceToHost(out.data(), b, size));
    KILN_ASSERT_OK(stream->Synchronize());
    EXPECT_EQ(in, out) << "size " << size;
  }
}

TEST_P(ConformanceTest, CopiesThroughPinnedMemory) {
  KILN_ASSERT_OK_AND_ASSIGN(auto stream, NewStream(device()));
  const size_t size = (size_t{8} << 20) + 17;
  Allocator& pinned = device().pinned_host_allocator();
  EXPECT_EQ(pinned.memory_kind(), MemoryKind::kPinnedHost);
  KILN_ASSERT_OK_AND_ASSIGN(auto host_in, OwnedDeviceMemory::Allocate(pinned, size));
  KILN_ASSERT_OK_AND_ASSIGN(auto host_out, OwnedDeviceMemory::Allocate(pinned, size));
  std::vector<uint8_t> data = RandomBytes(size, 7);
  std::memcpy(host_in->ptr, data.data(), size);
  std::memset(host_out->ptr, 0, size);
  KILN_ASSERT_OK_AND_ASSIGN(auto dev, OwnedDeviceMemory::Allocate(device().device_allocator(), size));
  KILN_ASSERT_OK(stream->MemcpyHostToDevice(dev, host_in->ptr, size));
  KILN_ASSERT_OK(stream->MemcpyDeviceToHost(host_out->ptr, dev, size));
  KILN_ASSERT_OK(stream->Synchronize());
  EXPECT_EQ(std::memcmp(host_out->ptr, data.data(), size), 0);
}

TEST_P(ConformanceTest, CopiesSlicesAndRejectsOverruns) {
  KILN_ASSERT_OK_AND_ASSIGN(auto stream, NewStream(device()));
  std::vector<uint32_t> in(1024);
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<uint32_t>(i * 7 + 1);
  KILN_ASSERT_OK_AND_ASSIGN(auto a, OwnedDeviceMemory::Allocate(device().device_allocator(), 4096));
  KILN_ASSERT_OK(stream->MemcpyHostToDevice(a, in.data(), 4096));
  // Move the first half onto the second half, then read the second half back.
  KILN_ASSERT_OK(stream->MemcpyDeviceToDevice(a->Slice(2048, 2048), a->Slice(0, 2048), 2048));
  std::vector<uint32_t> out(512);
  KILN_ASSERT_OK(stream->MemcpyDeviceToHost(out.data(), a->Slice(2048, 2048), 2048));
  KILN_ASSERT_OK(stream->Synchronize());
  for (size_t i = 0; i < out.size(); ++i) ASSERT_EQ(out[i], in[i]) << i;

  EXPECT_EQ(stream->MemcpyHostToDevice(a->Slice(0, 16), in.data(), 17).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(stream->MemcpyDeviceToHost(out.data(), a->Slice(4000, 96), 100).code(),
            StatusCode::kInvalidArgument);
  KILN_EXPECT_OK(stream->Synchronize());  // rejected calls do not poison the stream
}

TEST_P(ConformanceTest, Memsets) {
  KILN_ASSERT_OK_AND_ASSIGN(auto stream, NewStream(device()));
  KILN_ASSERT_OK_AND_ASSIGN(auto a, OwnedDeviceMemory::Allocate(device().device_allocator(), 4096));
  KILN_ASSERT_OK(stream->Memset8(a, 0xAB));
  KILN_ASSERT_OK(stream->Memset32(a->Slice(1024, 1024), 0x01020304u));
  KILN_ASSERT_OK(stream->Memset8(a->Slice(3000, 5), 0x11));
  std::vector<uint8_t> out(4096);
  KILN_ASSERT_OK(stream->MemcpyDeviceToHost(out.data(), a, 4096));
  KILN_ASSERT_OK(stream->Synchronize());
  for (size_t i = 0; i < 4096; ++i) {
    uint8_t expected = 0xAB;
    if (i >= 1024 && i < 2048) {
      uint32_t word = 0x01020304u;
      std::memcpy(&expected, reinterpret_cast<uint8_t*>(&word) + (i % 4), 1);
    }
    if (i >= 3000 && i < 3005) expected = 0x11;
    ASSERT_EQ(out[i], expected) << "byte " << i;
  }
  EXPECT_EQ(stream->Memset32(a->Slice(2, 8), 1).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(stream->Memset32(a->Slice(0, 6), 1).code(), StatusCode::kInvalidArgument);
}

TEST_P(ConformanceTest, LaunchesKernels) {
  KILN_ASSERT_OK_AND_ASSIGN(auto stream, NewStream(device()));
  const uint64_t n = 100003;  // not a multiple of the block size
  KILN_ASSERT_OK_AND_ASSIGN(auto x, OwnedDeviceMemory::Allocate(device().device_allocator(), n * 4));
  KILN_ASSERT_OK_AND_ASSIGN(auto y, OwnedDeviceMemory::Allocate(device().device_allocator(), n * 4));
  std::vector<float> hx(n), hy(n);
  for (uint64_t i = 0; i < n; ++i) {
    hx[i] = static_cast<float>(i % 1000) * 0.5f;
    hy[i] = static_cast<float>(i % 7);
  }
  KILN_ASSERT_OK(stream->MemcpyHostToDevice(x, hx.data(), n * 4));
  KILN_ASSERT_OK(stream->MemcpyHostToDevice(y, hy.data(), n * 4));
  KernelArgs args;
  args.Add(2.0f).Add(x.get()).Add(y.get()).Add(n);
  KILN_ASSERT_OK(stream->Launch(kernel("kiln_cts_axpy_f32"), LaunchDims::Linear(n, 256), args));
  std::vector<float> out(n);
  KILN_ASSERT_OK(stream->MemcpyDeviceToHost(out.data(), y, n * 4));
  KILN_ASSERT_OK(stream->Synchronize());
  for (uint64_t i = 0; i < n; ++i) ASSERT_EQ(out[i], 2.0f * hx[i] + hy[i]) << i;

  // Bad launch configurations are rejected before anything is enqueued.
  LaunchDims empty;
  empty.grid.x = 0;
  EXPECT_EQ(stream->Launch(kernel("kiln_cts_axpy_f32"), empty, args).code(),
            StatusCode::kInvalidArgument);
  KILN_EXPECT_OK(stream->Synchronize());
}

TEST_P(ConformanceTest, UsesDynamicSharedMemory) {
  KILN_ASSERT_OK_AND_ASSIGN(auto stream, NewStream(device()));
  const uint32_t block = 128, blocks = 9, n = block * blocks;
  std::vector<uint32_t> in(n), out(n);
  for (uint32_t i = 0; i < n; ++i) in[i] = i * 3 + 11;
  KILN_ASSERT_OK_AND_ASSIGN(auto a, OwnedDeviceMemory::Allocate(device().device_allocator(), n * 4));
  KILN_ASSERT_OK_AND_ASSIGN(auto b, OwnedDeviceMemory::Allocate(device().device_allocator(), n * 4));
  KILN_ASSERT_OK(stream->MemcpyHostToDevice(a, in.data(), n * 4));
  LaunchDims dims;
  dims.grid.x = blocks;
  dims.block.x = block;
  dims.shared_memory_bytes = block * 4;
  KernelArgs args;
  args.Add(a.get()).Add(b.get());
  KILN_ASSERT_OK(stream->Launch(kernel("kiln_cts_reverse_blocks_u32"), dims, args));
  KILN_ASSERT_OK(stream->MemcpyDeviceToHost(out.data(), b, n * 4));
  KILN_ASSERT_OK(stream->Synchronize());
  for (uint32_t i = 0; i < n; ++i) {
    uint32_t blk = i / block, t = i % block;
    ASSERT_EQ(out[i], in[blk * block + (block - 1 - t)]) << i;
  }
}

TEST_P(ConformanceTest, RunsStreamWorkInOrder) {
  KILN_ASSERT_OK_AND_ASSIGN(auto stream, NewStream(device()));
  const uint64_t n = 4096;
  KILN_ASSERT_OK_AND_ASSIGN(auto a, OwnedDeviceMemory::Allocate(device().device_allocator(), n * 4));
  std::vector<uint32_t> out(n);
  // memset → fill → slow write → copy: each step must see the previous one.
  KILN_ASSERT_OK(stream->Memset32(a, 5));
  KernelArgs fill;
  fill.Add(a.get()).Add(uint32_t{9}).Add(n / 2);
  KILN_ASSERT_OK(stream->Launch(kernel("kiln_cts_fill_u32"), LaunchDims::Linear(n / 2, 128), fill));
  KernelArgs spin;
  spin.Add(a->Slice(4 * (n - 1), 4)).Add(uint32_t{77}).Add(uint64_t{20'000'000});
  KILN_ASSERT_OK(stream->Launch(kernel("kiln_cts_spin_write"), LaunchDims::Linear(1, 1), spin));
  KILN_ASSERT_OK(stream->MemcpyDeviceToHost(out.data(), a, n * 4));
  KILN_ASSERT_OK(stream->Synchronize());
  for (uint64_t i = 0; i < n; ++i) {
    uint32_t expected = i < n / 2 ? 9 : (i == n - 1 ? 77 : 5);
    ASSERT_EQ(out[i], expected) << i;
  }
}

TEST_P(ConformanceTest, OrdersStreamsWithEvents) {
  KILN_ASSERT_OK_AND_ASSIGN(auto producer, NewStream(device()));
  KILN_ASSERT_OK_AND_ASSIGN(auto consumer, NewStream(device()));
  KILN_ASSERT_OK_AND_ASSIGN(auto event, device().CreateEvent({}));
  KILN_ASSERT_OK_AND_ASSIGN(auto flag, OwnedDeviceMemory::Allocate(device().device_allocator(), 8));
  KILN_ASSERT_OK(producer->Memset32(flag, 0));
  KILN_ASSERT_OK(producer->Synchronize());
  for (uint32_t round = 1; round <= 3; ++round) {
    // The producer writes the flag only after a long wait; the consumer must still see it.
    KernelArgs spin;
    spin.Add(flag->Slice(0, 4)).Add(round).Add(uint64_t{60'000'000});
    KILN_ASSERT_OK(producer->Launch(kernel("kiln_cts_spin_write"), LaunchDims::Linear(1, 1), spin));
    KILN_ASSERT_OK(producer->RecordEvent(*event));
    KILN_ASSERT_OK(consumer->WaitEvent(*event));
    KernelArgs check;
    check.Add(flag->Slice(0, 4)).Add(round).Add(flag->Slice(4, 4));
    KILN_ASSERT_OK(consumer->Launch(kernel("kiln_cts_check_flag"), LaunchDims::Linear(1, 1), check));
    uint32_t result = 0;
    KILN_ASSERT_OK(consumer->MemcpyDeviceToHost(&result, flag->Slice(4, 4), 4));
    KILN_ASSERT_OK(consumer->Synchronize());
    EXPECT_EQ(result, 1u) << "round " << round << ": the consumer ran before the producer's write";
  }
  KILN_ASSERT_OK(producer->Synchronize());
}

TEST_P(ConformanceTest, QueriesAndSynchronizesEvents) {
  KILN_ASSERT_OK_AND_ASSIGN(auto stream, NewStream(device()));
  KILN_ASSERT_OK_AND_ASSIGN(auto event, device().CreateEvent({}));
  KILN_ASSERT_OK_AND_ASSIGN(bool fresh_done, event->IsComplete());
  EXPECT_TRUE(fresh_done) << "a never-recorded event counts as complete";
  KILN_EXPECT_OK(event->Synchronize());
  KILN_ASSERT_OK(stream->WaitEvent(*event));  // waiting on a never-recorded event: no-op

  KILN_ASSERT_OK_AND_ASSIGN(auto flag, OwnedDeviceMemory::Allocate(device().device_allocator(), 4));
  KernelArgs spin;
  spin.Add(flag.get()).Add(uint32_t{1}).Add(uint64_t{300'000'000});
  KILN_ASSERT_OK(stream->Launch(kernel("kiln_cts_spin_write"), LaunchDims::Linear(1, 1), spin));
  KILN_ASSERT_OK(stream->RecordEvent(*event));
  KILN_ASSERT_OK_AND_ASSIGN(bool early, event->IsComplete());
  EXPECT_FALSE(early) << "event completed while 300 ms of work was pending";
  KILN_ASSERT_OK_AND_ASSIGN(bool idle_early, stream->IsIdle());
  EXPECT_FALSE(idle_early);
  KILN_ASSERT_OK(event->Synchronize());
  KILN_ASSERT_OK_AND_ASSIGN(bool late, event->IsComplete());
  EXPECT_TRUE(late);
  KILN_ASSERT_OK(stream->Synchronize());
  KILN_ASSERT_OK_AND_ASSIGN(bool idle_late, stream->IsIdle());
  EXPECT_TRUE(idle_late);
}

TEST_P(ConformanceTest, TimesWorkWithEvents) {
  KILN_ASSERT_OK_AND_ASSIGN(auto stream, NewStream(device()));
  EventOptions timing;
  timing.enable_timing = true;
  KILN_ASSERT_OK_AND_ASSIGN(auto start, device().CreateEvent(timing));
  KILN_ASSERT_OK_AND_ASSIGN(auto end, device().CreateEvent(timing));
  KILN_ASSERT_OK_AND_ASSIGN(auto flag, OwnedDeviceMemory::Allocate(device().device_allocator(), 4));
  KernelArgs spin;
  spin.Add(flag.get()).Add(uint32_t{1}).Add(uint64_t{30'000'000});
  KILN_ASSERT_OK(stream->RecordEvent(*start));
  KILN_ASSERT_OK(stream->Launch(kernel("kiln_cts_spin_write"), LaunchDims::Linear(1, 1), spin));
  KILN_ASSERT_OK(stream->RecordEvent(*end));
  KILN_ASSERT_OK(end->Synchronize());
  KILN_ASSERT_OK_AND_ASSIGN(float ms, end->ElapsedMillisSince(*start));
  EXPECT_GE(ms, 25.0f);
  EXPECT_LT(ms, 5000.0f);

  KILN_ASSERT_OK_AND_ASSIGN(auto untimed, device().CreateEvent({}));
  KILN_ASSERT_OK(stream->RecordEvent(*untimed));
  KILN_ASSERT_OK(stream->Synchronize());
  EXPECT_FALSE(untimed->ElapsedMillisSince(*start).ok());
}

TEST_P(ConformanceTest, RunsHostCallbacksInStreamOrder) {
  KILN_ASSERT_OK_AND_ASSIGN(auto stream, NewStream(device()));
  KILN_ASSERT_OK_AND_ASSIGN(auto a, OwnedDeviceMemory::Allocate(device().device_allocator(), 64));
  constexpr int kRounds = 6;
  std::vector<uint32_t> host(kRounds * 16, 0);
  std::mutex mu;
  std::vector<int> order;
  std::atomic<int> mismatches{0};
  for (int r = 0; r < kRounds; ++r) {
    KILN_ASSERT_OK(stream->Memset32(a, static_cast<uint32_t>(r + 100)));
    uint32_t* dst = host.data() + r * 16;
    KILN_ASSERT_OK(stream->MemcpyDeviceToHost(dst, a, 64));
    KILN_ASSERT_OK(stream->AddHostCallback([&, r, dst] {
      // Runs after the copy before it: the data must be there.
      for (int i = 0; i < 16; ++i) {
        if (dst[i] != static_cast<uint32_t>(r + 100)) ++mismatches;
      }
      std::lock_guard<std::mutex> lock(mu);
      order.push_back(r);
    }));
  }
  KILN_ASSERT_OK(stream->Synchronize());
  EXPECT_EQ(mismatches.load(), 0);
  std::vector<int> expected(kRounds);
  for (int r = 0; r < kRounds; ++r) expected[r] = r;
  std::lock_guard<std::mutex> lock(mu);
  EXPECT_EQ(order, expected);
}

TEST_P(ConformanceTest, CreatesPriorityStreams) {
  KILN_ASSERT_OK_AND_ASSIGN(auto high, NewStream(device(), StreamPriority::kHigh));
  KILN_ASSERT_OK_AND_ASSIGN(auto normal, NewStream(device(), StreamPriority::kNormal));
  EXPECT_EQ(high->priority(), StreamPriority::kHigh);
  EXPECT_EQ(normal->priority(), StreamPriority::kNormal);
  EXPECT_EQ(&high->device(), &device());
  KILN_ASSERT_OK_AND_ASSIGN(auto a, OwnedDeviceMemory::Allocate(device().device_allocator(), 256));
  KILN_ASSERT_OK(high->Memset8(a, 3));
  KILN_ASSERT_OK(high->Synchronize());
}

TEST_P(ConformanceTest, PoolsStreamsAndEvents) {
  StreamPool streams(device());
  Stream* first = nullptr;
  {
    KILN_ASSERT_OK_AND_ASSIGN(StreamPool::Handle s, streams.Borrow());
    first = s.get();
    KILN_ASSERT_OK_AND_ASSIGN(StreamPool::Handle t, streams.Borrow());
    EXPECT_NE(s.get(), t.get());
    KILN_ASSERT_OK_AND_ASSIGN(StreamPool::Handle h, streams.Borrow(StreamPriority::kHigh));
    EXPECT_EQ(h->priority(), StreamPriority::kHigh);
  }
  EXPECT_EQ(streams.idle_count(StreamPriority::kNormal), 2u);
  EXPECT_EQ(streams.idle_count(StreamPriority::kHigh), 1u);
  {
    KILN_ASSERT_OK_AND_ASSIGN(StreamPool::Handle again, streams.Borrow());
    EXPECT_EQ(again.get(), first) << "the most recently returned stream is reused";
  }
  EXPECT_EQ(streams.created_count(), 3u);

  EventPool events(device());
  Event* e0 = nullptr;
  {
    KILN_ASSERT_OK_AND_ASSIGN(EventPool::Handle e, events.Borrow());
    e0 = e.get();
    KILN_ASSERT_OK_AND_ASSIGN(StreamPool::Handle s, streams.Borrow());
    KILN_ASSERT_OK(s->RecordEvent(*e));
    KILN_ASSERT_OK(e->Synchronize());
  }
  EventOptions timing;
  timing.enable_timing = true;
  KILN_ASSERT_OK_AND_ASSIGN(EventPool::Handle timed, events.Borrow(timing));
  EXPECT_NE(timed.get(), e0) << "timing and non-timing events are pooled apart";
  EXPECT_TRUE(timed->timing_enabled());
  KILN_ASSERT_OK_AND_ASSIGN(EventPool::Handle plain, events.Borrow());
  EXPECT_EQ(plain.get(), e0);
}

TEST_P(ConformanceTest, CachesAllocationsWithBfc) {
  BfcOptions options;
  options.limit_bytes = 64 << 20;
  options.initial_region_bytes = 4 << 20;
  KILN_ASSERT_OK_AND_ASSIGN(auto bfc, CreateBfcDeviceAllocator(device(), options));
  KILN_ASSERT_OK_AND_ASSIGN(auto stream, NewStream(device()));
  std::vector<DeviceMemory> blocks;
  std::mt19937 rng(3);
  for (int i = 0; i < 64; ++i) {
    uint64_t size = 4 * (1 + rng() % 20000);
    KILN_ASSERT_OK_AND_ASSIGN(DeviceMemory m, bfc->Allocate(size, "cts"));
    KILN_ASSERT_OK(stream->Memset32(m, static_cast<uint32_t>(i)));
    blocks.push_back(m);
  }
  // Every block kept its own contents: no two allocations overlap.
  for (int i = 0; i < 64; ++i) {
    std::vector<uint32_t> out(blocks[i].size / 4);
    KILN_ASSERT_OK(stream->MemcpyDeviceToHost(out.data(), blocks[i], blocks[i].size));
    KILN_ASSERT_OK(stream->Synchronize());
    for (uint32_t v : out) ASSERT_EQ(v, static_cast<uint32_t>(i)) << "block " << i;
  }
  KILN_ASSERT_OK(bfc->CheckInvariants());
  for (DeviceMemory m : blocks) KILN_ASSERT_OK(bfc->Deallocate(m));
  KILN_ASSERT_OK(bfc->CheckInvariants());
  std::optional<AllocatorStats> stats = bfc->GetStats();
  ASSERT_TRUE(stats.has_value());
  EXPECT_EQ(stats->bytes_in_use, 0u);
  EXPECT_EQ(stats->num_allocs, 64u);
  EXPECT_GT(stats->peak_bytes_in_use, 0u);
  EXPECT_LE(stats->bytes_reserved, uint64_t{64} << 20);
}

TEST_P(ConformanceTest, AllocatesInStreamOrder) {
  KILN_ASSERT_OK_AND_ASSIGN(auto allocator, device().CreateStreamOrderedAllocator({}));
  EXPECT_TRUE(allocator->is_stream_ordered());
  KILN_ASSERT_OK_AND_ASSIGN(auto stream, NewStream(device()));
  const uint64_t n = 1 << 16;
  std::vector<uint32_t> out(n);
  for (int round = 0; round < 4; ++round) {
    KILN_ASSERT_OK_AND_ASSIGN(DeviceMemory m, allocator->AllocateOnStream(n * 4, *stream, "cts"));
    KernelArgs fill;
    fill.Add(m).Add(static_cast<uint32_t>(round + 1)).Add(n);
    KILN_ASSERT_OK(stream->Launch(kernel("kiln_cts_fill_u32"), LaunchDims::Linear(n, 256), fill));
    KILN_ASSERT_OK(stream->MemcpyDeviceToHost(out.data(), m, n * 4));
    KILN_ASSERT_OK(allocator->DeallocateOnStream(m, *stream));
    KILN_ASSERT_OK(stream->Synchronize());
    for (uint64_t i = 0; i < n; ++i) ASSERT_EQ(out[i], static_cast<uint32_t>(round + 1)) << i;
  }
}

TEST_P(ConformanceTest, DescribesKernels) {
  StatusOr<Kernel*> missing = module_->GetKernel("kiln_cts_no_such_kernel");
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  Kernel& fill = kernel("kiln_cts_fill_u32");
  EXPECT_EQ(fill.name(), "kiln_cts_fill_u32");
  KILN_ASSERT_OK_AND_ASSIGN(Kernel* again, module_->GetKernel("kiln_cts_fill_u32"));
  EXPECT_EQ(again, &fill);
  KILN_ASSERT_OK_AND_ASSIGN(KernelAttributes attributes, fill.GetAttributes());
  EXPECT_GT(attributes.max_threads_per_block, 0);
  KILN_ASSERT_OK_AND_ASSIGN(int blocks, fill.MaxActiveBlocksPerMultiprocessor(128, 0));
  EXPECT_GE(blocks, 1);
}

TEST_P(ConformanceTest, SynchronizesTheDevice) {
  KILN_ASSERT_OK_AND_ASSIGN(auto s1, NewStream(device()));
  KILN_ASSERT_OK_AND_ASSIGN(auto s2, NewStream(device()));
  KILN_ASSERT_OK_AND_ASSIGN(auto flags, OwnedDeviceMemory::Allocate(device().device_allocator(), 8));
  uint32_t host[2] = {0, 0};
  KernelArgs a, b;
  a.Add(flags->Slice(0, 4)).Add(uint32_t{5}).Add(uint64_t{20'000'000});
  b.Add(flags->Slice(4, 4)).Add(uint32_t{6}).Add(uint64_t{20'000'000});
  KILN_ASSERT_OK(s1->Launch(kernel("kiln_cts_spin_write"), LaunchDims::Linear(1, 1), a));
  KILN_ASSERT_OK(s2->Launch(kernel("kiln_cts_spin_write"), LaunchDims::Linear(1, 1), b));
  KILN_ASSERT_OK(s1->MemcpyDeviceToHost(&host[0], flags->Slice(0, 4), 4));
  KILN_ASSERT_OK(s2->MemcpyDeviceToHost(&host[1], flags->Slice(4, 4), 4));
  KILN_ASSERT_OK(device().Synchronize());
  EXPECT_EQ(host[0], 5u);
  EXPECT_EQ(host[1], 6u);
}

TEST_P(ConformanceTest, ServesSeveralThreads) {
  constexpr int kThreads = 4;
  std::vector<std::string> failures(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      auto fail = [&](const Status& s) { failures[t] = s.ToString(); };
      StatusOr<std::unique_ptr<Stream>> stream = NewStream(device());
      if (!stream.ok()) return fail(stream.status());
      for (int round = 0; round < 8; ++round) {
        size_t size = 1000 + 977 * t + round;
        std::vector<uint8_t> in = RandomBytes(size, t * 100 + round), out(size);
        StatusOr<OwnedDeviceMemory> m =
            OwnedDeviceMemory::Allocate(device().device_allocator(), size);
        if (!m.ok()) return fail(m.status());
        Status s = (*stream)->MemcpyHostToDevice(*m, in.data(), size);
        if (s.ok()) s = (*stream)->MemcpyDeviceToHost(out.data(), *m, size);
        if (s.ok()) s = (*stream)->Synchronize();
        if (!s.ok()) return fail(s);
        if (in != out) return fail(Internal("thread ", t, " round ", round, ": data mismatch"));
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(failures[t], "") << "thread " << t;
}

}  // namespace kiln::runtime::cts
