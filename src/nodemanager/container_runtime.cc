#include "nodemanager/container_runtime.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace morpheus::nm {

namespace {

TimePoint now() {
  return std::chrono::time_point_cast<Millis>(std::chrono::system_clock::now());
}

// Sum of RSS (MiB) and CPU ticks over every process in session `sid`.
void sampleSession(pid_t sid, int64_t* rss_mib, uint64_t* cpu_ticks) {
  *rss_mib = 0;
  *cpu_ticks = 0;
  static const long page = sysconf(_SC_PAGESIZE);
  DIR* d = opendir("/proc");
  if (!d) return;
  int64_t rss_pages = 0;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    std::ifstream f(std::string("/proc/") + e->d_name + "/stat");
    std::string line;
    if (!std::getline(f, line)) continue;
    auto rp = line.rfind(')');
    if (rp == std::string::npos) continue;
    std::istringstream in(line.substr(rp + 2));
    // Fields after the command: state(3) ppid pgrp session tty tpgid flags minflt cminflt majflt
    // cmajflt utime(14) stime(15) cutime cstime priority nice threads itreal starttime vsize rss(24)
    std::string state;
    long long ppid, pgrp, session, tty, tpgid;
    unsigned long long flags, minflt, cminflt, majflt, cmajflt, utime, stime;
    long long cutime, cstime, prio, nice, threads, itreal;
    unsigned long long starttime, vsize;
    long long rss;
    in >> state >> ppid >> pgrp >> session >> tty >> tpgid >> flags >> minflt >> cminflt >> majflt >> cmajflt >>
        utime >> stime >> cutime >> cstime >> prio >> nice >> threads >> itreal >> starttime >> vsize >> rss;
    if (!in || session != sid || state == "Z") continue;
    rss_pages += rss;
    *cpu_ticks += utime + stime;
  }
  closedir(d);
  *rss_mib = rss_pages * page / (1024 * 1024);
}

std::string tail(const std::string& path, size_t max_bytes) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return "";
  f.seekg(0, std::ios::end);
  auto size = static_cast<size_t>(f.tellg());
  size_t from = size > max_bytes ? size - max_bytes : 0;
  f.seekg(static_cast<std::streamoff>(from));
  std::string out(size - from, '\0');
  f.read(out.data(), static_cast<std::streamsize>(out.size()));
  return out;
}

}  // namespace

ContainerRuntime::ContainerRuntime(std::string local_dir, Millis monitor_interval, Millis kill_grace,
                                   MetricsRegistry& metrics)
    : local_dir_(std::move(local_dir)), interval_(monitor_interval), grace_(kill_grace), metrics_(metrics) {}

ContainerRuntime::~ContainerRuntime() { shutdown(); }

Status ContainerRuntime::init() {
  std::error_code ec;
  std::filesystem::create_directories(local_dir_ + "/containers", ec);
  if (ec) return infeasible("nm.local-dir: cannot create " + local_dir_ + "/containers: " + ec.message());
  std::string probe = local_dir_ + "/containers/.probe";
  {
    std::ofstream f(probe);
    if (!(f << "x")) return infeasible("nm.local-dir: " + local_dir_ + " is not writable");
  }
  std::filesystem::remove(probe, ec);
  spdlog::info("containers run under {}; memory enforced by monitoring every {} ms", local_dir_,
               interval_.count());
  return Status::ok();
}

void ContainerRuntime::start() {
  thread_ = std::thread([this] {
    std::unique_lock<std::mutex> lk(mu_);
    while (!stopping_) {
      lk.unlock();
      monitorOnce();
      lk.lock();
      cv_.wait_for(lk, interval_, [this] { return stopping_; });
    }
  });
}

void ContainerRuntime::shutdown() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

Status ContainerRuntime::launch(const LaunchSpec& spec) {
  if (spec.id.empty()) return invalidArgument("container_id", "is required");
  if (spec.command.empty()) return invalidArgument("launch_context.command", "is required");
  std::string dir = local_dir_ + "/containers/" + spec.id.value();
  {
    std::lock_guard<std::mutex> lk(mu_);
    if (containers_.count(spec.id)) return alreadyExists("container " + spec.id.value() + " already exists");
  }
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return unavailable("cannot create " + dir + ": " + ec.message());

  // argv/envp prepared before fork (no allocation in the child).
  std::vector<std::string> argv_s = {spec.command};
  argv_s.insert(argv_s.end(), spec.args.begin(), spec.args.end());
  std::map<std::string, std::string> env = {
      {"PATH", "/usr/local/bin:/usr/bin:/bin"}, {"HOME", dir}, {"PWD", dir},
      {"MORPHEUS_CONTAINER_ID", spec.id.value()}, {"MORPHEUS_APP_ID", spec.app.value()},
      {"MORPHEUS_CONTAINER_MEMORY_MIB", std::to_string(spec.resource.memoryMib())},
      {"MORPHEUS_CONTAINER_VCORES", std::to_string(spec.resource.vcores())}};
  for (const auto& [k, v] : spec.env) env[k] = v;
  std::vector<std::string> env_s;
  for (const auto& [k, v] : env) env_s.push_back(k + "=" + v);
  std::vector<char*> argv, envp;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  for (auto& e : env_s) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::string out_path = dir + "/stdout", err_path = dir + "/stderr";
  // The child reports an exec failure through a close-on-exec pipe.
  int pfd[2];
  if (pipe2(pfd, O_CLOEXEC) != 0) return unavailable(std::string("pipe: ") + std::strerror(errno));
  std::string path_env = env["PATH"];
  pid_t pid = fork();
  if (pid < 0) {
    close(pfd[0]);
    close(pfd[1]);
    return unavailable(std::string("fork: ") + std::strerror(errno));
  }
  if (pid == 0) {
    setsid();
    int fd0 = open("/dev/null", O_RDONLY);
    int fd1 = open(out_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    int fd2 = open(err_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd0 >= 0) dup2(fd0, 0);
    if (fd1 >= 0) dup2(fd1, 1);
    if (fd2 >= 0) dup2(fd2, 2);
    if (chdir(dir.c_str()) != 0) _exit(127);
    // execvpe looks the command up in the container's PATH.
    execvpe(argv[0], argv.data(), envp.data());
    int err = errno;
    (void)!write(pfd[1], &err, sizeof err);
    _exit(127);
  }
  close(pfd[1]);
  int child_errno = 0;
  ssize_t n = read(pfd[0], &child_errno, sizeof child_errno);
  close(pfd[0]);
  Entry e;
  e.snap.id = spec.id;
  e.snap.app = spec.app;
  e.snap.resource = spec.resource;
  e.snap.start = now();
  e.snap.work_dir = dir;
  e.pid = pid;
  e.last_sample = e.snap.start;
  std::lock_guard<std::mutex> lk(mu_);
  if (n == static_cast<ssize_t>(sizeof child_errno)) {
    int st = 0;
    waitpid(pid, &st, 0);
    e.pid = -1;
    e.snap.running = false;
    e.snap.exit_status = 127;
    e.snap.reason = ExitReason::kLaunchFailed;
    e.snap.diagnostics = "cannot execute '" + spec.command + "': " + std::strerror(child_errno);
    e.snap.end = now();
    containers_[spec.id] = e;
    metrics_.counter("morpheus_nm_containers_launch_failed_total", "Containers whose command could not run").inc();
    return infeasible(e.snap.diagnostics);
  }
  e.snap.running = true;
  containers_[spec.id] = e;
  metrics_.counter("morpheus_nm_containers_launched_total", "Containers launched").inc();
  spdlog::info("container {} of {} started: pid {}, {}", spec.id.value(), spec.app.value(), pid,
               spec.resource.toString());
  return Status::ok();
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
      if (e.snap.exit_status != 0) e.snap.diagnostics = "exited with status " + std::to_string(e.snap.exit_status);
    }
  }
  // Orphans of the container's session go with it.
  kill(-e.pid, SIGKILL);
  e.pid = -1;
  spdlog::info("container {} completed: status {}{}", e.snap.id.value(), e.snap.exit_status,
               e.snap.diagnostics.empty() ? "" : " (" + e.snap.diagnostics + ")");
  metrics_.counter("morpheus_nm_containers_completed_total", "Containers completed").inc();
}

void ContainerRuntime::monitorOnce() {
  std::lock_guard<std::mutex> lk(mu_);
  static const long hz = sysconf(_SC_CLK_TCK);
  TimePoint t = now();
  for (auto& [id, e] : containers_) {
    if (!e.snap.running || e.pid <= 0) continue;
    int st = 0;
    pid_t r = waitpid(e.pid, &st, WNOHANG);
    if (r == e.pid) {
      complete(e, st);
      continue;
    }
    int64_t rss = 0;
    uint64_t ticks = 0;
    sampleSession(e.pid, &rss, &ticks);
    double secs = std::chrono::duration<double>(t - e.last_sample).count();
    if (secs > 0 && e.last_cpu_ticks > 0 && ticks >= e.last_cpu_ticks) {
      e.snap.cpu_vcores = static_cast<double>(ticks - e.last_cpu_ticks) / static_cast<double>(hz) / secs;
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
      metrics_.counter("morpheus_nm_containers_memory_killed_total", "Containers killed over their memory").inc();
      kill(-e.pid, SIGKILL);
      continue;
    }
    if (e.stopping && t >= e.kill_at) kill(-e.pid, SIGKILL);
  }
}

Status ContainerRuntime::stop(const ContainerId& id, ExitReason reason, const std::string& why) {
  std::lock_guard<std::mutex> lk(mu_);
  auto it = containers_.find(id);
  if (it == containers_.end()) return notFound("container " + id.value() + " is not on this node");
  Entry& e = it->second;
  if (!e.snap.running || e.stopping) return Status::ok();
  e.stopping = true;
  e.stop_reason = reason;
  e.stop_why = why;
  e.kill_at = now() + grace_;
  kill(-e.pid, grace_.count() > 0 ? SIGTERM : SIGKILL);
  spdlog::info("stopping container {}: {}", id.value(), why);
  return Status::ok();
}

void ContainerRuntime::stopAll(ExitReason reason, const std::string& why) {
  std::vector<ContainerId> ids;
  {
    std::lock_guard<std::mutex> lk(mu_);
    for (const auto& [id, e] : containers_) {
      if (e.snap.running) ids.push_back(id);
    }
  }
  for (const auto& id : ids) (void)stop(id, reason, why);
}

std::vector<ContainerSnapshot> ContainerRuntime::snapshot() const {
  std::lock_guard<std::mutex> lk(mu_);
  std::vector<ContainerSnapshot> out;
  for (const auto& [_, e] : containers_) out.push_back(e.snap);
  return out;
}

std::optional<ContainerSnapshot> ContainerRuntime::get(const ContainerId& id) const {
  std::lock_guard<std::mutex> lk(mu_);
  auto it = containers_.find(id);
  if (it == containers_.end()) return std::nullopt;
  return it->second.snap;
}

void ContainerRuntime::acknowledge(const std::vector<ContainerId>& ids) {
  std::lock_guard<std::mutex> lk(mu_);
  for (const auto& id : ids) {
    auto it = containers_.find(id);
    if (it != containers_.end() && !it->second.snap.running) containers_.erase(it);
  }
}

Result<std::string> ContainerRuntime::logs(const ContainerId& id, const std::string& stream,
                                           size_t max_bytes) const {
  if (stream != "stdout" && stream != "stderr") return invalidArgument("stream", "must be stdout or stderr");
  std::string dir;
  {
    std::lock_guard<std::mutex> lk(mu_);
    auto it = containers_.find(id);
    dir = it != containers_.end() ? it->second.snap.work_dir : local_dir_ + "/containers/" + id.value();
  }
  if (!std::filesystem::exists(dir)) return notFound("container " + id.value() + " is not on this node");
  return tail(dir + "/" + stream, max_bytes == 0 ? 65536 : max_bytes);
}

}  // namespace morpheus::nm
