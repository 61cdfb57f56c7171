#pragma once
// The harness of the reader fuzz tests: each case runs in a child process (fork), so a case
// that ends in a signal or hangs is reported as such, with its description, instead of ending
// the test binary. The child sends back what the reader did: a refusal (hybrid3d::Error, one
// line), another exception, or the bytes it read. The parent then holds the reader to the rule:
// refuse cleanly, or read exactly what the case's bytes hold.
#include <chrono>
#include <csignal>
#include <cstring>
#include <functional>
#include <optional>
#include <string>

#include <poll.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <hybrid3d/core/Error.hpp>

namespace hybrid3d::test {

struct Outcome {
  enum Kind { Refused, Read, OtherException, Signal, Hang } kind = Hang;
  std::string text;  // the refusal's message, the exception's, the signal's name; or the bytes
};

// f() run in a child process killed after `seconds`; f returns the bytes it read.
inline Outcome runIsolated(const std::function<std::string()>& f, int seconds) {
  int fds[2];
  if (pipe(fds) != 0) return {Outcome::OtherException, "pipe failed"};
  const pid_t child = fork();
  if (child == 0) {
    close(fds[0]);
    char kind = 'R';
    std::string text;
    try {
      text = f();
    } catch (const Error& e) {
      kind = 'E';
      text = e.what();
    } catch (const std::exception& e) {
      kind = 'X';
      text = e.what();
    }
    std::string message = kind + text;
    for (std::size_t at = 0; at < message.size();) {
      const ssize_t n = write(fds[1], message.data() + at, message.size() - at);
      if (n <= 0) break;
      at += std::size_t(n);
    }
    _exit(0);  // no atexit handlers: the parent's MPI and HDF5 state belong to the parent
  }
  close(fds[1]);
  std::string message;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  bool hung = true;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    pollfd p{fds[0], POLLIN, 0};
    if (left.count() <= 0 || poll(&p, 1, int(left.count())) <= 0) break;
    char buffer[1 << 16];
    const ssize_t n = read(fds[0], buffer, sizeof buffer);
    if (n <= 0) {
      hung = false;
      break;
    }
    message.append(buffer, std::size_t(n));
  }
  close(fds[0]);
  if (hung) kill(child, SIGKILL);
  int status = 0;
  waitpid(child, &status, 0);
  if (hung) return {Outcome::Hang, ""};
  if (WIFSIGNALED(status)) return {Outcome::Signal, strsignal(WTERMSIG(status))};
  if (message.empty()) return {Outcome::OtherException, "the child sent nothing"};
  const Outcome::Kind kind = message[0] == 'E'   ? Outcome::Refused
                             : message[0] == 'X' ? Outcome::OtherException
                                                 : Outcome::Read;
  return {kind, message.substr(1)};
}

// What a case's reading must give: the bytes the file holds by the format's rules, or nothing
// when the file breaks one (then only a refusal is right).
using Expected = std::optional<std::string>;

// The verdict on one case: empty when the reader refused cleanly or read exactly `expected`.
inline std::string verdict(const Outcome& o, const Expected& expected) {
  switch (o.kind) {
    case Outcome::Refused:
      if (o.text.empty() || o.text.find('\n') != std::string::npos)
        return "a refusal that is not one line: '" + o.text + "'";
      return "";
    case Outcome::Read:
      if (!expected) return "read a file that breaks the format";
      if (o.text != *expected) return "read other values than the file holds";
      return "";
    case Outcome::OtherException:
      return "an exception other than hybrid3d::Error: " + o.text;
    case Outcome::Signal:
      return "ended by signal " + o.text;
    case Outcome::Hang:
      return "did not finish in time";
  }
  return "";
}

// The bytes of `count` values of type T, for comparing what was read.
template <class T>
std::string bytesOf(const T* values, std::size_t count) {
  return std::string(reinterpret_cast<const char*>(values), count * sizeof(T));
}

}  // namespace hybrid3d::test
