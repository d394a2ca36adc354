#include "kiln/autotune/device_lock.h"

#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include <gtest/gtest.h>

#include "kiln/autotune/testing/test_util.h"

namespace kiln::autotune {
namespace {

using testing::ScopedTempDir;

runtime::DeviceDescription Gpu(std::string uuid) {
  runtime::DeviceDescription d;
  d.platform = "cuda";
  d.ordinal = 1;
  d.uuid = std::move(uuid);
  return d;
}

double NowSeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

TEST(DeviceLockTest, FileNameIsTheUuidOrPlatformAndOrdinal) {
  EXPECT_EQ(DeviceLockFileName(Gpu("GPU-8a3f-01")), "GPU-8a3f-01.lock");
  EXPECT_EQ(DeviceLockFileName(Gpu("GPU/../x y")), "GPU_.._x_y.lock");
  EXPECT_EQ(DeviceLockFileName(Gpu("")), "cuda-1.lock");
}

TEST(DeviceLockTest, ExclusiveWithinAndAcrossHolders) {
  ScopedTempDir dir;
  DeviceLockOptions options{.directory = dir.path(), .timeout_s = 0, .log_waiting = false};
  KILN_ASSERT_OK_AND_ASSIGN(auto held, DeviceLock::Acquire(Gpu("GPU-a"), options));
  auto again = DeviceLock::Acquire(Gpu("GPU-a"), options);
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.status().code(), StatusCode::kDeadlineExceeded);
  EXPECT_NE(again.status().message().find(std::to_string(getpid())), std::string::npos)
      << again.status().message();  // names the holder
  // Another device is independent.
  KILN_ASSERT_OK_AND_ASSIGN(auto other, DeviceLock::Acquire(Gpu("GPU-b"), options));
  held.reset();
  KILN_ASSERT_OK_AND_ASSIGN(auto after, DeviceLock::Acquire(Gpu("GPU-a"), options));
}

// Without a directory of its own a lock goes to the process's default (the kiln tool's
// KILN_LOCK_DIR); the library reads no KILN_* variable itself.
TEST(DeviceLockTest, DefaultDirectoryIsSettable) {
  EXPECT_EQ(DefaultDeviceLockDirectory(), "/tmp/kiln-locks");
  ScopedTempDir dir;
  SetDefaultDeviceLockDirectory(dir.path() + "/locks");
  EXPECT_EQ(DefaultDeviceLockDirectory(), dir.path() + "/locks");
  {
    DeviceLockOptions options{.directory = "", .timeout_s = 0, .log_waiting = false};
    KILN_ASSERT_OK_AND_ASSIGN(auto held, DeviceLock::Acquire(Gpu("GPU-d"), options));
    EXPECT_EQ(held->path(), dir.path() + "/locks/GPU-d.lock");
  }
  SetDefaultDeviceLockDirectory("");
  EXPECT_EQ(DefaultDeviceLockDirectory(), "/tmp/kiln-locks");
}

// Several processes each take the lock, hold it briefly and report when: no two holds overlap.
TEST(DeviceLockTest, ProcessesTakeTurns) {
  ScopedTempDir dir;
  constexpr int kProcesses = 4;
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  std::vector<pid_t> children;
  for (int p = 0; p < kProcesses; ++p) {
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      close(fds[0]);
      auto lock = DeviceLock::Acquire(
          Gpu("GPU-shared"), {.directory = dir.path(), .timeout_s = 30, .log_waiting = false});
      if (!lock.ok()) _exit(2);
      double interval[2];
      interval[0] = NowSeconds();
      std::this_thread::sleep_for(std::chrono::milliseconds(40));
      interval[1] = NowSeconds();
      lock->reset();
      _exit(write(fds[1], interval, sizeof(interval)) == sizeof(interval) ? 0 : 3);
    }
    children.push_back(pid);
  }
  close(fds[1]);
  std::vector<std::pair<double, double>> holds;
  double interval[2];
  while (read(fds[0], interval, sizeof(interval)) == sizeof(interval)) {
    holds.emplace_back(interval[0], interval[1]);
  }
  close(fds[0]);
  for (pid_t pid : children) {
    int status = 0;
    waitpid(pid, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  ASSERT_EQ(holds.size(), static_cast<size_t>(kProcesses));
  std::sort(holds.begin(), holds.end());
  for (size_t i = 1; i < holds.size(); ++i) {
    EXPECT_GE(holds[i].first, holds[i - 1].second) << "two processes held the lock at once";
  }
}

TEST(DeviceLockTest, ADeadHolderReleasesTheLock) {
  ScopedTempDir dir;
  DeviceLockOptions options{.directory = dir.path(), .timeout_s = 10, .log_waiting = false};
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    auto lock = DeviceLock::Acquire(Gpu("GPU-c"), options);
    _exit(lock.ok() ? 0 : 2);  // dies holding it
  }
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  KILN_ASSERT_OK_AND_ASSIGN(auto lock, DeviceLock::Acquire(Gpu("GPU-c"), options));
}

}  // namespace
}  // namespace kiln::autotune
