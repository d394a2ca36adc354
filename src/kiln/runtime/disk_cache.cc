#include "kiln/runtime/disk_cache.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <mutex>
#include <sstream>
#include <thread>

#include "kiln/base/fingerprint.h"
#include "kiln/base/strings.h"

namespace kiln::runtime {

namespace {

constexpr char kMagic[8] = {'K', 'I', 'L', 'N', 'D', 'C', '0', '1'};
constexpr uint32_t kFormatVersion = 1;

void PutU32(std::string& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
void PutU64(std::string& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
uint64_t GetLE(std::string_view s, size_t offset, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) {
    v |= uint64_t{static_cast<unsigned char>(s[offset + i])} << (8 * i);
  }
  return v;
}

std::string Checksum(std::string_view key, std::string_view value) {
  Sha256 sha;
  sha.Update(key);
  sha.Update(value);
  auto digest = sha.Finish();
  return std::string(reinterpret_cast<const char*>(digest.data()), digest.size());
}

std::string Encode(std::string_view key, std::string_view value) {
  std::string out(kMagic, sizeof(kMagic));
  PutU32(out, kFormatVersion);
  PutU64(out, key.size());
  out.append(key);
  PutU64(out, value.size());
  out.append(value);
  out += Checksum(key, value);
  return out;
}

// The value stored in `file` for `key`, or nullopt when the file is damaged or holds another key.
std::optional<std::string> Decode(std::string_view file, std::string_view key) {
  size_t pos = 0;
  auto need = [&](uint64_t n) { return n <= file.size() && pos <= file.size() - n; };
  if (!need(sizeof(kMagic) + 4 + 8)) return std::nullopt;
  if (std::memcmp(file.data(), kMagic, sizeof(kMagic)) != 0) return std::nullopt;
  pos += sizeof(kMagic);
  if (GetLE(file, pos, 4) != kFormatVersion) return std::nullopt;
  pos += 4;
  uint64_t key_size = GetLE(file, pos, 8);
  pos += 8;
  if (!need(key_size) || file.substr(pos, key_size) != key) return std::nullopt;
  pos += key_size;
  if (!need(8)) return std::nullopt;
  uint64_t value_size = GetLE(file, pos, 8);
  pos += 8;
  if (!need(value_size)) return std::nullopt;
  std::string_view value = file.substr(pos, value_size);
  pos += value_size;
  if (file.size() - pos != 32) return std::nullopt;
  if (file.substr(pos) != Checksum(key, value)) return std::nullopt;
  return std::string(value);
}

std::string ErrnoText() { return std::strerror(errno); }

std::mutex& DefaultRootMutex() {
  static std::mutex mu;
  return mu;
}
std::string& DefaultRootOverride() {
  static auto* root = new std::string();  // never destroyed
  return *root;
}

}  // namespace

void DiskCache::SetDefaultRoot(std::string root) {
  std::lock_guard<std::mutex> lock(DefaultRootMutex());
  DefaultRootOverride() = std::move(root);
}

std::string DiskCache::DefaultRoot() {
  {
    std::lock_guard<std::mutex> lock(DefaultRootMutex());
    if (!DefaultRootOverride().empty()) return DefaultRootOverride();
  }
  // The platform's conventions for a per-user cache (XDG, HOME): ordinary defaults, read here.
  // kiln's own knob (KILN_CACHE_DIR) is read by the `kiln` tool only (api/environment.h), which
  // passes it to SetDefaultRoot.
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg != nullptr && *xdg != '\0') {
    return StrCat(xdg, "/kiln");
  }
  if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0') {
    return StrCat(home, "/.cache/kiln");
  }
  return "/tmp/kiln-cache";
}

StatusOr<std::unique_ptr<DiskCache>> DiskCache::Create(const DiskCacheOptions& options) {
  if (options.name_space.empty() || options.name_space.find('/') != std::string::npos) {
    return InvalidArgument("disk cache namespace must be a non-empty directory name, got '",
                           options.name_space, "'");
  }
  std::string root = options.root.empty() ? DefaultRoot() : options.root;
  std::string directory = StrCat(root, "/", options.name_space);
  std::error_code ec;
  std::filesystem::create_directories(directory, ec);
  if (ec || !std::filesystem::is_directory(directory)) {
    return FailedPrecondition("cannot create cache directory ", directory, ": ",
                              ec ? ec.message() : std::string("not a directory"),
                              " (choose a writable cache directory: KILN_CACHE_DIR for the kiln "
                              "tool, DiskCacheOptions::root or DiskCache::SetDefaultRoot)");
  }
  return std::unique_ptr<DiskCache>(new DiskCache(std::move(directory)));
}

std::string DiskCache::PathForKey(std::string_view key) const {
  std::string hex = Sha256Hex(key);
  return StrCat(directory_, "/", hex.substr(0, 2), "/", hex, ".bin");
}

StatusOr<std::optional<std::string>> DiskCache::Lookup(std::string_view key) {
  std::string path = PathForKey(key);
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    ++misses_;
    return std::optional<std::string>();
  }
  std::ostringstream contents;
  contents << in.rdbuf();
  if (in.bad()) return DataLoss("reading cache entry ", path, " failed");
  std::string file = std::move(contents).str();
  std::optional<std::string> value = Decode(file, key);
  if (!value.has_value()) {
    ++corrupted_;
    ++misses_;
    std::error_code ec;
    std::filesystem::remove(path, ec);  // a concurrent Store may already have replaced it
    return std::optional<std::string>();
  }
  ++hits_;
  return value;
}

Status DiskCache::Store(std::string_view key, std::string_view value) {
  std::string path = PathForKey(key);
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
  if (ec) return FailedPrecondition("cannot create ", path, ": ", ec.message());
  KILN_RETURN_IF_ERROR(WriteFileAtomically(path, Encode(key, value)));
  ++stores_;
  return OkStatus();
}

Status DiskCache::Remove(std::string_view key) {
  std::error_code ec;
  std::filesystem::remove(PathForKey(key), ec);
  if (ec) return Internal("removing cache entry: ", ec.message());
  return OkStatus();
}

DiskCacheStats DiskCache::stats() const {
  return DiskCacheStats{hits_.load(), misses_.load(), corrupted_.load(), stores_.load()};
}

Status WriteFileAtomically(const std::string& path, std::string_view contents) {
  static std::atomic<uint64_t> counter{0};
  std::string tmp = StrCat(path, ".tmp.", getpid(), ".",
                           std::hash<std::thread::id>()(std::this_thread::get_id()) % 1000000,
                           ".", counter++);
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return FailedPrecondition("cannot create ", tmp, ": ", ErrnoText());
  const char* p = contents.data();
  size_t left = contents.size();
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      std::string why = ErrnoText();
      ::close(fd);
      ::unlink(tmp.c_str());
      return Internal("writing ", tmp, ": ", why);
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  // Data reaches the disk before the rename makes it visible under its final name.
  int sync_rc = ::fsync(fd);
  int close_rc = ::close(fd);
  if (sync_rc != 0 || close_rc != 0) {
    std::string why = ErrnoText();
    ::unlink(tmp.c_str());
    return Internal("flushing ", tmp, ": ", why);
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    std::string why = ErrnoText();
    ::unlink(tmp.c_str());
    return Internal("renaming ", tmp, " to ", path, ": ", why);
  }
  return OkStatus();
}

}  // namespace kiln::runtime
