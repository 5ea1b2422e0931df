// Lists of peer addresses (docs/design/ha.md): "host:port,host:port"
// names every RM of an active/standby pair, or every member of an etcd
// cluster. RM clients keep one channel per RM and follow the active one per
// call (common/rm_failover.h): a standby RM listens too, so a channel over
// the whole list would stick to it. grpcTargetForList's one channel over all
// peers suits etcd, whose every member serves.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"

namespace morpheus {

// Splits a comma-separated list into trimmed entries; an "http://" prefix is
// dropped (etcd endpoints are written as URLs). INVALID_ARGUMENT naming
// `field` for an empty list or entry, or an entry without ":port".
Result<std::vector<std::string>> splitAddressList(const std::string& list,
                                                  const std::string& field);

// The gRPC channel target for `list`: a single address is returned unchanged
// (the resolver handles names); several are resolved (getaddrinfo, first
// result each) into one "ipv4:a:p,b:p" (or "ipv6:") target, whose pick_first
// policy connects to the first reachable peer and moves on when it drops.
// INVALID_ARGUMENT naming `field` for a bad list, an unresolvable host or a
// list mixing IPv4 and IPv6 peers.
Result<std::string> grpcTargetForList(const std::string& list, const std::string& field);

}  // namespace morpheus
