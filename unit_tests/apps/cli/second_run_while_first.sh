#!/bin/bash
# second_run_while_first.sh DIR PATTERN -- FIRST... -- SECOND...: starts FIRST (output in
# DIR/first.log), runs SECOND to its end (output in DIR/second.log) once the first log holds
# PATTERN, then sends SIGUSR1 to FIRST (a preemption: it checkpoints and ends). Writes
# DIR/first.status and DIR/second.status; exits 124 when PATTERN never came (120 s).
dir=$1 pattern=$2
shift 3
first=()
while [ "$1" != "--" ]; do
  first+=("$1")
  shift
done
shift
"${first[@]}" > "$dir/first.log" 2>&1 &
pid=$!
for ((i = 0; i < 1200; ++i)); do
  grep -q -- "$pattern" "$dir/first.log" && break
  kill -0 "$pid" 2> /dev/null || break
  sleep 0.1
done
if ! grep -q -- "$pattern" "$dir/first.log"; then
  kill -s KILL "$pid" 2> /dev/null
  wait "$pid"
  exit 124
fi
"$@" > "$dir/second.log" 2>&1
echo $? > "$dir/second.status"
kill -s USR1 "$pid"
wait "$pid"
echo $? > "$dir/first.status"
