// morpheus-container-launch: the NM's exit-status wrapper around a container
// command, and the one privileged step of running it as its submitter's
// account (YARN's container-executor).
//
//   morpheus-container-launch EXE [ARG...]        (cwd = the container dir)
//       runs EXE as the caller's own account, in the caller's environment,
//       in ./work if there is one.
//   morpheus-container-launch --run-as USER --min-uid N --container-root ROOT -- EXE [ARG...]
//       (cwd = ROOT/<container id>; only for a caller whose real and
//       effective uid are root) runs EXE as the local account USER.
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
//  - --run-as: the launcher trusts nothing it is given. It refuses to run
//    unless: it was started by root (it is never installed setuid); USER is a
//    plain account name that exists, whose uid is neither 0 nor below N
//    (N >= 1); ROOT is an absolute path with no symlink, '.' or '..' in it,
//    a directory owned by root and writable by nobody else; the cwd is a
//    directory directly inside ROOT, owned by root and writable by nobody
//    else, whose name is a container id; ./work is a real directory (not a
//    symlink) owned by USER with mode 0700; ./env is a regular file owned by
//    root, not a symlink, of NUL-separated NAME=VALUE entries: the command's
//    environment (the launcher itself is started with an empty one, so no
//    LD_PRELOAD or similar reaches a root process); EXE is an absolute path.
//    The launcher itself stays root (so the container cannot signal or trace
//    it and ./pgid, ./exit_status stay the NM's); the child sets its groups
//    to USER's, then its gid and uid, checks that root cannot be regained,
//    enters ./work and only then executes EXE. Any failed check: a message
//    on stderr and exit 126 before anything runs.
// Only libc and the C++ standard library, so the wrapper costs the container
// about as much memory as sh.
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

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

// The account, checked, that --run-as switches to.
struct Target {
  uid_t uid = 0;
  gid_t gid = 0;
  std::vector<gid_t> groups;
  std::vector<std::string> env;  // the command's environment, from ./env
  int work_fd = -1;              // ./work, opened without following a symlink
};

[[noreturn]] void refuse(const std::string& why) {
  std::fprintf(stderr, "morpheus-container-launch: refused: %s\n", why.c_str());
  std::exit(126);
}

bool accountName(const std::string& n) {
  if (n.empty() || n.size() > 32) return false;
  if (!((n[0] >= 'a' && n[0] <= 'z') || n[0] == '_')) return false;
  for (char c : n) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-'))
      return false;
  }
  return true;
}

bool containerIdName(const std::string& n) {
  if (n.empty() || n.size() > 128) return false;
  auto alnum = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
  };
  if (!alnum(n[0])) return false;
  for (char c : n) {
    if (!alnum(c) && c != '_' && c != '-') return false;
  }
  return true;
}

// A directory owned by root that no one else may write.
void requireRootDir(const struct stat& st, const std::string& what) {
  if (!S_ISDIR(st.st_mode)) refuse(what + " is not a directory");
  if (st.st_uid != 0) refuse(what + " is not owned by root");
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0) refuse(what + " is writable by group or others");
}

// Validates every --run-as input (see the contract above); refuses on any
// doubt. `root` and `user` as given on the command line.
Target prepareRunAs(const std::string& user, const std::string& min_uid_text,
                    const std::string& root) {
  if (getuid() != 0 || geteuid() != 0) refuse("--run-as needs a caller running as root");
  char* end = nullptr;
  errno = 0;
  long long min_uid = std::strtoll(min_uid_text.c_str(), &end, 10);
  if (min_uid_text.empty() || *end != '\0' || errno != 0 || min_uid < 1 || min_uid > INT_MAX)
    refuse("--min-uid '" + min_uid_text + "' is not an integer >= 1");
  if (!accountName(user)) refuse("--run-as '" + user + "' is not an account name");
  struct passwd* pw = getpwnam(user.c_str());
  if (pw == nullptr) refuse("no local account '" + user + "'");
  Target t;
  t.uid = pw->pw_uid;
  t.gid = pw->pw_gid;
  if (t.uid == 0 || static_cast<long long>(t.uid) < min_uid)
    refuse("account '" + user + "' has uid " + std::to_string(t.uid) + ", below " +
           std::to_string(min_uid));
  int n = 64;
  t.groups.resize(static_cast<size_t>(n));
  while (getgrouplist(user.c_str(), t.gid, t.groups.data(), &n) < 0) {
    if (n > 65536) refuse("account '" + user + "' is in too many groups");
    t.groups.resize(static_cast<size_t>(n *= 2));
  }
  t.groups.resize(static_cast<size_t>(n));
  for (gid_t g : t.groups) {
    if (g == 0) refuse("account '" + user + "' is in group root");
  }
  // ROOT: absolute, canonical (realpath resolves every symlink, '.' and
  // '..'; equal means there were none), root's and writable only by root.
  if (root.empty() || root[0] != '/') refuse("--container-root must be an absolute path");
  char real[PATH_MAX];
  if (realpath(root.c_str(), real) == nullptr || root != real)
    refuse("--container-root '" + root + "' is not a canonical path (symlink, '.' or '..')");
  struct stat root_st {};
  if (lstat(root.c_str(), &root_st) != 0) refuse("cannot stat --container-root");
  requireRootDir(root_st, "--container-root");
  // The cwd: ROOT/<container id>, the very directory (device and inode)
  // the launcher was started in.
  char cwd[PATH_MAX];
  if (getcwd(cwd, sizeof cwd) == nullptr) refuse("cannot read the working directory");
  std::string dir = cwd;
  if (dir.size() <= root.size() + 1 || dir.compare(0, root.size(), root) != 0 ||
      dir[root.size()] != '/' || !containerIdName(dir.substr(root.size() + 1)))
    refuse("the working directory " + dir + " is not a container directory inside " + root);
  struct stat cwd_st {
  }, dir_st{};
  if (stat(".", &cwd_st) != 0 || lstat(dir.c_str(), &dir_st) != 0 ||
      cwd_st.st_dev != dir_st.st_dev || cwd_st.st_ino != dir_st.st_ino)
    refuse("the working directory " + dir + " changed under the launcher");
  requireRootDir(dir_st, "the container directory " + dir);
  // ./work: the container's own directory.
  t.work_fd = open("work", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (t.work_fd < 0) refuse("./work is missing or a symlink");
  struct stat work_st {};
  if (fstat(t.work_fd, &work_st) != 0 || !S_ISDIR(work_st.st_mode) || work_st.st_uid != t.uid ||
      (work_st.st_mode & 077) != 0)
    refuse("./work is not a directory of '" + user + "' with mode 0700");
  // ./env: the command's environment, written by the NM.
  int env_fd = open("env", O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  struct stat env_st {};
  if (env_fd < 0 || fstat(env_fd, &env_st) != 0 || !S_ISREG(env_st.st_mode) || env_st.st_uid != 0 ||
      (env_st.st_mode & 077) != 0)
    refuse("./env is missing, a symlink, not root's or readable by others");
  std::string text;
  char buf[8192];
  for (ssize_t r; (r = read(env_fd, buf, sizeof buf)) != 0;) {
    if (r < 0) {
      if (errno == EINTR) continue;
      refuse("cannot read ./env");
    }
    text.append(buf, static_cast<size_t>(r));
    if (text.size() > (16u << 20)) refuse("./env is larger than 16 MiB");
  }
  close(env_fd);
  for (size_t b = 0; b < text.size();) {
    size_t e = text.find('\0', b);
    if (e == std::string::npos) e = text.size();
    std::string entry = text.substr(b, e - b);
    if (entry.find('=') == std::string::npos || entry[0] == '=')
      refuse("./env holds an entry that is not NAME=VALUE");
    t.env.push_back(std::move(entry));
    b = e + 1;
  }
  return t;
}

// In the child, before exec: become the target account for good.
void dropTo(const Target& t) {
  if (setgroups(t.groups.size(), t.groups.data()) != 0) _exit(126);
  if (setresgid(t.gid, t.gid, t.gid) != 0) _exit(126);
  if (setresuid(t.uid, t.uid, t.uid) != 0) _exit(126);
  uid_t r, e, s;
  gid_t rg, eg, sg;
  if (getresuid(&r, &e, &s) != 0 || r != t.uid || e != t.uid || s != t.uid) _exit(126);
  if (getresgid(&rg, &eg, &sg) != 0 || rg != t.gid || eg != t.gid || sg != t.gid) _exit(126);
  if (setuid(0) == 0 || seteuid(0) == 0) _exit(126);  // root must be gone for good
  if (fchdir(t.work_fd) != 0) _exit(126);
}

}  // namespace

int main(int argc, char** argv) {
  // --run-as USER --min-uid N --container-root ROOT -- EXE [ARG...]
  bool run_as = argc > 1 && std::strcmp(argv[1], "--run-as") == 0;
  Target target;
  int exe_at = 1;
  if (run_as) {
    if (argc < 9 || std::strcmp(argv[3], "--min-uid") != 0 ||
        std::strcmp(argv[5], "--container-root") != 0 || std::strcmp(argv[7], "--") != 0) {
      std::fprintf(stderr,
                   "usage: %s --run-as USER --min-uid N --container-root ROOT -- EXE [ARG...]\n",
                   argv[0]);
      return 126;
    }
    if (argv[8][0] != '/') refuse("EXE must be an absolute path");
    target = prepareRunAs(argv[2], argv[4], argv[6]);
    exe_at = 8;
  }
  if (argc <= exe_at) {
    std::fprintf(stderr, "usage: %s EXE [ARG...]\n", argv[0]);
    return 127;
  }
  std::vector<char*> envp;
  for (auto& e : target.env) envp.push_back(e.data());
  envp.push_back(nullptr);
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
    if (run_as) {
      dropTo(target);
      execve(argv[exe_at], argv + exe_at, envp.data());
    } else {
      // The command's working dir is ./work when the NM made one.
      if (chdir("work") != 0 && errno != ENOENT) _exit(127);
      execv(argv[exe_at], argv + exe_at);
    }
    std::fprintf(stderr, "morpheus-container-launch: cannot execute %s: %s\n", argv[exe_at],
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
