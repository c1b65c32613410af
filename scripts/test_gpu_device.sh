#!/usr/bin/env bash
# The GPU-marked tests on the device machine as one detached job (`make test-gpu`'s selection outgrew one
# 420 s call on an H100 in session 51: 36 of 208 done), extra pytest arguments passed on:
#   bash scripts/detached_device.sh start /tmp/gt 540 scripts/test_gpu_device.sh [-x …]
#   bash scripts/detached_device.sh wait /tmp/gt 540        (repeat until JOB-DONE; the log tail says where it is)
set -u
export PYTHONPATH=. AKA_HOME="${AKA_HOME:-/tmp/akah}" PYTHONUNBUFFERED=1
[ -x .bwrap/bwrap ] && export AKA_BWRAP="$PWD/.bwrap/bwrap"
# shellcheck disable=SC2046
python3 -m pytest -q -rfE -m gpu $(grep -rl --include='*.py' -e 'mark\.gpu' tests) "$@"
