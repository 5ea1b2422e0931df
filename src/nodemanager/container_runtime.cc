#include "nodemanager/container_runtime.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/ignore.h"
#include "common/tls.h"
#include "common/token.h"

namespace morpheus::nm {

namespace {

TimePoint now() { return std::chrono::time_point_cast<Millis>(std::chrono::system_clock::now()); }

// One process of a session, from /proc/<pid>/stat.
struct ProcStat {
  pid_t pid = 0;
  std::string state;
  long long rss_pages = 0;
  unsigned long long cpu_ticks = 0;  // utime + stime
};

// Calls f(ProcStat) for every process in /proc whose session is `sid`.
template <typename F>
void forEachInSession(pid_t sid, F&& f) {
  DIR* d = opendir("/proc");
  if (!d) return;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    std::ifstream in_file(std::string("/proc/") + e->d_name + "/stat");
    std::string line;
    if (!std::getline(in_file, line)) continue;
    auto rp = line.rfind(')');
    if (rp == std::string::npos) continue;
    std::istringstream in(line.substr(rp + 2));
    // Fields after the command: state(3) ppid pgrp session tty tpgid flags minflt cminflt majflt
    // cmajflt utime(14) stime(15) cutime cstime priority nice threads itreal starttime vsize
    // rss(24)
    ProcStat p;
    long long ppid, pgrp, session, tty, tpgid;
    unsigned long long flags, minflt, cminflt, majflt, cmajflt, utime, stime;
    long long cutime, cstime, prio, nice, threads, itreal;
    unsigned long long starttime, vsize;
    in >> p.state >> ppid >> pgrp >> session >> tty >> tpgid >> flags >> minflt >> cminflt >>
        majflt >> cmajflt >> utime >> stime >> cutime >> cstime >> prio >> nice >> threads >>
        itreal >> starttime >> vsize >> p.rss_pages;
    if (!in || session != sid) continue;
    p.pid = static_cast<pid_t>(std::strtol(e->d_name, nullptr, 10));
    p.cpu_ticks = utime + stime;
    f(p);
  }
  closedir(d);
}

}  // namespace

std::vector<int> sessionProcesses(int sid) {
  std::vector<int> out;
  if (sid <= 0) return out;
  forEachInSession(static_cast<pid_t>(sid), [&](const ProcStat& p) {
    if (p.state != "Z") out.push_back(static_cast<int>(p.pid));
  });
  return out;
}

namespace {

// Sum of RSS (MiB) and CPU ticks over every live process in session `sid`.
void sampleSession(pid_t sid, int64_t* rss_mib, uint64_t* cpu_ticks) {
  static const long page = sysconf(_SC_PAGESIZE);
  int64_t rss_pages = 0;
  *cpu_ticks = 0;
  forEachInSession(sid, [&](const ProcStat& p) {
    if (p.state == "Z") return;
    rss_pages += p.rss_pages;
    *cpu_ticks += p.cpu_ticks;
  });
  *rss_mib = rss_pages * page / (1024 * 1024);
}

// Sends `sig` to every process of session `sid` (found in /proc) except,
// with `spare_leader`, the leader itself (the launcher, which then records
// how the command ended). A process group alone would miss members that
// moved to a group of their own, as the command does.
void signalSession(pid_t sid, int sig, bool spare_leader) {
  if (sid <= 0) return;
  if (!spare_leader) kill(-sid, sig);
  forEachInSession(sid, [&](const ProcStat& p) {
    if (!spare_leader || p.pid != sid) kill(p.pid, sig);
  });
}

// The directory of the running executable ("" if unknown).
std::string selfDir() {
  std::error_code ec;
  auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? "" : p.parent_path().string();
}

// Field 22 of /proc/<pid>/stat (start time in clock ticks since boot): with
// the pid it identifies a process across pid reuse. 0 if gone.
uint64_t procStartTime(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(f, line)) return 0;
  auto rp = line.rfind(')');
  if (rp == std::string::npos) return 0;
  std::istringstream in(line.substr(rp + 2));
  std::string field;
  for (int i = 3; i <= 22; i++) {
    if (!(in >> field)) return 0;
    if (i == 3 && field == "Z") return 0;  // zombie: it has exited
  }
  return std::strtoull(field.c_str(), nullptr, 10);
}

// The executable `command` resolves to in `path` ("" if none).
std::string resolve(const std::string& command, const std::string& path) {
  if (command.find('/') != std::string::npos)
    return access(command.c_str(), X_OK) == 0 ? command : "";
  size_t b = 0;
  while (b <= path.size()) {
    size_t e = path.find(':', b);
    std::string dir = path.substr(b, e == std::string::npos ? std::string::npos : e - b);
    std::string cand = (dir.empty() ? "." : dir) + "/" + command;
    struct stat st {};
    if (::stat(cand.c_str(), &st) == 0 && S_ISREG(st.st_mode) && access(cand.c_str(), X_OK) == 0)
      return cand;
    if (e == std::string::npos) break;
    b = e + 1;
  }
  return "";
}

// Writes `text` to `path` atomically and durably (temp file, fsync, rename).
bool writeDurably(const std::string& path, const std::string& text, mode_t mode = 0600) {
  std::string tmp = path + ".tmp";
  ::unlink(tmp.c_str());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
  if (fd < 0) return false;
  bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()) &&
            ::fsync(fd) == 0;
  ::close(fd);
  if (!ok || ::rename(tmp.c_str(), path.c_str()) != 0) return false;
  // The rename itself is durable only once the directory is synced.
  std::string dir = path.substr(0, path.rfind('/'));
  int dfd = ::open(dir.empty() ? "/" : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) return false;
  ok = ::fsync(dfd) == 0;
  ::close(dfd);
  return ok;
}

// The last `max_bytes` of the regular file `path` (never through a symlink).
std::string tail(const std::string& path, size_t max_bytes) {
  int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return "";
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return "";
  }
  auto size = static_cast<size_t>(st.st_size);
  size_t from = size > max_bytes ? size - max_bytes : 0;
  std::string out(size - from, '\0');
  ssize_t n = ::pread(fd, out.data(), out.size(), static_cast<off_t>(from));
  ::close(fd);
  out.resize(n > 0 ? static_cast<size_t>(n) : 0);
  return out;
}

// Creates <dir> (the NM's: 0711 when containers run as other accounts, else
// 0700) and <dir>/work (the container's account's, 0700). A leftover <dir>
// must be a real directory of the NM's.
Status makeContainerDirs(const std::string& dir, const RunAsAccount& account, bool mapped) {
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
    return unavailable("cannot create " + dir + ": " + std::strerror(errno));
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != ::geteuid())
    return unavailable(dir + " is not a directory of the NM's");
  if (::chmod(dir.c_str(), mapped ? 0711 : 0700) != 0)
    return unavailable("cannot chmod " + dir + ": " + std::strerror(errno));
  std::string work = dir + "/work";
  if (::mkdir(work.c_str(), 0700) != 0 && errno != EEXIST)
    return unavailable("cannot create " + work + ": " + std::strerror(errno));
  int fd = ::open(work.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return unavailable(work + " is not a directory");
  bool ok = ::fchmod(fd, 0700) == 0 && (!mapped || ::fchown(fd, account.uid, account.gid) == 0);
  ::close(fd);
  if (!ok)
    return unavailable("cannot give " + work + " to " + account.name + ": " + std::strerror(errno));
  return Status::ok();
}

// Writes a secret to `path` (a new file, mode 0400), owned by the account.
Status writeSecretFile(const std::string& path, const std::string& text,
                       const RunAsAccount& account, bool mapped) {
  ::unlink(path.c_str());
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0400);
  if (fd < 0) return unavailable("cannot create " + path + ": " + std::strerror(errno));
  bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()) &&
            ::fchmod(fd, 0400) == 0 && (!mapped || ::fchown(fd, account.uid, account.gid) == 0);
  ::close(fd);
  if (!ok) {
    ::unlink(path.c_str());
    return unavailable("cannot write " + path);
  }
  return Status::ok();
}

// Writes public `text` to `path` (a new file, mode 0444): readable by the
// container's account, whichever it is, through its 0711 container dir.
Status writePublicFile(const std::string& path, const std::string& text) {
  ::unlink(path.c_str());
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0444);
  if (fd < 0) return unavailable("cannot create " + path + ": " + std::strerror(errno));
  bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()) &&
            ::fchmod(fd, 0444) == 0;
  ::close(fd);
  if (!ok) {
    ::unlink(path.c_str());
    return unavailable("cannot write " + path);
  }
  return Status::ok();
}

}  // namespace

ContainerRuntime::ContainerRuntime(std::string local_dir, Millis monitor_interval,
                                   Millis kill_grace, MetricsRegistry& metrics)
    : local_dir_(std::move(local_dir)),
      launcher_(selfDir() + "/morpheus-container-launch"),
      interval_(monitor_interval),
      grace_(kill_grace),
      metrics_(metrics) {}

ContainerRuntime::~ContainerRuntime() { shutdown(); }

void ContainerRuntime::setMemoryEnforcement(std::string mode, std::string cgroup_root) {
  enforcement_ = std::move(mode);
  cgroup_root_ = std::move(cgroup_root);
}

bool writeControlFile(const std::string& path, const std::string& text) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return false;
  struct stat st {};
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && ::ftruncate(fd, 0) != 0) {
    ::close(fd);
    return false;
  }
  bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ::close(fd);
  return ok;
}

namespace {

// Why the cgroup v2 hierarchy at `root` cannot be used ("" = usable).
std::string cgroupProblem(const std::string& root) {
  std::ifstream f(root + "/cgroup.controllers");
  std::string controllers;
  if (!f || !std::getline(f, controllers))
    return root + " is not a cgroup v2 hierarchy (no cgroup.controllers)";
  if ((" " + controllers + " ").find(" memory ") == std::string::npos) {
    return "the memory controller is not available in " + root;
  }
  if (access(root.c_str(), W_OK) != 0) return root + " is not writable";
  return "";
}
}  // namespace

Result<std::string> ownCgroupPath(const std::string& proc_cgroup_text) {
  std::istringstream in(proc_cgroup_text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("0::", 0) == 0 && line.size() > 3 && line[3] == '/') return line.substr(3);
  }
  return invalidArgument("nm.cgroup-parent",
                         "own: this process is in no cgroup v2 hierarchy (no '0::/...' line in "
                         "/proc/self/cgroup)");
}

Result<std::string> readOwnCgroupPath() {
  std::ifstream self("/proc/self/cgroup");
  std::stringstream text;
  text << self.rdbuf();
  return ownCgroupPath(text.str());
}

Result<std::string> ContainerRuntime::cgroupParentBelowRoot() const {
  std::string problem = cgroupProblem(cgroup_root_);
  if (!problem.empty()) return unavailable(problem);
  std::string parent = cgroup_root_ + "/morpheus-nm";
  std::error_code ec;
  std::filesystem::create_directories(parent, ec);
  if (ec) return unavailable("cannot create " + parent + ": " + ec.message());
  ignoreError(writeControlFile(cgroup_root_ + "/cgroup.subtree_control", "+memory"),
              "fails harmlessly when already enabled; the check is the parent's write below");
  if (!writeControlFile(parent + "/cgroup.subtree_control", "+memory")) {
    return unavailable("cannot enable the memory controller in " + parent);
  }
  return parent;
}

Result<std::string> ContainerRuntime::cgroupParentBelowOwn() const {
  std::string own = own_cgroup_ == "/" ? cgroup_root_ : cgroup_root_ + own_cgroup_;
  std::string problem = cgroupProblem(own);
  if (!problem.empty()) return unavailable("delegated cgroup " + own_cgroup_ + ": " + problem);
  std::string supervisor = own + "/supervisor", parent = own + "/containers";
  std::error_code ec;
  std::filesystem::create_directories(supervisor, ec);
  if (!ec) std::filesystem::create_directories(parent, ec);
  if (ec) return unavailable("cannot create cgroups below " + own + ": " + ec.message());
  // No internal processes: the NM leaves <own> before <own> hands memory down.
  if (!writeControlFile(supervisor + "/cgroup.procs", std::to_string(::getpid()))) {
    return unavailable("cannot move the NM into " + supervisor + ": " + std::strerror(errno));
  }
  if (!writeControlFile(own + "/cgroup.subtree_control", "+memory")) {
    return unavailable("cannot enable the memory controller in " + own + ": " +
                       std::strerror(errno));
  }
  if (!writeControlFile(parent + "/cgroup.subtree_control", "+memory")) {
    return unavailable("cannot enable the memory controller in " + parent + ": " +
                       std::strerror(errno));
  }
  spdlog::info("delegated cgroup {}: the NM runs in {}, containers below {}", own, supervisor,
               parent);
  return parent;
}

Status ContainerRuntime::prepareContainersRoot() const {
  const std::string& root = containers_root_;
  struct stat st {};
  if (::lstat(root.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    return infeasible("nm.local-dir: " + root + " is not a directory");
  if (!run_as_.mapped()) {
    // Only the NM (and the containers, which run as its account) use it.
    if (::chmod(root.c_str(), 0700) != 0)
      return infeasible("nm.local-dir: cannot chmod " + root + ": " + std::strerror(errno));
    return Status::ok();
  }
  // Containers of other accounts reach their own <id>/work and <id>/am_token
  // by path: every directory above must be searchable by them, while no one
  // but the NM (root) may list or change <local-dir>/containers.
  if ((st.st_uid != 0 || st.st_gid != 0) && ::lchown(root.c_str(), 0, 0) != 0)
    return infeasible("nm.local-dir: cannot chown " + root + " to root: " + std::strerror(errno));
  if (::chmod(root.c_str(), 0711) != 0)
    return infeasible("nm.local-dir: cannot chmod " + root + ": " + std::strerror(errno));
  for (std::filesystem::path p = std::filesystem::path(root).parent_path();; p = p.parent_path()) {
    struct stat up {};
    if (::stat(p.c_str(), &up) != 0)
      return infeasible("nm.local-dir: cannot stat " + p.string() + ": " + std::strerror(errno));
    if ((up.st_mode & S_IXOTH) == 0) {
      char mode[8];
      std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(up.st_mode & 07777));
      return infeasible("nm.local-dir: " + p.string() + " (mode " + mode +
                        ") is not searchable by other accounts, so containers running as their "
                        "submitters' accounts (nm.run-as: mapped) cannot reach their "
                        "directories; make it 0711 or 0755, or put nm.local-dir elsewhere");
    }
    if ((up.st_mode & S_IWOTH) != 0 && (up.st_mode & S_ISVTX) == 0)
      return infeasible("nm.local-dir: " + p.string() +
                        " is writable by every account: it could be replaced under the NM");
    if (p == p.parent_path()) break;
  }
  return Status::ok();
}

Status ContainerRuntime::init() {
  std::error_code ec;
  std::filesystem::create_directories(local_dir_ + "/containers", ec);
  if (ec)
    return infeasible("nm.local-dir: cannot create " + local_dir_ + "/containers: " + ec.message());
  std::string probe = local_dir_ + "/containers/.probe";
  {
    std::ofstream f(probe);
    if (!(f << "x")) return infeasible("nm.local-dir: " + local_dir_ + " is not writable");
  }
  std::filesystem::remove(probe, ec);
  {
    char real[PATH_MAX];
    std::string root = local_dir_ + "/containers";
    if (::realpath(root.c_str(), real) == nullptr)
      return infeasible("nm.local-dir: cannot resolve " + root + ": " + std::strerror(errno));
    containers_root_ = real;
  }
  MORPHEUS_RETURN_IF_ERROR(prepareContainersRoot());
  if (access(launcher_.c_str(), X_OK) != 0) {
    return infeasible("the container launcher " + launcher_ +
                      " is not executable (it is built and installed with morpheus-nm)");
  }
  // Memory enforcement by the kernel: cgroup v2 where possible, else rlimits.
  if (enforcement_ != "monitor") {
    auto parent = own_cgroup_.empty() ? cgroupParentBelowRoot() : cgroupParentBelowOwn();
    if (parent.isOk()) {
      cgroup_parent_ = *parent;
    } else if (enforcement_ == "cgroup") {
      return infeasible("nm.memory-enforcement: cgroup: " + parent.status().message());
    } else {
      spdlog::info("cgroup v2 memory limits unavailable ({}); using rlimits plus monitoring",
                   parent.status().message());
    }
  }
  // Re-attach to containers of a previous NM process.
  int adopted = 0, ended = 0;
  for (const auto& d : std::filesystem::directory_iterator(local_dir_ + "/containers", ec)) {
    std::ifstream f(d.path() / "container.json");
    if (!f) continue;
    std::stringstream ss;
    ss << f.rdbuf();
    auto j = nlohmann::json::parse(ss.str(), nullptr, false);
    if (j.is_discarded()) {
      spdlog::warn("ignoring unreadable container record {}",
                   (d.path() / "container.json").string());
      continue;
    }
    try {
      Entry e;
      e.snap.id = ContainerId(j.at("id").get<std::string>());
      e.snap.app = AppId(j.at("app").get<std::string>());
      e.snap.resource = Resource(j.at("memory_mib").get<int64_t>(), j.at("vcores").get<int64_t>());
      e.snap.start = fromEpochMs(j.at("start_ms").get<int64_t>());
      e.snap.work_dir = d.path().string();
      e.run_as = j.value("run_as", "");
      e.token_expires = fromEpochMs(j.value("token_expires_ms", int64_t{0}));
      e.pid = j.at("pid").get<pid_t>();
      e.group = j.value("group", pid_t{-1});
      e.proc_start = j.at("proc_start").get<uint64_t>();
      e.adopted = true;
      e.last_sample = now();
      e.snap.running = true;
      if (j.contains("reason")) {
        int r = j.at("reason").get<int>();
        if (r < 0 || r > static_cast<int>(ExitReason::kLaunchFailed))
          throw std::out_of_range("bad reason");
        e.snap.reason = static_cast<ExitReason>(r);
        e.snap.diagnostics = j.value("diagnostics", "");
      }
      if (j.contains("stop")) {
        const auto& sj = j.at("stop");
        int r = sj.at("reason").get<int>();
        if (r < 0 || r > static_cast<int>(ExitReason::kLaunchFailed))
          throw std::out_of_range("bad stop reason");
        e.stopping = true;
        e.stop_reason = static_cast<ExitReason>(r);
        e.stop_why = sj.value("why", "");
        e.kill_at = fromEpochMs(sj.at("kill_at_ms").get<int64_t>());
      }
      bool gone = false;
      if (j.contains("completed")) {
        // Completed before the restart and not yet acknowledged by the RM.
        e.snap.running = false;
        e.snap.exit_status = j.at("completed").at("exit_status").get<int>();
        e.snap.end = fromEpochMs(j.at("completed").at("end_ms").get<int64_t>());
        e.pid = -1;
        ended++;
      } else if (e.proc_start != 0 && procStartTime(e.pid) == e.proc_start) {
        adopted++;
      } else {
        gone = true;  // ended while the NM was down
        ended++;
      }
      // init() runs before any other thread uses the runtime: the lock is
      // uncontended, taken for the rules completeAdopted relies on.
      MutexLock lk(mu_);
      if (gone) completeAdopted(e);
      containers_[e.snap.id] = e;
    } catch (const std::exception& ex) {  // nlohmann::json::exception or a bad enum value
      spdlog::warn("ignoring container record {}: {}", d.path().string(), ex.what());
    }
  }
  if (adopted + ended > 0) {
    spdlog::info("re-attached to {} running container(s); {} ended while the NM was down", adopted,
                 ended);
  }
  if (run_as_.runsAsRoot()) {
    spdlog::warn(
        "SECURITY WARNING: containers run as root (nm.run-as: nm-user, "
        "nm.allow-root-containers: true): any container can read every other container's "
        "files and tokens and take over this machine; never do this on a shared cluster");
  }
  spdlog::info("containers run {} under {}; memory enforced by {} and monitoring every {} ms",
               run_as_.describe(), containers_root_,
               cgroup_parent_.empty() ? "rlimits" : "cgroup v2 memory.max under " + cgroup_parent_,
               interval_.count());
  return Status::ok();
}

void ContainerRuntime::start() {
  thread_ = std::thread([this] {
    MutexLock lk(mu_);
    while (!stopping_) {
      lk.unlock();
      monitorOnce();
      lk.lock();
      cv_.waitFor(mu_, interval_, [this]() REQUIRES(mu_) { return stopping_; });
    }
  });
}

void ContainerRuntime::shutdown() {
  {
    MutexLock lk(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

Status ContainerRuntime::launch(const LaunchSpec& spec) {
  MORPHEUS_RETURN_IF_ERROR(validateContainerId(spec.id.value()));
  if (spec.command.empty()) return invalidArgument("launch_context.command", "is required");
  std::string dir = local_dir_ + "/containers/" + spec.id.value();
  {
    MutexLock lk(mu_);
    if (containers_.count(spec.id) || launching_.count(spec.id))
      return alreadyExists("container " + spec.id.value() + " already exists");
    if (removing_.count(spec.id))
      return unavailable("container " + spec.id.value() +
                         ": its directory is being removed (nm.log-retention)");
    launching_.insert(spec.id);
  }
  // Until launch returns the log sweep leaves the directory alone
  // (claimForRemoval).
  struct LaunchClaim {
    ContainerRuntime& rt;
    const ContainerId& id;
    ~LaunchClaim() {
      MutexLock lk(rt.mu_);
      rt.launching_.erase(id);
    }
  } claim{*this, spec.id};
  // An acknowledged container is forgotten but its record stays: a replayed
  // token must not run it again.
  if (std::filesystem::exists(dir + "/container.acked.json"))
    return alreadyExists("container " + spec.id.value() + " already ran on this node");
  // The account first: a submitter without one leaves nothing behind.
  MORPHEUS_ASSIGN_OR_RETURN(RunAsAccount account, run_as_.accountFor(spec.user));
  const bool mapped = run_as_.mapped();
  std::error_code ec;
  MORPHEUS_RETURN_IF_ERROR(makeContainerDirs(dir, account, mapped));
  const std::string work = dir + "/work";

  std::map<std::string, std::string> env = {
      {"PATH", "/usr/local/bin:/usr/bin:/bin"},
      {"HOME", work},
      {"PWD", work},
      {"MORPHEUS_CONTAINER_ID", spec.id.value()},
      {"MORPHEUS_APP_ID", spec.app.value()},
      {"MORPHEUS_CONTAINER_MEMORY_MIB", std::to_string(spec.resource.memoryMib())},
      {"MORPHEUS_CONTAINER_VCORES", std::to_string(spec.resource.vcores())}};
  if (mapped) {
    env["USER"] = account.name;
    env["LOGNAME"] = account.name;
  }
  for (const auto& [k, v] : spec.env) env[k] = v;
  // A secret never travels in the environment (/proc/<pid>/environ, child
  // processes, crash reports): the AM reads its token from a file only its
  // account can read.
  env.erase("MORPHEUS_AM_TOKEN");
  env.erase("MORPHEUS_AM_TOKEN_FILE");
  if (!spec.am_token.empty()) {
    std::string token_path = dir + "/am_token";
    MORPHEUS_RETURN_IF_ERROR(writeSecretFile(token_path, spec.am_token + "\n", account, mapped));
    env["MORPHEUS_AM_TOKEN_FILE"] = token_path;
  }
  // Under TLS an AM verifies the RM and the NMs with the cluster's CA bundle
  // (public), copied here; it never gets the node's certificate or key
  // (common/tls.h).
  if (!spec.tls_ca_pem.empty()) {
    std::string ca_path = dir + "/tls-ca.pem";
    MORPHEUS_RETURN_IF_ERROR(writePublicFile(ca_path, spec.tls_ca_pem));
    env[kTlsCaEnv] = ca_path;
  }
  Entry e;
  e.snap.id = spec.id;
  e.snap.app = spec.app;
  e.snap.resource = spec.resource;
  e.snap.start = now();
  e.snap.work_dir = dir;
  e.run_as = account.name;
  e.token_expires = spec.token_expires;
  e.last_sample = e.snap.start;
  std::string exe = resolve(spec.command, env["PATH"]);
  if (exe.empty()) {
    e.snap.exit_status = 127;
    e.snap.reason = ExitReason::kLaunchFailed;
    e.snap.diagnostics =
        "cannot execute '" + spec.command + "': not found or not executable in PATH " + env["PATH"];
    e.snap.end = now();
    // Best effort: the failure is also returned to the caller.
    if (!persist(e)) spdlog::warn("cannot record the failed launch of {}", spec.id.value());
    MutexLock lk(mu_);
    containers_[spec.id] = e;
    metrics_.launch_failed.inc();
    return infeasible(e.snap.diagnostics);
  }
  // The command runs under the launcher (launch_main.cc), which records its
  // exit status in the container dir, so an NM restarted meanwhile still
  // learns it, and gives it a process group the NM can SIGTERM alone.
  // As root the launcher gets an empty environment (no LD_PRELOAD and the
  // like for a root process) and reads the command's from <dir>/env; it
  // validates everything and drops to the account before exec.
  std::vector<std::string> argv_s = {launcher_};
  std::vector<std::string> env_s;
  if (mapped) {
    std::string text;
    for (const auto& [k, v] : env) {
      if (k.empty() || k.find('=') != std::string::npos || k.find('\0') != std::string::npos ||
          v.find('\0') != std::string::npos)
        return invalidArgument("launch_context.env", "'" + k + "' is not a NAME=VALUE pair");
      text += k + "=" + v;
      text.push_back('\0');
    }
    if (!writeDurably(dir + "/env", text, 0600)) return unavailable("cannot write " + dir + "/env");
    std::string abs_exe = std::filesystem::absolute(exe, ec).lexically_normal().string();
    argv_s.insert(argv_s.end(),
                  {"--run-as", account.name, "--min-uid", std::to_string(run_as_.minUid()),
                   "--container-root", containers_root_, "--", abs_exe});
  } else {
    argv_s.push_back(exe);
    for (const auto& [k, v] : env) env_s.push_back(k + "=" + v);
  }
  argv_s.insert(argv_s.end(), spec.args.begin(), spec.args.end());
  // argv/envp prepared before fork (no allocation in the child).
  std::vector<char*> argv, envp;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  for (auto& x : env_s) envp.push_back(x.data());
  envp.push_back(nullptr);
  std::string out_path = dir + "/stdout", err_path = dir + "/stderr";
  std::string cg_procs;
  if (!cgroup_parent_.empty()) {
    std::string cg = cgroup_parent_ + "/" + spec.id.value();
    std::filesystem::create_directories(cg, ec);
    if (ec) return unavailable("cannot create cgroup " + cg + ": " + ec.message());
    if (!writeControlFile(cg + "/memory.max",
                          std::to_string(spec.resource.memoryMib() * 1024 * 1024))) {
      return unavailable("cannot write " + cg + "/memory.max: " + std::strerror(errno));
    }
    ignoreError(writeControlFile(cg + "/memory.swap.max", "0"),
                "no swap accounting on this kernel: memory.max still bounds the container");
    cg_procs = cg + "/cgroup.procs";
  }
  rlim_t as_limit = static_cast<rlim_t>(spec.resource.memoryMib() * 8 + 2048) * 1024 * 1024;
  pid_t pid = fork();
  if (pid < 0) return unavailable(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {
    setsid();
    if (!cg_procs.empty()) {
      // Join the container's cgroup before exec (async-signal-safe calls only).
      int cfd = open(cg_procs.c_str(), O_WRONLY | O_CREAT, 0644);
      char buf[24];
      int len = 0;
      for (pid_t v = getpid(); v > 0; v /= 10) buf[len++] = static_cast<char>('0' + v % 10);
      for (int i = 0; i < len / 2; i++) std::swap(buf[i], buf[len - 1 - i]);
      if (cfd < 0 || write(cfd, buf, static_cast<size_t>(len)) != len) _exit(126);
      close(cfd);
    } else {
      struct rlimit as {
        as_limit, as_limit
      };
      setrlimit(RLIMIT_AS, &as);
    }
    struct rlimit core {
      0, 0
    };
    setrlimit(RLIMIT_CORE, &core);
    int fd0 = open("/dev/null", O_RDONLY);
    int fd1 = open(out_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW, 0600);
    int fd2 = open(err_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW, 0600);
    if (fd0 >= 0) dup2(fd0, 0);
    if (fd1 >= 0) dup2(fd1, 1);
    if (fd2 >= 0) dup2(fd2, 2);
    if (chdir(dir.c_str()) != 0) _exit(127);
    execve(argv[0], argv.data(), envp.data());
    _exit(127);
  }
  e.pid = pid;
  e.snap.running = true;
  e.proc_start = procStartTime(pid);
  // The launcher publishes the command's group at once (a few ms); until it
  // has, nobody may stop the container, so wait for it here. A launcher that
  // ends without publishing could not start the command.
  for (int i = 0; i < 5000 && e.group <= 0; i++) {
    std::ifstream g(dir + "/pgid");
    long v = 0;
    if (g >> v && v > 0) {
      e.group = static_cast<pid_t>(v);
      break;
    }
    int st = 0;
    if (waitpid(pid, &st, WNOHANG) == pid) {
      return unavailable("the container launcher " + launcher_ + " failed to start " + exe +
                         " (status " + std::to_string(st) + "); see " + err_path);
    }
    usleep(1000);
  }
  if (e.group <= 0) {
    signalSession(pid, SIGKILL, false);
    int st = 0;
    waitpid(pid, &st, 0);
    return unavailable("the container launcher did not start " + exe + " within 5 s");
  }
  // The record a restarted NM re-attaches from, on disk before we acknowledge.
  if (!persist(e)) {
    signalSession(pid, SIGKILL, false);
    int st = 0;
    waitpid(pid, &st, 0);
    return unavailable("cannot record container " + spec.id.value() + " in " + dir);
  }
  MutexLock lk(mu_);
  containers_[spec.id] = e;
  metrics_.launched.inc();
  spdlog::info("container {} of {} started: pid {}, {}", spec.id.value(), spec.app.value(), pid,
               spec.resource.toString());
  return Status::ok();
}

void ContainerRuntime::finishCgroup(Entry& e) {
  if (cgroup_parent_.empty()) return;
  std::string cg = cgroup_parent_ + "/" + e.snap.id.value();
  std::ifstream ev(cg + "/memory.events");
  std::string k;
  long long v = 0;
  while (ev >> k >> v) {
    if (k == "oom_kill" && v > 0 && e.snap.reason != ExitReason::kMemoryExceeded) {
      e.snap.reason = ExitReason::kMemoryExceeded;
      e.snap.diagnostics = "container " + e.snap.id.value() +
                           " killed by the kernel: over its cgroup limit of " +
                           std::to_string(e.snap.resource.memoryMib()) + " MiB";
    }
  }
  ::rmdir(cg.c_str());
}

bool ContainerRuntime::persist(const Entry& e) const {
  nlohmann::json rec = {{"id", e.snap.id.value()},
                        {"app", e.snap.app.value()},
                        {"memory_mib", e.snap.resource.memoryMib()},
                        {"vcores", e.snap.resource.vcores()},
                        {"pid", e.pid},
                        {"group", e.group},
                        {"proc_start", e.proc_start},
                        {"start_ms", toEpochMs(e.snap.start)}};
  if (!e.run_as.empty()) rec["run_as"] = e.run_as;
  if (toEpochMs(e.token_expires) > 0) rec["token_expires_ms"] = toEpochMs(e.token_expires);
  if (e.snap.reason != ExitReason::kNone) {
    rec["reason"] = static_cast<int>(e.snap.reason);
    rec["diagnostics"] = e.snap.diagnostics;
  }
  if (e.stopping) {
    rec["stop"] = {{"reason", static_cast<int>(e.stop_reason)},
                   {"why", e.stop_why},
                   {"kill_at_ms", toEpochMs(e.kill_at)}};
  }
  if (!e.snap.running) {
    rec["completed"] = {{"exit_status", e.snap.exit_status}, {"end_ms", toEpochMs(e.snap.end)}};
  }
  return writeDurably(e.snap.work_dir + "/container.json", rec.dump());
}

void ContainerRuntime::complete(Entry& e, int st) {
  e.snap.running = false;
  e.snap.end = now();
  if (WIFEXITED(st)) {
    e.snap.exit_status = WEXITSTATUS(st);
  } else if (WIFSIGNALED(st)) {
    e.snap.exit_status = 128 + WTERMSIG(st);
  }
  if (e.snap.reason == ExitReason::kNone) {
    if (e.stopping) {
      e.snap.reason = e.stop_reason;
      e.snap.diagnostics = e.stop_why;
    } else {
      e.snap.reason = e.snap.exit_status == 0 ? ExitReason::kSuccess : ExitReason::kFailure;
      if (e.snap.exit_status != 0)
        e.snap.diagnostics = "exited with status " + std::to_string(e.snap.exit_status);
    }
  }
  // Orphans of the container's session go with it.
  signalSession(e.pid, SIGKILL, false);
  e.pid = -1;
  finishCgroup(e);
  if (!persist(e)) spdlog::warn("cannot record the completion of container {}", e.snap.id.value());
  spdlog::info("container {} completed: status {}{}", e.snap.id.value(), e.snap.exit_status,
               e.snap.diagnostics.empty() ? "" : " (" + e.snap.diagnostics + ")");
  metrics_.completed.inc();
}

void ContainerRuntime::completeAdopted(Entry& e) {
  e.snap.running = false;
  e.snap.end = now();
  std::ifstream f(e.snap.work_dir + "/exit_status");
  int code = 0;
  if (f >> code) {
    e.snap.exit_status = code;
    if (e.snap.reason == ExitReason::kNone && e.stopping) {
      e.snap.reason = e.stop_reason;
      e.snap.diagnostics = e.stop_why;
    } else if (e.snap.reason == ExitReason::kNone) {
      e.snap.reason = code == 0 ? ExitReason::kSuccess : ExitReason::kFailure;
      if (code != 0) e.snap.diagnostics = "exited with status " + std::to_string(code);
    }
  } else {
    // Its launcher was killed too (SIGKILL to the whole session, from
    // outside): only the NM that was its parent could have learned how it
    // ended.
    e.snap.exit_status = -1;
    if (e.snap.reason == ExitReason::kNone) {
      if (e.stopping) {
        e.snap.reason = e.stop_reason;
        e.snap.diagnostics = e.stop_why;
      } else {
        e.snap.reason = ExitReason::kNodeLost;
        e.snap.diagnostics =
            "container " + e.snap.id.value() +
            " ended by a signal, exit status unknown: the NM restarted and is not its parent";
      }
    }
  }
  if (e.pid > 0) signalSession(e.pid, SIGKILL, false);
  e.pid = -1;
  finishCgroup(e);
  if (!persist(e)) spdlog::warn("cannot record the completion of container {}", e.snap.id.value());
  spdlog::info("re-attached container {} completed: status {}", e.snap.id.value(),
               e.snap.exit_status);
}

void ContainerRuntime::monitorOnce() {
  MutexLock lk(mu_);
  static const long hz = sysconf(_SC_CLK_TCK);
  TimePoint t = now();
  for (auto& [id, e] : containers_) {
    if (!e.snap.running || e.pid <= 0) continue;
    if (e.adopted) {
      if (procStartTime(e.pid) != e.proc_start) {
        completeAdopted(e);
        continue;
      }
    } else {
      int st = 0;
      pid_t r = waitpid(e.pid, &st, WNOHANG);
      if (r == e.pid) {
        complete(e, st);
        continue;
      }
    }
    int64_t rss = 0;
    uint64_t ticks = 0;
    sampleSession(e.pid, &rss, &ticks);
    double secs = std::chrono::duration<double>(t - e.last_sample).count();
    if (secs > 0 && e.last_cpu_ticks > 0 && ticks >= e.last_cpu_ticks) {
      e.snap.cpu_vcores =
          static_cast<double>(ticks - e.last_cpu_ticks) / static_cast<double>(hz) / secs;
    }
    e.last_cpu_ticks = ticks;
    e.last_sample = t;
    e.snap.rss_mib = rss;
    int64_t limit = e.snap.resource.memoryMib();
    if (limit > 0 && rss > limit && e.snap.reason == ExitReason::kNone) {
      e.snap.reason = ExitReason::kMemoryExceeded;
      e.snap.diagnostics = "container " + id.value() + " killed: memory " + std::to_string(rss) +
                           " MiB exceeded its limit of " + std::to_string(limit) + " MiB";
      spdlog::warn("{}", e.snap.diagnostics);
      // The verdict survives an NM restart before the reap.
      if (!persist(e)) spdlog::warn("cannot record the memory verdict of {}", id.value());
      metrics_.memory_killed.inc();
      signalSession(e.pid, SIGKILL, true);
      continue;
    }
    // Repeated every pass until the launcher reaps the command: a process
    // forked while the session was being scanned is caught by the next one.
    if ((e.stopping && t >= e.kill_at) || e.snap.reason == ExitReason::kMemoryExceeded) {
      signalSession(e.pid, SIGKILL, true);
    }
  }
}

Status ContainerRuntime::stop(const ContainerId& id, ExitReason reason, const std::string& why) {
  MutexLock lk(mu_);
  auto it = containers_.find(id);
  if (it == containers_.end()) return notFound("container " + id.value() + " is not on this node");
  Entry& e = it->second;
  if (!e.snap.running || e.stopping) return Status::ok();
  e.stopping = true;
  e.stop_reason = reason;
  e.stop_why = why;
  e.kill_at = now() + grace_;
  // A restarted NM keeps the reason and the SIGKILL deadline.
  if (!persist(e)) spdlog::warn("cannot record the stop of container {}", id.value());
  terminate(e);
  spdlog::info("stopping container {}: {}", id.value(), why);
  return Status::ok();
}

void ContainerRuntime::terminate(const Entry& e) const {
  if (grace_.count() <= 0) {
    signalSession(e.pid, SIGKILL, true);
  } else {
    // Records of the former /bin/sh wrapper have no group: its trap kept the
    // shell alive through a SIGTERM to the session's group.
    kill(e.group > 0 ? -e.group : -e.pid, SIGTERM);
  }
}

void ContainerRuntime::stopAll(ExitReason reason, const std::string& why) {
  std::vector<ContainerId> ids;
  {
    MutexLock lk(mu_);
    for (const auto& [id, e] : containers_) {
      if (e.snap.running) ids.push_back(id);
    }
  }
  for (const auto& id : ids) {
    MORPHEUS_IGNORE_NOT_FOUND(stop(id, reason, why), "it ended after the list was taken");
  }
}

std::vector<ContainerSnapshot> ContainerRuntime::snapshot() const {
  MutexLock lk(mu_);
  std::vector<ContainerSnapshot> out;
  for (const auto& [_, e] : containers_) {
    out.push_back(e.snap);
    out.back().session = e.snap.running && e.pid > 0 ? e.pid : 0;
  }
  return out;
}

std::optional<ContainerSnapshot> ContainerRuntime::get(const ContainerId& id) const {
  MutexLock lk(mu_);
  auto it = containers_.find(id);
  if (it == containers_.end()) return std::nullopt;
  ContainerSnapshot s = it->second.snap;
  s.session = s.running && it->second.pid > 0 ? it->second.pid : 0;
  return s;
}

void ContainerRuntime::acknowledge(const std::vector<ContainerId>& ids) {
  MutexLock lk(mu_);
  for (const auto& id : ids) {
    auto it = containers_.find(id);
    if (it != containers_.end() && !it->second.snap.running) {
      // The RM has recorded the completion: forget it (logs stay in the dir).
      std::error_code ec;
      std::filesystem::rename(it->second.snap.work_dir + "/container.json",
                              it->second.snap.work_dir + "/container.acked.json", ec);
      containers_.erase(it);
    }
  }
}

Result<AppId> ContainerRuntime::appOf(const ContainerId& id) const {
  MORPHEUS_RETURN_IF_ERROR(validateContainerId(id.value()));
  {
    MutexLock lk(mu_);
    if (auto it = containers_.find(id); it != containers_.end()) return it->second.snap.app;
  }
  std::string dir = local_dir_ + "/containers/" + id.value();
  for (const char* name : {"/container.acked.json", "/container.json"}) {
    std::ifstream f(dir + name);
    if (!f) continue;
    auto j = nlohmann::json::parse(f, nullptr, false);
    if (!j.is_discarded() && j.is_object() && j.contains("app") && j["app"].is_string())
      return AppId(j["app"].get<std::string>());
  }
  return notFound("container " + id.value() + " is not on this node");
}

Result<std::string> ContainerRuntime::logs(const ContainerId& id, const std::string& stream,
                                           size_t max_bytes) const {
  MORPHEUS_RETURN_IF_ERROR(validateContainerId(id.value()));
  if (stream != "stdout" && stream != "stderr")
    return invalidArgument("stream", "must be stdout or stderr");
  std::string dir;
  {
    MutexLock lk(mu_);
    auto it = containers_.find(id);
    dir = it != containers_.end() ? it->second.snap.work_dir
                                  : local_dir_ + "/containers/" + id.value();
  }
  if (!std::filesystem::exists(dir))
    return notFound("container " + id.value() + " is not on this node");
  if (std::filesystem::exists(dir + "/" + kLogsRemovedMarker))
    return notFound("the logs of container " + id.value() +
                    " were removed: older than nm.log-retention");
  return tail(dir + "/" + stream, max_bytes == 0 ? 65536 : max_bytes);
}

bool ContainerRuntime::claimForRemoval(const ContainerId& id) {
  MutexLock lk(mu_);
  if (launching_.count(id) || removing_.count(id)) return false;
  if (auto it = containers_.find(id); it != containers_.end() && it->second.snap.running)
    return false;
  removing_.insert(id);
  return true;
}

void ContainerRuntime::releaseRemoval(const ContainerId& id) {
  MutexLock lk(mu_);
  removing_.erase(id);
}

}  // namespace morpheus::nm
