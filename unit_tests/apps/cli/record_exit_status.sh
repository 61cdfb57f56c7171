#!/bin/bash
# record_exit_status.sh DIR COMMAND...: runs COMMAND (one MPI rank of it) and writes its exit
# status to DIR/rank<world rank>, so a test can check how every rank ended, not only the first
# non-zero status mpirun passes on. A rank killed by MPI_Abort leaves no file.
dir=$1
shift
"$@"
status=$?
echo "$status" > "$dir/rank${OMPI_COMM_WORLD_RANK:-${PMI_RANK:-0}}"
exit $status
