#include "nodemanager/run_as.h"

#include <pwd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

namespace morpheus::nm {

bool validAccountName(const std::string& name) {
  if (name.empty() || name.size() > 32) return false;
  auto lower = [](char c) { return c >= 'a' && c <= 'z'; };
  if (!lower(name[0]) && name[0] != '_') return false;
  return std::all_of(name.begin(), name.end(), [&](char c) {
    return lower(c) || (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-';
  });
}

Result<RunAsAccount> lookupAccount(const std::string& name) {
  long size = sysconf(_SC_GETPW_R_SIZE_MAX);
  std::vector<char> buf(static_cast<size_t>(size > 0 ? size : 16384));
  struct passwd pw {};
  struct passwd* found = nullptr;
  int rc = 0;
  while ((rc = getpwnam_r(name.c_str(), &pw, buf.data(), buf.size(), &found)) == ERANGE) {
    buf.resize(buf.size() * 2);
  }
  if (rc != 0 || found == nullptr) {
    return notFound("no local account '" + name + "' on this node" +
                    (rc != 0 ? std::string(" (") + std::strerror(rc) + ")" : ""));
  }
  return RunAsAccount{name, pw.pw_uid, pw.pw_gid};
}

Result<RunAsPolicy> RunAsPolicy::make(const RunAsOptions& o, uid_t euid) {
  RunAsPolicy p;
  p.euid_ = euid;
  p.min_uid_ = o.min_uid;
  p.same_name_ = o.same_name;
  if (o.mode == "auto") {
    p.mapped_ = euid == 0;
  } else if (o.mode == "mapped") {
    p.mapped_ = true;
  } else if (o.mode == "nm-user") {
    p.mapped_ = false;
  } else {
    return invalidArgument("nm.run-as", "'" + o.mode + "': expected auto, mapped or nm-user");
  }
  if (o.min_uid < 1) {
    return invalidArgument("nm.run-as-min-uid", "must be at least 1 (no container runs as root)");
  }
  for (const auto& [submitter, account] : o.user_map) {
    if (submitter.empty()) return invalidArgument("nm.run-as-map", "an entry has no submitter");
    if (!validAccountName(account)) {
      return invalidArgument("nm.run-as-map." + submitter,
                             "'" + account +
                                 "' is not a local account name ([a-z_][a-z0-9_.-]*, "
                                 "at most 32 characters)");
    }
  }
  p.map_ = o.user_map;
  if (p.mapped_ && euid != 0) {
    return infeasible(
        "nm.run-as: mapped: the NM must run as root to start each container as its submitter's "
        "account (it runs as uid " +
        std::to_string(euid) + "); use nm.run-as: nm-user on a single-user machine");
  }
  if (!p.mapped_ && euid == 0 && !o.allow_root) {
    return infeasible(
        "nm.run-as: nm-user: the NM runs as root, so every container would run as root and "
        "could read every other container's files and tokens; use nm.run-as: mapped (the "
        "default as root), or set nm.allow-root-containers: true for a throw-away single-user "
        "machine");
  }
  return p;
}

std::string RunAsPolicy::describe() const {
  if (!mapped_) {
    return euid_ == 0 ? "as root (nm.run-as: nm-user, nm.allow-root-containers: true)"
                      : "as the NM's own account, uid " + std::to_string(euid_) +
                            " (nm.run-as: nm-user: no isolation between users)";
  }
  std::string out = "as each submitter's local account (nm.run-as: mapped, " +
                    std::to_string(map_.size()) + " mapped submitter(s)" +
                    (same_name_ ? ", others by the same name" : ", others refused") +
                    ", uid >= " + std::to_string(min_uid_) + ")";
  return out;
}

Result<RunAsAccount> RunAsPolicy::accountFor(const std::string& submitter) const {
  if (!mapped_) return RunAsAccount{"", euid_, getegid()};
  if (submitter.empty()) {
    return permissionDenied(
        "the container token names no submitting user; this node runs containers only as their "
        "submitters' accounts (nm.run-as: mapped)");
  }
  std::string account;
  if (auto it = map_.find(submitter); it != map_.end()) {
    account = it->second;
  } else if (same_name_ && validAccountName(submitter)) {
    account = submitter;
  } else {
    return permissionDenied("user '" + submitter +
                            "' has no local account on this node (nm.run-as-map" +
                            (same_name_ ? ", or an account of the same name)" : ")"));
  }
  auto acct = lookupAccount(account);
  if (!acct.isOk()) {
    return permissionDenied("user '" + submitter + "': " + acct.status().message());
  }
  if (acct->uid == 0 || static_cast<int64_t>(acct->uid) < min_uid_) {
    return permissionDenied("user '" + submitter + "' maps to local account '" + account +
                            "' (uid " + std::to_string(acct->uid) + "), below nm.run-as-min-uid " +
                            std::to_string(min_uid_));
  }
  return acct;
}

}  // namespace morpheus::nm
