package runner

import "testing"

func TestStepOf(t *testing.T) {
	steps := "StepId=7.0 UserId=0 State=RUNNING Nodes=1 Tasks=4 Name=sh SrunHost:Pid=node1:4242\n" +
		"StepId=7.1 UserId=0 State=RUNNING Nodes=2 Tasks=16 Name=all_reduce_perf SrunHost:Pid=node1:4343\n" +
		"StepId=7.TDB UserId=0 State=PENDING Nodes=1 Tasks=4 Name=(null) SrunHost:Pid=node1:4444\n" +
		"StepId=7.2 UserId=0 State=RUNNING Nodes=1 Tasks=1 Name=sh SrunHost:Pid=node2:4545\n"
	for _, tc := range []struct {
		host string
		pid  int
		want string
	}{
		{"node1", 4343, "7.1"},
		{"node1.cluster.example", 4242, "7.0"},
		{"node1", 4444, ""}, // pending: no ranks yet
		{"node1", 4545, ""}, // another node's srun
		{"node2", 4545, "7.2"},
		{"node1", 43, ""},
	} {
		if got := stepOf(steps, tc.host, tc.pid); got != tc.want {
			t.Errorf("stepOf(%s, %d) = %q, want %q", tc.host, tc.pid, got, tc.want)
		}
	}
}
