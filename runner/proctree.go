package runner

import (
	"os"
	"strconv"
	"strings"
)

// proc is one process as /proc shows it.
type proc struct {
	pid   int
	state byte // R, S, D, Z, ...
	pgid  int
}

// children lists pid's own children, read from /proc.
func children(pid int) []proc { return procs()[pid] }

// descendants lists every process below pid, read from /proc. mpirun puts each
// rank in a process group of its own, so signalling a group alone can leave
// ranks behind.
func descendants(pid int) []proc {
	children := procs()
	var out []proc
	queue := []int{pid}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range children[p] {
			out = append(out, c)
			queue = append(queue, c.pid)
		}
	}
	return out
}

// procs maps each process to its children, read from /proc.
func procs() map[int][]proc {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	children := map[int][]proc{}
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
		if len(fields) < 3 || len(fields[0]) != 1 {
			continue
		}
		pgid, _ := strconv.Atoi(fields[2])
		if ppid, err := strconv.Atoi(fields[1]); err == nil {
			children[ppid] = append(children[ppid], proc{pid: child, state: fields[0][0], pgid: pgid})
		}
	}
	return children
}

// living leaves out zombies: they are dead, only not yet reaped by their parent.
func living(procs []proc) []proc {
	var out []proc
	for _, p := range procs {
		if p.state != 'Z' {
			out = append(out, p)
		}
	}
	return out
}
