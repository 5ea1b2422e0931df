// morpheus-container-launch: the NM's exit-status wrapper around a container
// command (replaces the former `/bin/sh -c 'trap true TERM; ...'` wrapper).
//
//   morpheus-container-launch EXE [ARG...]     (cwd = the container dir)
//
// Contract (ContainerRuntime relies on it):
//  - EXE runs as a child in a process group of its own (pgid = its pid),
//    inside the launcher's session, with every signal unblocked and SIGPIPE /
//    SIGTERM at their defaults whatever the NM's mask and dispositions were.
//  - Once that group exists, its id is published in ./pgid (temp + rename).
//    The NM sends SIGTERM to that group only, never to the launcher, so the
//    launcher needs no trap, and a SIGTERM cannot be lost: before the child's
//    exec it kills the child by default action (status 143, as if the command
//    had got it), after exec it reaches the command.
//  - When the child ends, its status (exit code, or 128 + signal) is written
//    to ./exit_status (temp + rename) and the launcher exits with it. A
//    restarted NM, which is not the launcher's parent, reads it from there.
//  - Exit 127 without ./pgid: EXE could not be started (fork failed).
// Only libc, so the wrapper costs the container about as much memory as sh.
#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace {

// Writes `value` and a newline to `path` via `path.tmp` and rename.
bool publish(const char* path, long value) {
  char tmp[64];
  std::snprintf(tmp, sizeof tmp, "%s.tmp", path);
  FILE* f = std::fopen(tmp, "w");
  if (f == nullptr) return false;
  bool ok = std::fprintf(f, "%ld\n", value) > 0;
  ok = std::fclose(f) == 0 && ok;
  return ok && std::rename(tmp, path) == 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s EXE [ARG...]\n", argv[0]);
    return 127;
  }
  // The launcher itself keeps termination signals blocked: the NM never
  // sends it one, and a stray one must not cost the exit status.
  sigset_t term, none;
  sigemptyset(&term);
  sigaddset(&term, SIGTERM);
  sigaddset(&term, SIGINT);
  sigaddset(&term, SIGHUP);
  sigemptyset(&none);
  sigprocmask(SIG_BLOCK, &term, nullptr);

  pid_t child = fork();
  if (child < 0) {
    std::fprintf(stderr, "morpheus-container-launch: fork: %s\n", std::strerror(errno));
    return 127;
  }
  if (child == 0) {
    setpgid(0, 0);
    signal(SIGPIPE, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    signal(SIGINT, SIG_DFL);
    signal(SIGHUP, SIG_DFL);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    execv(argv[1], argv + 1);
    std::fprintf(stderr, "morpheus-container-launch: cannot execute %s: %s\n", argv[1],
                 std::strerror(errno));
    _exit(127);
  }
  // Both sides set the group (as shells do), so it exists before ./pgid names
  // it. EACCES: the child has already exec'd, so it set the group itself.
  if (setpgid(child, child) != 0 && errno != EACCES) {
    std::fprintf(stderr, "morpheus-container-launch: setpgid: %s\n", std::strerror(errno));
  }
  if (!publish("pgid", static_cast<long>(child))) {
    std::fprintf(stderr, "morpheus-container-launch: cannot write ./pgid: %s\n",
                 std::strerror(errno));
  }
  int st = 0;
  while (waitpid(child, &st, 0) < 0) {
    if (errno != EINTR) return 127;
  }
  int code = WIFEXITED(st) ? WEXITSTATUS(st) : WIFSIGNALED(st) ? 128 + WTERMSIG(st) : 127;
  if (!publish("exit_status", code)) {
    std::fprintf(stderr, "morpheus-container-launch: cannot write ./exit_status: %s\n",
                 std::strerror(errno));
  }
  return code;
}
