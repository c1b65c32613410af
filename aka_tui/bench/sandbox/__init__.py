"""How candidate code is started: a child process in a bubblewrap sandbox (no network, no secrets, a read-only
system, one private work dir) with an allow-listed environment (`bwrap`), resource limits enforced by a cgroup or a
watchdog and its whole process tree killed with it (`containment`, `cgroups`), and whole `aka` commands run inside
it (`command`). Where no sandbox can run, the same limits apply without namespaces and every result says so.
"""
