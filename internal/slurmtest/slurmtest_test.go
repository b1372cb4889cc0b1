package slurmtest

import (
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestCluster starts a cluster, runs a step in an allocation, and checks that
// nothing of the cluster is left once the test that started it has ended.
func TestCluster(t *testing.T) {
	Require(t)
	outer := os.Getenv("SLURM_JOB_ID") // set when the tests run inside a Slurm job
	var conf string
	t.Run("run", func(t *testing.T) {
		start := time.Now()
		c := Start(t, 1)
		t.Logf("cluster up in %s", time.Since(start).Round(time.Millisecond))
		conf = c.Conf
		job := c.Alloc(t, 16)
		if os.Getenv("SLURM_JOB_ID") != job || os.Getenv("SLURM_NTASKS") != "16" || os.Getenv("SLURM_CONF") != conf {
			t.Errorf("allocation's variables: job %q, SLURM_JOB_ID %q, SLURM_NTASKS %q, SLURM_CONF %q",
				job, os.Getenv("SLURM_JOB_ID"), os.Getenv("SLURM_NTASKS"), os.Getenv("SLURM_CONF"))
		}
		out := c.Output(t, "srun", "--jobid", job, "--overcommit", "-n", "3", "printenv", "SLURM_PROCID")
		ranks := strings.Fields(out)
		slices.Sort(ranks)
		if !slices.Equal(ranks, []string{"0", "1", "2"}) {
			t.Errorf("step ranks %q, want 0 1 2", ranks)
		}
		if len(Processes("SLURM_CONF="+conf)) < 3 { // slurmctld, slurmscriptd, slurmd, salloc, its shell
			t.Errorf("processes of the cluster: %v", Processes("SLURM_CONF="+conf))
		}
	})
	if left := Processes("SLURM_CONF=" + conf); len(left) > 0 {
		t.Errorf("processes %v outlived the cluster", left)
	}
	if v := os.Getenv("SLURM_JOB_ID"); v != outer {
		t.Errorf("SLURM_JOB_ID=%s outlived the allocation", v)
	}
}
