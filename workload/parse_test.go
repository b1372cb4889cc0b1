package workload

import (
	"strings"
	"testing"
)

func TestSplitInfo(t *testing.T) {
	const msg = "AllReduce: opCount 0"
	for _, tc := range []struct {
		line, proc, dev string // proc "" if no process can be read
		isInfo          bool
	}{
		{"gpu-a:20001:20001 [0] NCCL INFO " + msg, "gpu-a:20001", "0", true},
		{"gpu-a:20001:20099 [3] NCCL INFO " + msg, "gpu-a:20001", "3", true},                                  // another thread
		{"3: gpu-b:20022:20022 [1] NCCL INFO " + msg, "gpu-b:20022", "1", true},                               // srun -l
		{"[1,3]<stdout>:node2:77:77 [3] NCCL INFO " + msg, "node2:77", "3", true},                             // mpirun --tag-output
		{"[default0]:[2025-06-01 10:15:01] gpu_a:31000:31000 [0] NCCL INFO " + msg, "gpu_a:31000", "0", true}, // torchrun --tee, timestamps
		{"1748772901.123456 gpu-a:1:1 [0] NCCL INFO " + msg, "gpu-a:1", "0", true},                            // NCCL_DEBUG_TIMESTAMP_FORMAT="%s.%6f "
		{"1748772901.gpu-a:1:1 [0] NCCL INFO " + msg, "gpu-a:1", "0", true},                                   // a format with no space
		{"1748772901gpu-a:1:1 [0] NCCL INFO " + msg, "gpu-a:1", "0", true},                                    // NCCL_DEBUG_TIMESTAMP_FORMAT="%s"
		{"10:15:01.123gpu-a:1:1 [0] NCCL INFO " + msg, "gpu-a:1", "0", true},                                  // "%T.%3f": the digits change every line
		{"1748772901-gpu-a:1:1 [0] NCCL INFO " + msg, "gpu-a:1", "0", true},                                   // "%s-"
		{"10:1:1 [0] NCCL INFO " + msg, "10:1", "0", true},                                                    // a hostname of digits alone (NCCL cuts 10.0.0.5 at the dot)
		{"10:15:01gpu-a:1:1 [0] NCCL INFO " + msg, "gpu-a:1", "0", true},                                      // "%T"
		// A hostname that starts with digits is whole: two hosts "1node" and
		// "2node" are not one, which the same pids (containers') would merge.
		{"4gpu-a:1:1 [0] NCCL INFO " + msg, "4gpu-a:1", "0", true},
		{"3: 4gpu-a:1:1 [0] NCCL INFO " + msg, "4gpu-a:1", "0", true},            // srun -l
		{"[1,3]<stdout>:4gpu-a:1:1 [0] NCCL INFO " + msg, "4gpu-a:1", "0", true}, // mpirun --tag-output
		{"[default0]:10-gpu:1:1 [0] NCCL INFO " + msg, "10-gpu:1", "0", true},    // torchrun --tee
		{"[0] NCCL INFO " + msg, "", "", true},
		{"gpu-a:1 [0] NCCL INFO " + msg, "", "", true},
		{"gpu-a:x:1 [0] NCCL INFO " + msg, "", "", true},
		{":1:1 [0] NCCL INFO " + msg, "", "", true},
		{"gpu-a:1:1 [x] NCCL INFO " + msg, "", "", true},
		{"gpu-a:1:1 NCCL INFO " + msg, "", "", true},
		{"\ngpu-a:1:1 [0] enqueue.cc:12 NCCL WARN " + msg, "", "", false},
		{"NCCL version 2.18.3+cuda12.2", "", "", false},
		// Linux's hostnames are at most 64 bytes: more is glued to one, and
		// would make each process's name (which Read keeps) as long as a line.
		{strings.Repeat("x", 1000) + "gpu-a:1:1 [0] NCCL INFO " + msg, strings.Repeat("x", 59) + "gpu-a:1", "0", true},
	} {
		proc, dev, m, isInfo, ok := splitInfo([]byte(tc.line))
		if isInfo != tc.isInfo || ok != (tc.proc != "") || string(proc) != tc.proc || string(dev) != tc.dev || isInfo && string(m) != msg {
			t.Errorf("%q: proc %q dev %q msg %q isInfo %v ok %v", tc.line, proc, dev, m, isInfo, ok)
		}
	}
}

func TestParseCall(t *testing.T) {
	for _, tc := range []struct {
		msg        string
		want       call
		isCall, ok bool
	}{
		{"AllReduce: opCount 2a sendbuff 0x7f3a0ca26400 recvbuff 0x7f3a0ca26400 count 262144 datatype 7 op 0 root 0 comm 0x55d0ccd3c100 [nranks=16] stream 0x55a0ca5cd600",
			call{op: []byte("AllReduce"), count: 262144, dtype: 7, comm: 0x55d0ccd3c100, nranks: 16}, true, true},
		{"Send: opCount 3 sendbuff (nil) recvbuff 0x7f00 count 4 datatype 9 op 0 root 5 comm 0xa [nranks=8] stream 0xb",
			call{op: []byte("Send"), count: 4, dtype: 9, root: 5, comm: 0xa, nranks: 8}, true, true},
		{"AllGather: opCount 0 sendbuff 0x1 recvbuff 0x1 count 0 datatype 0 op 0 root 0 comm 0x1 [nranks=1]", // no stream: still a call
			call{op: []byte("AllGather"), comm: 1, nranks: 1}, true, true},
		{"SymCheck: coll AllReduce size 16777216 rank 0", call{}, false, false},
		{"AllReduce : skipping sendbuff/recvbuff pointer check", call{}, false, false},
		{"NCCL git version HEAD 3f2c9a1", call{}, false, false},
		{strings.Repeat("A", 1000) + ": opCount 0 sendbuff 0x1 recvbuff 0x1 count 1 datatype 7 op 0 root 0 comm 0x1 [nranks=2] stream 0x1", call{}, false, false}, // no NCCL call's name
		{": opCount 0 sendbuff 0x1", call{}, false, false},
		{"AllReduce: opCount 0 sendbuff 0x1 recvbuff 0x1 count 12", call{}, true, false},
		{"AllReduce: opCount 0 sendbuff 0x1 recvbuff 0x1 count -1 datatype 7 op 0 root 0 comm 0x1 [nranks=2] stream 0x1", call{}, true, false},
		{"AllReduce: opCount 0 sendbuff 0x1 recvbuff 0x1 count 1 datatype 7 op 0 root 0 comm 1 [nranks=2] stream 0x1", call{}, true, false},
		{"AllReduce: opCount 0 sendbuff 0x1 recvbuff 0x1 count 1 datatype 7 op 0 root 0 comm 0x1 [nranks=2 stream 0x1", call{}, true, false},
		{"AllReduce: opCount 0 sendbuff 0x1 recvbuff 0x1 count 1 datatype 7 op 0 root 0 comm 0x1 [nranks=2147483648] stream 0x1", call{}, true, false},
		{"AllReduce: opCount 0 sendbuff 0x1 recvbuff 0x1 count 576460752303423488 datatype 7 op 0 root 0 comm 0x1 [nranks=2] stream 0x1", call{}, true, false}, // 2^59 elements
		{"Send: opCount 0 sendbuff 0x1 recvbuff (nil) count 1 datatype 7 op 0 root -1 comm 0x1 [nranks=2] stream 0x1", call{}, true, false},                    // no such peer
		{"Recv: opCount 0 sendbuff (nil) recvbuff 0x1 count 1 datatype 7 op 0 root 2 comm 0x1 [nranks=2] stream 0x1", call{}, true, false},
		{"Broadcast: opCount 0 sendbuff 0x1 recvbuff 0x1 count 1 datatype 7 op 0 root 4 comm 0x1 [nranks=4] stream 0x1", call{}, true, false},
	} {
		c, isCall, ok := parseCall([]byte(tc.msg))
		if isCall != tc.isCall || ok != tc.ok || ok && (string(c.op) != string(tc.want.op) || c.count != tc.want.count || c.dtype != tc.want.dtype ||
			c.root != tc.want.root || c.comm != tc.want.comm || c.nranks != tc.want.nranks) {
			t.Errorf("%q: %+v isCall %v ok %v, want %+v %v %v", tc.msg, c, isCall, ok, tc.want, tc.isCall, tc.ok)
		}
	}
}

func TestParseVersion(t *testing.T) {
	for msg, want := range map[string]string{
		"NCCL version 2.28.3+cuda13.0":         "2.28.3",
		"NCCL version 2.18.3a0+cuda12.2":       "2.18.3a0",
		"NCCL version 2.28.3":                  "",
		"NCCL version detected":                "",
		"NCCL version 2.28.3+cuda13.0, but":    "",
		"NCCL git version HEAD 3f2c9a1":        "",
		"Mismatched NCCL version 2.1+cuda1 x":  "",
		"NCCL version 2.28.3-rc1+cuda13.0":     "2.28.3-rc1",
		"NCCL version 2.28.3\xff+cuda13.0":     "",
		"NCCL version 2.28\r3+cuda13.0":        "",
		"NCCL version 2.28.3\x1b[31m+cuda13.0": "",
	} {
		if got, ok := parseVersion([]byte(msg)); got != want || ok != (want != "") {
			t.Errorf("%q: %q, %v; want %q", msg, got, ok, want)
		}
	}
}
