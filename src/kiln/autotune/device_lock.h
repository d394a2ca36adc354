// DeviceLock: at most one process measures on a device at a time.
//
// Timings taken while another process runs kernels on the same GPU are worthless, so the
// autotuner holds an exclusive flock(2) on <directory>/<device name>.lock while it profiles.
// The name is the device's UUID (CUDA: "GPU-8a3f..."), or "<platform>-<ordinal>" where the
// driver reports none (the host). The lock is released when the DeviceLock is destroyed or the
// process dies (the kernel drops flock locks with the last descriptor), so a crashed tuner never
// leaves a device locked. The holder writes its pid into the file, for the waiting message.
//
// flock locks belong to an open file description: two DeviceLocks in one process exclude each
// other like two processes do.
#pragma once

#include <memory>
#include <string>

#include "kiln/base/status.h"
#include "kiln/runtime/device_description.h"

namespace kiln::autotune {

struct DeviceLockOptions {
  // Where lock files live. Empty (default): DefaultDeviceLockDirectory() (created
  // world-writable and sticky, like /tmp, so every user's kiln serializes on the same GPU).
  std::string directory;
  // Seconds to wait for another holder: negative (default) waits as long as it takes, 0 tries
  // once. DeadlineExceeded when the time runs out.
  double timeout_s = -1;
  // Log one line when the lock is busy ("waiting for cuda:0, held by pid 1234").
  bool log_waiting = true;
};

class DeviceLock {
 public:
  static StatusOr<std::unique_ptr<DeviceLock>> Acquire(const runtime::DeviceDescription& device,
                                                       const DeviceLockOptions& options = {});
  ~DeviceLock();
  DeviceLock(const DeviceLock&) = delete;
  DeviceLock& operator=(const DeviceLock&) = delete;

  const std::string& path() const { return path_; }

 private:
  DeviceLock(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  int fd_;
  std::string path_;
};

// Where DeviceLocks with an empty DeviceLockOptions::directory put their files: the directory
// SetDefaultDeviceLockDirectory set (the `kiln` tool sets it from KILN_LOCK_DIR), else
// /tmp/kiln-locks. Process-wide and thread-safe; empty restores /tmp/kiln-locks.
std::string DefaultDeviceLockDirectory();
void SetDefaultDeviceLockDirectory(std::string directory);

// The lock file's name without directory: UUID or "<platform>-<ordinal>", with anything but
// [A-Za-z0-9._-] replaced by '_', plus ".lock".
std::string DeviceLockFileName(const runtime::DeviceDescription& device);

}  // namespace kiln::autotune
