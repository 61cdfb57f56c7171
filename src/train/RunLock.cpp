#include <hybrid3d/train/RunLock.hpp>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <hybrid3d/core/Error.hpp>

namespace hybrid3d {

namespace {

std::string readAll(int fd) {
  std::string text;
  char buf[512];
  ::lseek(fd, 0, SEEK_SET);
  for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) text.append(buf, std::size_t(n));
  while (!text.empty() && (text.back() == '\n' || text.back() == '\0')) text.pop_back();
  return text;
}

std::string holderText() {
  char host[256] = "unknown";
  ::gethostname(host, sizeof host - 1);
  char when[64];
  const std::time_t now = std::time(nullptr);
  std::strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", std::localtime(&now));
  return std::string("host ") + host + ", PID " + std::to_string(::getpid()) + ", started " + when;
}

// Whether `fd` is still the file at `path` (a holder that ended may have removed it between
// our open and our lock: then the lock is on a file nobody else will look at).
bool stillThere(int fd, const std::string& path) {
  struct stat a {
  }, b{};
  return ::fstat(fd, &a) == 0 && ::stat(path.c_str(), &b) == 0 && a.st_ino == b.st_ino &&
         a.st_dev == b.st_dev;
}

}  // namespace

RunLock::RunLock(const std::string& dir, std::string& note) : path_(fileOf(dir)) {
  for (int attempt = 0; attempt < 5; ++attempt) {
    lockOnce(dir);
    if (stillThere(fd_, path_)) break;
    ::close(fd_);
    fd_ = -1;
  }
  if (fd_ < 0) fail(path_, ": the lock file keeps disappearing (another run is starting here?)");
  // Held: whatever the file still says is a run that ended without removing it.
  const std::string previous = readAll(fd_);
  if (!previous.empty())
    note = "taking over the lock of " + dir + " from a run that is gone (" + previous + ")";
  const std::string mine = holderText() + "\n";
  if (::ftruncate(fd_, 0) != 0 || ::pwrite(fd_, mine.data(), mine.size(), 0) < 0)
    fail(path_, ": cannot write the lock file (", std::strerror(errno), ")");
}

void RunLock::lockOnce(const std::string& dir) {
  fd_ = ::open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0)
    fail(path_, ": cannot create the output directory's lock file (", std::strerror(errno), ")");
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    const int error = errno;
    const std::string holder = readAll(fd_);
    ::close(fd_);
    fd_ = -1;
    if (error == EWOULDBLOCK)
      fail(dir, ": another run is writing this output directory (",
           holder.empty() ? "holder unknown" : holder,
           "); wait for it to end or choose another 'Training/output directory'");
    fail(path_, ": cannot lock the output directory (", std::strerror(error), ")");
  }
}

RunLock::~RunLock() {
  if (fd_ < 0) return;
  // Removed while still held, so that no other run can lock the file being removed.
  ::unlink(path_.c_str());
  ::close(fd_);
}

}  // namespace hybrid3d
