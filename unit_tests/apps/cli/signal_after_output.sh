#!/bin/bash
# signal_after_output.sh SIGNAL PATTERN LOG COMMAND...: runs COMMAND with its output in LOG,
# sends SIGNAL to COMMAND's process once LOG holds PATTERN (say a progress line, so the signal
# lands while training), waits and exits with COMMAND's status. Exits 124 (COMMAND killed)
# when PATTERN has not appeared within 120 s, 125 when COMMAND ended before it did.
sig=$1 pattern=$2 log=$3
shift 3
"$@" > "$log" 2>&1 &
pid=$!
for ((i = 0; i < 1200; ++i)); do
  if grep -q -- "$pattern" "$log"; then
    kill -s "$sig" "$pid"
    wait "$pid"
    exit $?
  fi
  if ! kill -0 "$pid" 2> /dev/null; then
    wait "$pid"
    echo "signal_after_output.sh: the command ended (status $?) before printing '$pattern'" >> "$log"
    exit 125
  fi
  sleep 0.1
done
kill -s KILL "$pid"
wait "$pid"
exit 124
