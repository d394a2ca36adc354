#include "kiln/autotune/device_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <thread>

#include "kiln/base/logging.h"
#include "kiln/base/strings.h"

namespace kiln::autotune {

namespace {

std::mutex& DefaultLockDirMutex() {
  static std::mutex mu;
  return mu;
}
std::string& DefaultLockDirOverride() {
  static auto* dir = new std::string();  // never destroyed
  return *dir;
}

std::string HolderPid(int fd) {
  char buf[32] = {};
  ssize_t n = ::pread(fd, buf, sizeof(buf) - 1, 0);
  if (n <= 0) return "";
  return std::string(StripWhitespace(std::string_view(buf, static_cast<size_t>(n))));
}

}  // namespace

std::string DefaultDeviceLockDirectory() {
  std::lock_guard<std::mutex> lock(DefaultLockDirMutex());
  return DefaultLockDirOverride().empty() ? std::string("/tmp/kiln-locks") : DefaultLockDirOverride();
}

void SetDefaultDeviceLockDirectory(std::string directory) {
  std::lock_guard<std::mutex> lock(DefaultLockDirMutex());
  DefaultLockDirOverride() = std::move(directory);
}

std::string DeviceLockFileName(const runtime::DeviceDescription& device) {
  std::string name =
      device.uuid.empty() ? StrCat(device.platform, "-", device.ordinal) : device.uuid;
  for (char& c : name) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == '-';
    if (!ok) c = '_';
  }
  return name + ".lock";
}

StatusOr<std::unique_ptr<DeviceLock>> DeviceLock::Acquire(const runtime::DeviceDescription& device,
                                                          const DeviceLockOptions& options) {
  std::string directory = options.directory.empty() ? DefaultDeviceLockDirectory() : options.directory;
  std::error_code ec;
  if (!std::filesystem::is_directory(directory, ec)) {
    std::filesystem::create_directories(directory, ec);
    if (ec) {
      return FailedPrecondition("cannot create the device lock directory ", directory, ": ",
                                ec.message(),
                                " (choose another: KILN_LOCK_DIR for the kiln tool, "
                                "DeviceLockOptions::directory or SetDefaultDeviceLockDirectory)");
    }
    if (options.directory.empty()) ::chmod(directory.c_str(), 01777);  // shared by all users
  }
  std::string path = StrCat(directory, "/", DeviceLockFileName(device));
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
  if (fd < 0) {
    return FailedPrecondition("cannot open the device lock ", path, ": ", std::strerror(errno));
  }
  ::fchmod(fd, 0666);  // whoever creates it, every user may lock it (ignored if not ours)

  auto start = std::chrono::steady_clock::now();
  bool logged = false;
  while (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    if (errno == EINTR) continue;
    if (errno != EWOULDBLOCK) {
      std::string why = std::strerror(errno);
      ::close(fd);
      return FailedPrecondition("cannot lock ", path, ": ", why);
    }
    double waited =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::string holder = HolderPid(fd);
    if (options.timeout_s >= 0 && waited >= options.timeout_s) {
      ::close(fd);
      return DeadlineExceeded("device ", device.platform, ":", device.ordinal,
                              " is being tuned by another process",
                              holder.empty() ? "" : StrCat(" (pid ", holder, ")"), "; gave up after ",
                              options.timeout_s, " s (lock ", path, ")");
    }
    if (!logged && options.log_waiting) {
      logged = true;
      KILN_LOG(Warning) << "autotune: waiting for " << device.platform << ":" << device.ordinal
                        << ", which another process is tuning"
                        << (holder.empty() ? "" : " (pid " + holder + ")") << "; lock " << path;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  std::string pid = StrCat(::getpid(), "\n");
  if (::ftruncate(fd, 0) == 0) {
    [[maybe_unused]] ssize_t n = ::pwrite(fd, pid.data(), pid.size(), 0);
  }
  return std::unique_ptr<DeviceLock>(new DeviceLock(fd, std::move(path)));
}

DeviceLock::~DeviceLock() {
  // Closing the last descriptor releases the lock; the file stays for the next holder (deleting
  // it would race with a waiter that already opened it).
  ::close(fd_);
}

}  // namespace kiln::autotune
