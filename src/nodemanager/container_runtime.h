// Containers as real processes (docs/design/architecture.md): each
// container is a process started in its own session (so its whole tree can be
// signalled). Its directory <local-dir>/containers/<id>/ is the NM's (mode
// 0711 when containers run as their submitters' accounts, else 0700): it holds
// the NM's record, the launcher's pgid and exit_status, the stdout and stderr
// the command writes through inherited descriptors, the AM token file
// (am_token, mode 0400, owned by the container's account) and, for an AM
// under TLS, the cluster's CA bundle (tls-ca.pem, mode 0444). The command's
// working dir and HOME is <id>/work, owned by the container's account, mode
// 0700 (see RunAsPolicy for which account). A monitor thread reaps exits, samples the tree's RSS
// and CPU from /proc every interval, and kills a container whose tree exceeds its allocated memory
// (the diagnostic names the limit). The kernel enforces the limit too: a cgroup v2 memory.max per
// container where the hierarchy allows, else rlimits (see setMemoryEnforcement).
//
// Crash safety: each container's record (pid, /proc start time, allocation)
// is written durably to its dir before launch() returns, and the command runs
// under morpheus-container-launch (launch_main.cc), which writes its exit
// status to the dir; a restarted NM re-attaches from these records (init()).
//
// Signals: the launcher is the session leader and runs the command in a
// process group of its own. SIGTERM goes to that group only (so the launcher
// survives it without a trap that could swallow it); SIGKILL goes to every
// process of the session, the launcher last.
//
// Thread-safety: internally locked.
#pragma once

#include <sys/types.h>

#include <condition_variable>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "common/ids.h"
#include "common/metrics.h"
#include "common/mutex.h"
#include "common/resource.h"
#include "common/status.h"
#include "nodemanager/nm_metrics.h"
#include "nodemanager/run_as.h"

namespace morpheus::nm {

// Mirrors v1::ContainerExitReason.
enum class ExitReason {
  kNone = 0,
  kSuccess = 1,
  kFailure = 2,
  kKilled = 3,
  kPreempted = 4,
  kMemoryExceeded = 5,
  kNodeLost = 6,
  kLaunchFailed = 7
};

struct LaunchSpec {
  ContainerId id;
  AppId app;
  Resource resource;
  std::string command;  // PATH lookup or absolute
  std::vector<std::string> args;
  std::map<std::string, std::string> env;
  // The submitting user, from the container token (RunAsPolicy::accountFor).
  std::string user;
  // An AM token: written to <dir>/am_token, readable only by the container's
  // account, and named by MORPHEUS_AM_TOKEN_FILE; never in the environment.
  std::string am_token;
  // The CA bundle (PEM, public) an AM verifies the RM and NMs with under TLS:
  // written to <dir>/tls-ca.pem (mode 0444) and named by MORPHEUS_TLS_CA.
  // "" = none.
  std::string tls_ca_pem;
  // When the container token it was started with expires (epoch 0 = not
  // known): recorded so that LogRetention keeps the record, which refuses a
  // replayed token, at least until then.
  TimePoint token_expires;
};

struct ContainerSnapshot {
  ContainerId id;
  AppId app;
  Resource resource;
  bool running = false;
  int exit_status = 0;  // exit code or 128+signal, when complete
  ExitReason reason = ExitReason::kNone;
  std::string diagnostics;
  int64_t rss_mib = 0;
  double cpu_vcores = 0;
  TimePoint start, end;
  std::string work_dir;
  int session = 0;  // session id of its processes while running (0 = none)
};

// The processes of session `sid` (from /proc), e.g. a container's (the
// harvesting cgroup v1 CPU throttle moves them into its cgroup).
std::vector<int> sessionProcesses(int sid);

// Writes `text` to a cgroup control file in one write(2), as the kernel's
// control files need; a regular file (tests' fake hierarchies) is created or
// replaced. False on any failure.
bool writeControlFile(const std::string& path, const std::string& text);

// The cgroup v2 path of a process ("/system.slice/morpheus-nm.service")
// from the text of /proc/<pid>/cgroup (its "0::<path>" line). INVALID_ARGUMENT
// naming nm.cgroup-parent when there is no cgroup v2 line.
Result<std::string> ownCgroupPath(const std::string& proc_cgroup_text);
// ownCgroupPath of this process (/proc/self/cgroup).
Result<std::string> readOwnCgroupPath();

class ContainerRuntime {
 public:
  ContainerRuntime(std::string local_dir, Millis monitor_interval, Millis kill_grace,
                   MetricsRegistry& metrics);

  // The exit-status wrapper binary; default: morpheus-container-launch next
  // to the running executable. init() fails if it is not executable.
  void setLauncher(std::string path) { launcher_ = std::move(path); }
  // Which account each container runs as (default: the NM's own). Call
  // before init().
  void setRunAs(RunAsPolicy policy) { run_as_ = std::move(policy); }

  // Memory enforcement: "auto" uses cgroup v2 (a cgroup per
  // container with memory.max = its allocation) when `cgroup_root` is a
  // writable cgroup v2 hierarchy offering the memory controller, otherwise
  // rlimits (RLIMIT_AS at 8x the allocation + 2 GiB as a runaway guard, no
  // core dumps) plus monitoring; "cgroup" and "monitor" force one. Call
  // before init().
  void setMemoryEnforcement(std::string mode, std::string cgroup_root);
  // Where container cgroups go. Without a call (or with ""): the
  // NM creates <cgroup_root>/morpheus-nm and enables the memory controller in
  // the root's cgroup.subtree_control. With `own_cgroup` (the NM's cgroup
  // relative to the mount, from /proc/self/cgroup: ownCgroupPath) the NM owns
  // that subtree (systemd Delegate=yes, or a cgroup namespace) and never
  // writes above it: cgroup v2 allows no processes in a cgroup that hands
  // controllers down, so init() moves this process into <own>/supervisor,
  // enables memory in <own> and puts containers under <own>/containers.
  // Call before init().
  void setDelegatedCgroup(std::string own_cgroup) { own_cgroup_ = std::move(own_cgroup); }
  bool usingCgroups() const { return !cgroup_parent_.empty(); }
  // The directory container cgroups are created in; "" without cgroups.
  const std::string& cgroupParent() const { return cgroup_parent_; }
  ~ContainerRuntime();

  // Creates <local-dir>/containers; FAILED_PRECONDITION naming nm.local-dir if
  // unusable. Re-attaches to the containers a previous NM process left
  // running (their records are in the container dirs); those that ended
  // meanwhile are reported complete with the exit status they recorded.
  Status init();
  void start();     // monitor thread
  void shutdown();  // stops monitoring; running containers are left alone

  // ALREADY_EXISTS for a known id, also one acknowledged and forgotten (a
  // replayed container token runs nothing twice); INVALID_ARGUMENT naming container_id for an
  // id that is not a container id (validateContainerId: it names a directory);
  // PERMISSION_DENIED when spec.user has no account to run as here (nothing
  // is created then).
  // A command that cannot be executed yields a completed container with
  // kLaunchFailed (and an error here).
  Status launch(const LaunchSpec& spec);
  // SIGTERM to the tree, SIGKILL after the grace period. No-op when done.
  Status stop(const ContainerId& id, ExitReason reason, const std::string& why);
  void stopAll(ExitReason reason, const std::string& why);

  std::vector<ContainerSnapshot> snapshot() const;
  std::optional<ContainerSnapshot> get(const ContainerId& id) const;
  // Completed containers the RM has recorded are forgotten; their dirs keep
  // the logs and the record (renamed container.acked.json, which init() does
  // not re-attach from) so appOf still answers for them, also after an NM
  // restart, until LogRetention (log_retention.h) removes them.
  void acknowledge(const std::vector<ContainerId>& ids);
  // The application `id` belongs to, from memory or its record on disk.
  // INVALID_ARGUMENT for a malformed id, NOT_FOUND when the node has no
  // record of it.
  Result<AppId> appOf(const ContainerId& id) const;
  // Tail of stdout/stderr, also of a container no longer in memory (its
  // directory is read). INVALID_ARGUMENT for a malformed id or stream;
  // NOT_FOUND when the node has no directory of it, or its logs were removed
  // (LogRetention left the marker kLogsRemovedMarker).
  Result<std::string> logs(const ContainerId& id, const std::string& stream,
                           size_t max_bytes) const;

  // For the log sweep (LogRetention): takes container `id`'s directory for
  // removal. False, and nothing taken, while the container runs here or is
  // being launched; while taken, launch() of that id fails with UNAVAILABLE.
  // releaseRemoval ends it.
  bool claimForRemoval(const ContainerId& id);
  void releaseRemoval(const ContainerId& id);
  // <local-dir>/containers.
  std::string containersDir() const { return local_dir_ + "/containers"; }
  // The file LogRetention leaves in a container dir whose logs it removed.
  static constexpr const char* kLogsRemovedMarker = "logs.removed";

  // Runs one monitor pass (also called by the thread).
  void monitorOnce();

 private:
  struct Entry {
    ContainerSnapshot snap;
    pid_t pid = -1;    // the launcher: session leader, our child unless adopted
    pid_t group = -1;  // the command's process group; -1 = none known (SIGTERM the session's)
    bool stopping = false;
    TimePoint kill_at;
    ExitReason stop_reason = ExitReason::kKilled;
    std::string stop_why;
    uint64_t last_cpu_ticks = 0;
    TimePoint last_sample;
    uint64_t proc_start = 0;  // /proc start time of pid (pid-reuse guard)
    bool adopted = false;     // re-attached after an NM restart: not our child
    std::string run_as;       // the local account it runs as ("" = the NM's)
    TimePoint token_expires;  // LaunchSpec::token_expires
  };
  void completeAdopted(Entry& e) REQUIRES(mu_);
  void complete(Entry& e, int wait_status) REQUIRES(mu_);
  // Cgroup clean-up and the kernel's OOM verdict, for either completion path.
  void finishCgroup(Entry& e) REQUIRES(mu_);
  // Rewrites <work_dir>/container.json (temp + fsync + rename): allocation,
  // pid and /proc start time, a pending stop or memory verdict, and the
  // completed status once done, so a restarted NM reports what this one knew.
  // Touches only `e` and its files: an entry of containers_ needs mu_ held, a
  // local one not yet inserted does not (so no REQUIRES: the analysis cannot
  // tell the two apart).
  bool persist(const Entry& e) const;

  // Prepares the directory container cgroups go in (see setDelegatedCgroup);
  // the error says why cgroups cannot be used.
  Result<std::string> cgroupParentBelowRoot() const;
  Result<std::string> cgroupParentBelowOwn() const;

  // Gives <local-dir>/containers the owner and mode the run-as mode needs,
  // and checks that containers of other accounts can reach their dirs.
  Status prepareContainersRoot() const;

  // SIGTERM to the command's group (e.group), or SIGKILL to the session.
  void terminate(const Entry& e) const;
  const std::string local_dir_;
  std::string containers_root_;  // canonical <local-dir>/containers, set by init()
  RunAsPolicy run_as_;
  std::string launcher_;
  std::string enforcement_ = "auto";
  std::string cgroup_root_ = "/sys/fs/cgroup";
  std::string own_cgroup_;     // setDelegatedCgroup; "" = not delegated
  std::string cgroup_parent_;  // where container cgroups go when cgroups are used
  const Millis interval_;
  const Millis grace_;
  ContainerMetrics metrics_;

  mutable Mutex mu_;
  CondVar cv_;
  std::map<ContainerId, Entry> containers_ GUARDED_BY(mu_);
  std::set<ContainerId> launching_ GUARDED_BY(mu_);  // launch() under way
  std::set<ContainerId> removing_ GUARDED_BY(mu_);   // claimForRemoval taken
  bool stopping_ GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace morpheus::nm
