#!/usr/bin/env bash
# Create .venv and install aka-tui. Reuses a torch the base Python already has (e.g. a CUDA build);
# otherwise installs torch 2.13.0 — the CPU build on machines without an NVIDIA GPU.
# Usage: scripts/setup.sh [--test] [--ray]    (AKA_PYTHON=python3.x to choose the base interpreter)
#   --test  test dependencies, Ray included (CI runs the Ray executor tests)
#   --ray   the optional Ray extra, for `aka bench --executor ray` (docs/scale-out.md)
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${AKA_PYTHON:-python3}"
VENV=.venv
want_test=0
want_ray=0
for arg in "$@"; do
  case "$arg" in
    --test) want_test=1; want_ray=1 ;;
    --ray) want_ray=1 ;;
    *) echo "setup: unknown option $arg (use --test and/or --ray)" >&2; exit 2 ;;
  esac
done

# Set up before from the same requirement files, with these options: nothing to install, so `make run`
# opens the app at once. The stamp holds the files' hash and the extras installed (delete it to reinstall).
STAMP="$VENV/.aka-setup-stamp"
requirements_hash() { cat requirements*.txt pyproject.toml | sha256sum | cut -d' ' -f1; }
if [[ -x "$VENV/bin/python" && -f "$STAMP" ]]; then
  read -r stamped_hash stamped_test stamped_ray < "$STAMP" || true
  if [[ "$stamped_hash" == "$(requirements_hash)" && $want_test -le ${stamped_test:-0} && $want_ray -le ${stamped_ray:-0} ]]; then
    echo "setup: .venv is up to date (delete $STAMP to reinstall)"
    exit 0
  fi
fi

# A full install (torch's CPU build, the app's and the tests' packages, Ray) takes about 3 GB; pip's own error
# on a full disk comes late and among retries, so say it first.
NEED_MB=3500
free_mb=$(df -Pm . | awk 'NR==2 {print $4}')
if [[ ! -x "$VENV/bin/python" && -n "$free_mb" && "$free_mb" -lt $NEED_MB ]]; then
  echo "setup: only ${free_mb} MB free on the disk holding $PWD; the install needs about ${NEED_MB} MB." \
       "Free some space (old checkouts' .venv directories are ~3 GB each) and run it again." >&2
  exit 1
fi

if [[ ! -x "$VENV/bin/python" ]]; then
  if "$PY" -c "import torch" >/dev/null 2>&1; then
    echo "setup: reusing torch $("$PY" -c 'import torch; print(torch.__version__)') from $PY"
    "$PY" -m venv --system-site-packages "$VENV"
  else
    "$PY" -m venv "$VENV"
  fi
fi
PIP=("$VENV/bin/python" -m pip install -q --disable-pip-version-check)

if ! "$VENV/bin/python" -c "import torch" >/dev/null 2>&1; then
  if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
    echo "setup: installing torch 2.13.0 (CUDA build) and triton 3.7.1"
    "${PIP[@]}" "torch==2.13.0" "triton==3.7.1" "numpy"
  else
    echo "setup: no GPU; installing the CPU build of torch 2.13.0, triton 3.7.1 (interpreter) and numpy"
    # '+cpu' can only match a CPU wheel: a local one on pip's find-links, else PyTorch's CPU index.
    local_log=$(mktemp)
    if ! "${PIP[@]}" "torch==2.13.0+cpu" "triton==3.7.1" "numpy" 2>"$local_log"; then
      if grep -q "No space left" "$local_log"; then cat "$local_log" >&2; rm -f "$local_log"; exit 1; fi
      echo "setup: no local CPU wheel of torch 2.13.0 ($(tail -n 1 "$local_log")); trying PyTorch's CPU index"
      "${PIP[@]}" "torch==2.13.0+cpu" "triton==3.7.1" "numpy" --extra-index-url https://download.pytorch.org/whl/cpu
    fi
    rm -f "$local_log"
  fi
fi
"$VENV/bin/python" -c "import triton" >/dev/null 2>&1 || "${PIP[@]}" "triton==3.7.1"

# bubblewrap: the sandbox every candidate runs in (docs/evaluator.md). Installed with the distribution's package
# manager when we are root or sudo needs no password; otherwise say so (candidates then run with `sandbox: none`
# and `--proposer anthropic` refuses to start without --unsafe-no-sandbox). AKA_BWRAP=/path/bwrap points at a
# binary carried in by hand (e.g. `dpkg -x bubblewrap_*.deb /tmp/bw` → /tmp/bw/usr/bin/bwrap).
install_bwrap() {
  local sudo=()
  if [[ $(id -u) != 0 ]]; then
    sudo -n true >/dev/null 2>&1 || return 1
    sudo=(sudo -n)
  fi
  if command -v apt-get >/dev/null 2>&1; then
    { "${sudo[@]}" apt-get install -y -qq bubblewrap || { "${sudo[@]}" apt-get update -qq && "${sudo[@]}" apt-get install -y -qq bubblewrap; }; } >/dev/null 2>&1
  elif command -v dnf >/dev/null 2>&1; then "${sudo[@]}" dnf install -y -q bubblewrap >/dev/null 2>&1
  elif command -v apk >/dev/null 2>&1; then "${sudo[@]}" apk add -q bubblewrap >/dev/null 2>&1
  elif command -v pacman >/dev/null 2>&1; then "${sudo[@]}" pacman -S --noconfirm --needed bubblewrap >/dev/null 2>&1
  else return 1
  fi
}
if [[ -n "${AKA_BWRAP:-}" ]]; then
  echo "setup: sandbox: using AKA_BWRAP=$AKA_BWRAP"
elif command -v bwrap >/dev/null 2>&1; then
  echo "setup: sandbox: $(bwrap --version) found"
elif install_bwrap && command -v bwrap >/dev/null 2>&1; then
  echo "setup: sandbox: installed $(bwrap --version)"
else
  echo "setup: sandbox: COULD NOT install bubblewrap (not root, no passwordless sudo, no network or no known" \
       "package manager); candidates will run with 'sandbox: none'. Install it (apt-get install bubblewrap) or" \
       "set AKA_BWRAP to a bwrap binary." >&2
fi
"$VENV/bin/python" -c "import numpy" >/dev/null 2>&1 || "${PIP[@]}" "numpy"

"${PIP[@]}" -r requirements.txt
[[ $want_test == 1 ]] && "${PIP[@]}" -r requirements-test.txt
# Ray (minimal, ~240 MB, ~10 s) needs no torch, so the torch installed above stays as it is.
[[ $want_ray == 1 ]] && "${PIP[@]}" -r requirements-ray.txt
# No build isolation: the build backend (setuptools) comes from the venv, nothing is fetched for it.
"${PIP[@]}" --no-deps --no-build-isolation -e .
echo "$(requirements_hash) $want_test $want_ray" > "$STAMP"
echo "setup: done ($("$VENV/bin/python" -c 'import torch, triton; print("torch", torch.__version__, "triton", triton.__version__)'))"
