#include "nodemanager/log_retention.h"

#include <dirent.h>
#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <vector>

#include "common/token.h"

namespace morpheus::nm {

namespace {

constexpr const char* kRecords[] = {"container.acked.json", "container.json"};

// The names in the directory `fd` (without "." and ".."); the fd stays open.
std::vector<std::string> entriesOf(int fd) {
  std::vector<std::string> out;
  int dup_fd = ::dup(fd);
  if (dup_fd < 0) return out;
  DIR* d = ::fdopendir(dup_fd);
  if (d == nullptr) {
    ::close(dup_fd);
    return out;
  }
  while (dirent* e = ::readdir(d)) {
    std::string name = e->d_name;
    if (name != "." && name != "..") out.push_back(std::move(name));
  }
  ::closedir(d);
  return out;
}

// Removes `name` in the directory `parent` and, for a directory, everything
// below it, never following a symbolic link (a link is removed, not its
// target: openat with O_NOFOLLOW fails on one swapped in after the check).
// False when something stayed.
bool removeTreeAt(int parent, const std::string& name, int depth) {
  struct stat st {};
  if (::fstatat(parent, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return errno == ENOENT;
  if (!S_ISDIR(st.st_mode)) return ::unlinkat(parent, name.c_str(), 0) == 0 || errno == ENOENT;
  if (depth >= LogRetention::kMaxDepth) return false;
  int fd = ::openat(parent, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return false;
  bool ok = true;
  for (const auto& child : entriesOf(fd)) ok = removeTreeAt(fd, child, depth + 1) && ok;
  ::close(fd);
  return ::unlinkat(parent, name.c_str(), AT_REMOVEDIR) == 0 || errno == ENOENT;
}

// The record of the container in `dir` (parsed JSON object), if any; a
// record that does not parse is returned as a discarded value.
std::optional<nlohmann::json> readRecord(const std::string& dir) {
  for (const char* name : kRecords) {
    std::ifstream f(dir + "/" + name);
    if (!f) continue;
    return nlohmann::json::parse(f, nullptr, false);
  }
  return std::nullopt;
}

}  // namespace

Millis LogRetention::interval() const {
  return std::clamp(retention_, Millis(1000), Millis(600000));
}

LogRetention::Action LogRetention::decide(const std::string& dir, TimePoint now) const {
  auto rec = readRecord(dir);
  if (!rec) {
    struct stat st {};
    if (::lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return Action::kKeep;
    TimePoint mtime =
        fromEpochMs(static_cast<int64_t>(st.st_mtim.tv_sec) * 1000 + st.st_mtim.tv_nsec / 1000000);
    return now - mtime >= retention_ ? Action::kRemoveAll : Action::kKeep;
  }
  // Not completed (or unreadable): the container may still run.
  if (rec->is_discarded() || !rec->is_object() || !rec->contains("completed")) return Action::kKeep;
  const auto& done = (*rec)["completed"];
  if (!done.is_object() || !done.contains("end_ms") || !done["end_ms"].is_number_integer())
    return Action::kKeep;
  if (now - fromEpochMs(done["end_ms"].get<int64_t>()) < retention_) return Action::kKeep;
  int64_t token_expires = 0;
  if (auto t = rec->find("token_expires_ms"); t != rec->end() && t->is_number_integer())
    token_expires = t->get<int64_t>();
  if (toEpochMs(now) >= token_expires) return Action::kRemoveAll;
  struct stat marker {};
  if (::lstat((dir + "/" + ContainerRuntime::kLogsRemovedMarker).c_str(), &marker) == 0)
    return Action::kKeep;
  return Action::kRemoveLogs;
}

LogRetention::Sweep LogRetention::sweepOnce() {
  Sweep out;
  const std::string root = runtime_.containersDir();
  int root_fd = ::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (root_fd < 0) {
    spdlog::warn("log retention: cannot open {}: {}", root, std::strerror(errno));
    return out;
  }
  const TimePoint now = clock_.now();
  for (const auto& name : entriesOf(root_fd)) {
    // Only container directories: never the NM's other files.
    if (!validateContainerId(name).isOk()) continue;
    const std::string dir = root + "/" + name;
    if (decide(dir, now) == Action::kKeep) {
      out.kept++;
      continue;
    }
    const ContainerId id(name);
    if (!runtime_.claimForRemoval(id)) {
      out.kept++;
      continue;
    }
    // Decided again under the claim: it may have been launched and ended
    // meanwhile.
    const Action action = decide(dir, now);
    bool ok = true;
    if (action == Action::kRemoveAll) {
      ok = removeTreeAt(root_fd, name, 0);
      if (ok) out.dirs_removed++;
    } else if (action == Action::kRemoveLogs) {
      int fd = ::openat(root_fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      ok = fd >= 0;
      if (ok) {
        // The marker first: a concurrent log read says why rather than
        // returning what is left.
        int m = ::openat(fd, ContainerRuntime::kLogsRemovedMarker,
                         O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
        ok = m >= 0;
        if (m >= 0) ::close(m);
        for (const auto& child : entriesOf(fd)) {
          if (!ok) break;
          if (child == ContainerRuntime::kLogsRemovedMarker || child == kRecords[0] ||
              child == kRecords[1])
            continue;
          ok = removeTreeAt(fd, child, 1) && ok;
        }
        ::close(fd);
      }
      if (ok) out.logs_removed++;
    } else {
      out.kept++;
    }
    if (!ok) {
      out.failed++;
      spdlog::warn("log retention: could not remove everything of {}", dir);
    }
    runtime_.releaseRemoval(id);
  }
  ::close(root_fd);
  if (out.logs_removed + out.dirs_removed > 0) {
    spdlog::info(
        "log retention: removed the logs of {} container(s) and {} container dir(s) older "
        "than nm.log-retention ({} ms)",
        out.logs_removed, out.dirs_removed, retention_.count());
  }
  return out;
}

void LogRetention::start() {
  if (retention_.count() <= 0) return;
  thread_ = std::thread([this] {
    MutexLock lk(mu_);
    while (!stopping_) {
      lk.unlock();
      sweepOnce();
      lk.lock();
      cv_.waitFor(mu_, interval(), [this]() REQUIRES(mu_) { return stopping_; });
    }
  });
}

void LogRetention::stop() {
  {
    MutexLock lk(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

}  // namespace morpheus::nm
