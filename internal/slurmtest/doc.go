// Package slurmtest starts a real single-node Slurm on this machine for
// tests: munged, slurmctld and slurmd (Debian's slurm-wlm and munge,
// make test-deps) in the foreground, on free ports, with a minimal
// slurm.conf and every state, spool, socket and log file under one
// directory, as ci/cluster-test.sh does for the sweeps. srun, sinfo and
// scancel reach it through Cluster.Env (SLURM_CONF). Unix only: Slurm runs
// nowhere else.
package slurmtest
