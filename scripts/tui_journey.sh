#!/usr/bin/env bash
# The first journey, as a person would do it, in tmux: open the app, pick silu_and_mul, run the offline agent
# for 2 iterations on the CPU interpreter (smoke shapes), accept the best and export it.
# Screens are captured into $OUT (default /tmp/aka-journey). Usage: [COLS=100 ROWS=30] scripts/tui_journey.sh
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/aka-journey}
rm -rf "$OUT" && mkdir -p "$OUT/home"
cat > "$OUT/home/config.json" <<JSON
{"iterations": 2, "use_kb": false, "tier": "smoke", "sessions_dir": "$OUT/sessions"}
JSON
key() { tmux send-keys -t aka-journey "$@"; sleep 1; }
shot() { tmux capture-pane -p -t aka-journey > "$OUT/$1.txt"; echo "captured $1"; }
tmux kill-session -t aka-journey 2>/dev/null || true
tmux new-session -d -s aka-journey -x "${COLS:-160}" -y "${ROWS:-48}" "env AKA_HOME=$OUT/home TERM=xterm-256color .venv/bin/aka"
sleep 5; shot 1-problems
key /; tmux send-keys -t aka-journey -l silu; sleep 1; key Enter; shot 2-filtered
key Enter; sleep 1; shot 3-detail
key o; shot 4-session
key s
for _ in $(seq 1 90); do
  sleep 2
  if tmux capture-pane -p -t aka-journey | grep -q "finished:"; then break; fi
done
shot 5-iterations
key a; sleep 2; shot 6-accepted  # the tag is a git write: give it time on a busy machine
tmux send-keys -t aka-journey C-u; sleep 1; tmux send-keys -t aka-journey -l "$OUT/silu_and_mul_kernel.py"; sleep 2
key Enter; sleep 2; shot 7-exported
key C-q
test -s "$OUT/silu_and_mul_kernel.py" && echo "exported kernel: $OUT/silu_and_mul_kernel.py"
git -C "$OUT"/sessions/silu_and_mul-* tag -l
