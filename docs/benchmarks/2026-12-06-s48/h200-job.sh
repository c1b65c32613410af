#!/usr/bin/env bash
# H200 (prepared in session 48, not run: no H200 came): the offline agent on the 20 published operators, one
# iteration each (the fp8 GEMM starts from its accuracy step), its exports in one scoring run; the fp8 MoE probes.
# The job is session 49's with every part on.
exec bash docs/benchmarks/2026-12-07-s49/h200-job.sh 1 1
