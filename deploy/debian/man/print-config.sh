#!/bin/sh
# Prints a help2man include with a CONFIGURATION section made from
# `DAEMON --print-config` (every option, its meaning and default), for
# debian/rules. Usage: print-config.sh DAEMON_BINARY
set -e
"$1" --print-config | awk '
  function roff(s) { gsub(/\\/, "\\e", s); sub(/^[.'"'"']/, "\\\\\\&&", s); return s }
  BEGIN { print "[CONFIGURATION]"; first = 1 }
  /^# / && first { print roff(substr($0, 3)); print "Every key, its meaning and its default:"; first = 0; next }
  /^# / { help = help (help == "" ? "" : " ") substr($0, 3); next }
  /^[^#]/ {
    key = $0; sub(/: .*/, "", key); val = $0; sub(/^[^:]*: /, "", val)
    print ".TP"; print "\\fB" roff(key) "\\fR: " roff(val); print roff(help); help = ""
  }'
