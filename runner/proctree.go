package runner

import (
	"os"
	"strconv"
	"strings"
	"syscall"
)

// descendants lists every process below pid, read from /proc. mpirun puts each
// rank in a process group of its own, so signalling the launcher's group alone
// can leave ranks behind.
func descendants(pid int) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	children := map[int][]int{}
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// The command name is in parentheses and may hold spaces; the fields after it are plain.
		s := string(stat)
		fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(fields) < 2 {
			continue
		}
		if ppid, err := strconv.Atoi(fields[1]); err == nil {
			children[ppid] = append(children[ppid], child)
		}
	}
	var out []int
	queue := []int{pid}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range children[p] {
			out = append(out, c)
			queue = append(queue, c)
		}
	}
	return out
}

// signalTree sends sig to pid's process group and to each of the given
// processes (a snapshot of its descendants, taken while they could be found).
func signalTree(pid int, procs []int, sig syscall.Signal) {
	_ = syscall.Kill(-pid, sig)
	for _, p := range procs {
		_ = syscall.Kill(p, sig)
	}
}
