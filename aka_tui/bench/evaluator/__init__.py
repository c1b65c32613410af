"""One candidate on one problem: `evaluate.evaluate_candidate` is the public API every front end uses (`aka eval`,
`aka bench`, the agent, the app). It builds a typed `MeasureJob`, runs it in sandboxed worker processes with
timeouts and restarts for the shapes left after a crash (`isolation`, `worker`, `worker_entry`), holds one exclusive
lock per GPU while timing (`gpu_lock`), checks the worker's report with code the candidate cannot reach, and
returns a versioned `CandidateResult`. `precompile` warms torch.compile's caches for the compile baseline.
"""
