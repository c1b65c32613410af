#!/usr/bin/env bash
# One long job across several device commands (each has a 10-minute limit; a machine stays warm between calls
# that follow each other closely, and a process in its own session outlives the command that started it).
#   bash scripts/detached_device.sh start DIR SECONDS JOB.sh [ARGS…]   start JOB.sh in a new session (once),
#                                                                       its output and files under DIR
#   bash scripts/detached_device.sh wait DIR SECONDS                    wait for it, up to SECONDS
# Either way, on return: DIR/progress.txt, the tail of DIR/job.log, DIR packed into $OUT/job.tgz and DIR's
# Markdown reports copied to $OUT (a call returns at most 8 files), then JOB-DONE or JOB-RUNNING. The job
# writes `DIR/done` last (this script does it after JOB.sh exits); a report the job checkpoints as it goes
# (`aka bench run` does, after every shape) survives a machine that is taken back before the end.
set -u
verb="${1:?start or wait}" dir="${2:?job directory}" seconds="${3:?seconds to wait}"
OUT="${OUT:?set OUT}"
if [ "$verb" = start ]; then
  shift 3
  [ -e "$dir/started" ] && { echo "a job already runs in $dir"; exit 2; }
  mkdir -p "$dir" && touch "$dir/started"
  setsid nohup bash -c 'bash "$@" > "$0/job.log" 2>&1; echo "exit $? at $(date -u +%H:%M:%S)" >> "$0/progress.txt"; touch "$0/done"' \
    "$dir" "$@" < /dev/null > /dev/null 2>&1 &
  sleep 2
elif [ "$verb" != wait ]; then
  echo "usage: detached_device.sh start|wait DIR SECONDS [JOB.sh ARGS…]"; exit 2
fi
end=$(( $(date +%s) + seconds ))
while [ ! -e "$dir/done" ] && [ "$(date +%s)" -lt "$end" ]; do sleep 5; done
cat "$dir/progress.txt" 2>/dev/null
tail -n 8 "$dir/job.log" 2>/dev/null
tar czf "$OUT/job.tgz" -C "$dir" . 2>/dev/null
find "$dir" -maxdepth 1 -name '*.md' -exec cp {} "$OUT/" \; 2>/dev/null
[ -e "$dir/done" ] && echo JOB-DONE || echo JOB-RUNNING
