// Package slurmtest runs a real Slurm cluster on this machine for a test: its
// own slurmctld and one slurmd per node, without munge, on free ports and in
// a temporary folder, so that test binaries that run in parallel never share
// one. Several nodes are several slurmd on this host, each a node of its
// own name (n1, n2, ...) to Slurm: steps on different nodes run apart.
package slurmtest

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Cluster is a running one-node cluster.
type Cluster struct {
	Dir     string   // state, spool and the daemons' logs
	Conf    string   // its slurm.conf, in Dir
	Nodes   []string // the nodes' names
	env     []string
	daemons []*daemon
}

// GPUsPerNode is each node's count of GPUs, generic resources Slurm
// counts without devices behind them.
const GPUsPerNode = 4

// Timeouts, generous for a loaded 2-core machine; start-up takes about a second.
const (
	startTimeout = 30 * time.Second
	allocTimeout = 30 * time.Second
	stopGrace    = 10 * time.Second
)

// Require skips the test without Slurm's daemons and commands, except in CI,
// which must have them.
func Require(t testing.TB) {
	t.Helper()
	for _, bin := range []string{"slurmctld", "slurmd", "srun", "salloc", "sinfo", "squeue", "scontrol", "scancel"} {
		if _, err := exec.LookPath(bin); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("%s is missing in CI: .ci/run should install slurm-wlm", bin)
			}
			t.Skipf("Slurm not installed (%s)", bin)
		}
	}
}

// Start starts a cluster of nodes nodes and stops it when the test ends. A
// daemon that dies during start-up (a port taken between choosing and
// binding it) makes it start over on new ports.
func Start(t testing.TB, nodes int) *Cluster {
	t.Helper()
	Require(t)
	var err error
	for range 3 {
		// Not t.TempDir, whose name holds the test's: slurmstepd's sockets are
		// in the spool folder, and a socket's path may not exceed 107 bytes.
		var dir string
		if dir, err = os.MkdirTemp("", "slurm"); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(dir) }) // after the cluster's stop, registered below
		var c *Cluster
		if c, err = start(dir, nodes); err == nil {
			t.Cleanup(func() {
				// A node still completing a job the test's salloc released
				// (its slurmd ending the steps' slurmstepd) ignored SIGTERM
				// past stopGrace; the nodes are let go idle first, as far as
				// startTimeout. A start that failed stops at once.
				_ = c.waitIdle()
				if err := c.stop(); err != nil {
					t.Error(err)
				}
			})
			return c
		}
	}
	t.Fatal(err)
	return nil
}

func start(dir string, nodes int) (*Cluster, error) {
	c := &Cluster{Dir: dir}
	for i := range nodes {
		c.Nodes = append(c.Nodes, fmt.Sprintf("n%d", i+1))
	}
	conf, err := writeConfig(dir, c.Nodes)
	if err != nil {
		return nil, err
	}
	c.Conf, c.env = conf, append(withoutSlurm(os.Environ()), "SLURM_CONF="+conf)
	// -D keeps each daemon in the foreground, our child; -c: no state to recover.
	argvs := [][]string{{"slurmctld", "-D", "-c", "-f", conf}}
	for _, node := range c.Nodes {
		argvs = append(argvs, []string{"slurmd", "-D", "-N", node, "-f", conf})
	}
	for i, argv := range argvs {
		name := argv[0]
		if i > 0 {
			name += "-" + c.Nodes[i-1]
		}
		d, err := startDaemon(dir, name, c.env, argv)
		if err != nil {
			return nil, errors.Join(err, c.stop())
		}
		c.daemons = append(c.daemons, d)
	}
	if err := c.waitIdle(); err != nil {
		return nil, errors.Join(err, c.stop())
	}
	return c, nil
}

// writeConfig writes slurm.conf for a cluster of the named nodes whose
// every file is under dir.
func writeConfig(dir string, nodes []string) (string, error) {
	ports, err := freePorts(1 + len(nodes))
	if err != nil {
		return "", err
	}
	host, err := os.Hostname()
	if err != nil {
		return "", err
	}
	host, _, _ = strings.Cut(host, ".") // slurmd knows its host by its short name
	if err := os.Mkdir(filepath.Join(dir, "state"), 0o755); err != nil {
		return "", err
	}
	var nodeLines strings.Builder
	for i, node := range nodes {
		if err := os.Mkdir(filepath.Join(dir, "spool-"+node), 0o755); err != nil {
			return "", err
		}
		fmt.Fprintf(&nodeLines, "NodeName=%s NodeHostname=%s NodeAddr=127.0.0.1 Port=%d CPUs=%d Gres=gpu:%d State=UNKNOWN\n", node, host, ports[1+i], runtime.NumCPU(), GPUsPerNode)
	}
	conf := filepath.Join(dir, "slurm.conf")
	// auth/none and cred/none: no munge daemon to run. linuxproc and task/none
	// need no cgroups, which containers often lack. CR_CPU with OverSubscribe
	// and salloc --overcommit let 16 tasks run on 2 cores. %n is a node's
	// name: each slurmd has its own spool, pid file and port.
	text := fmt.Sprintf(`ClusterName=nccltune%[1]d
GresTypes=gpu
SlurmctldHost=%[2]s(127.0.0.1)
SlurmctldPort=%[1]d
AuthType=auth/none
CredType=cred/none
SlurmUser=root
SlurmdUser=root
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
MailProg=/bin/true
StateSaveLocation=%[3]s/state
SlurmdSpoolDir=%[3]s/spool-%%n
SlurmctldPidFile=%[3]s/slurmctld.pid
SlurmdPidFile=%[3]s/slurmd-%%n.pid
%[4]sPartitionName=test Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4
`, ports[0], host, dir, nodeLines.String())
	// The GPUs are counted, not devices: a job's and a step's GPU requests
	// (-G, --gpus-per-node) are granted or refused as on a GPU cluster.
	for i := range GPUsPerNode {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("gpu%d", i)), nil, 0o644); err != nil {
			return "", err
		}
	}
	gres := fmt.Sprintf("AutoDetect=off\nName=gpu File=%s/gpu[0-%d]\n", dir, GPUsPerNode-1)
	if err := os.WriteFile(filepath.Join(dir, "gres.conf"), []byte(gres), 0o644); err != nil {
		return "", err
	}
	return conf, os.WriteFile(conf, []byte(text), 0o644)
}

// freePorts returns n TCP ports that were free a moment ago; all are held
// open together so that they differ.
func freePorts(n int) ([]int, error) {
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("choosing a port: %w", err)
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// withoutSlurm drops SLURM_* variables, in case the tests run inside another
// Slurm job: they would point its commands at that job and cluster.
func withoutSlurm(env []string) []string {
	var out []string
	for _, kv := range env {
		if !strings.HasPrefix(kv, "SLURM_") {
			out = append(out, kv)
		}
	}
	return out
}

// daemon is a Slurm daemon running as our child, in its own process group
// (slurmctld forks slurmscriptd into it).
type daemon struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{} // closed once it has exited
	err  error         // why it exited, once done is closed
}

func startDaemon(dir, name string, env, argv []string) (*daemon, error) {
	d := &daemon{name: name, log: filepath.Join(dir, name+".log"), done: make(chan struct{})}
	log, err := os.Create(d.log)
	if err != nil {
		return nil, err
	}
	d.cmd = exec.Command(argv[0], argv[1:]...)
	d.cmd.Env, d.cmd.Stdout, d.cmd.Stderr = env, log, log
	// Pdeathsig takes the daemon down with the test binary even when it is
	// killed before its cleanups run. It fires when the starting OS thread
	// exits, so a goroutine holds that thread for the daemon's life.
	d.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	started := make(chan error)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		defer close(d.done)
		defer log.Close()
		err := d.cmd.Start()
		started <- err
		if err == nil {
			d.err = d.cmd.Wait()
		}
	}()
	if err := <-started; err != nil {
		return nil, fmt.Errorf("starting %s: %w", d.name, err)
	}
	return d, nil
}

func (d *daemon) exited() bool {
	select {
	case <-d.done:
		return true
	default:
		return false
	}
}

// stop sends SIGTERM to the daemon's process group, then SIGKILL after a grace.
func (d *daemon) stop() error {
	pgid := -d.cmd.Process.Pid
	_ = syscall.Kill(pgid, syscall.SIGTERM)
	select {
	case <-d.done:
		return nil
	case <-time.After(stopGrace):
		_ = syscall.Kill(pgid, syscall.SIGKILL)
		<-d.done
		return fmt.Errorf("%s ignored SIGTERM for %s and was killed", d.name, stopGrace)
	}
}

func (c *Cluster) stop() error {
	var errs []error
	for i := len(c.daemons) - 1; i >= 0; i-- { // slurmd first
		errs = append(errs, c.daemons[i].stop())
	}
	// Every process of the cluster has its slurm.conf in its environment: a
	// task or slurmstepd left behind (by a test that failed midway, or by a
	// step Slurm lost track of) must not outlive the test.
	if left := Processes("SLURM_CONF=" + c.Conf); len(left) > 0 {
		for _, pid := range left {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		errs = append(errs, fmt.Errorf("processes %v of the Slurm cluster outlived it; killed them", left))
	}
	return errors.Join(errs...)
}

// Processes lists the live processes whose environment holds the entry kv
// (NAME=value). A step's variables reach every process of it, whatever they
// exec, so that one variable marks them all.
func Processes(kv string) []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		environ, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if slices.Contains(strings.Split(string(environ), "\x00"), kv) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// waitIdle polls until every node has registered and is idle.
func (c *Cluster) waitIdle() error {
	deadline := time.Now().Add(startTimeout)
	want := strings.Repeat("idle\n", len(c.Nodes))
	for {
		state, err := c.Command("sinfo", "-h", "-N", "-o", "%T").Output()
		if err == nil && string(state) == want {
			return nil
		}
		for _, d := range c.daemons {
			if d.exited() {
				return fmt.Errorf("%s exited during start-up (%v)%s", d.name, d.err, c.logs())
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("node not idle after %s (sinfo: %q, %v)%s", startTimeout, state, err, c.logs())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// logs is the daemons' logs, for a failure message.
func (c *Cluster) logs() string {
	var b strings.Builder
	for _, d := range c.daemons {
		data, _ := os.ReadFile(d.log)
		fmt.Fprintf(&b, "\n--- %s:\n%s", d.log, data)
	}
	return b.String()
}

// Command prepares a Slurm command (squeue, scontrol, ...) for this cluster.
func (c *Cluster) Command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(name, args...)
	cmd.Env = c.env
	return cmd
}

// Output runs a Slurm command and returns its standard output; it fails the
// test if the command fails.
func (c *Cluster) Output(t testing.TB, name string, args ...string) string {
	t.Helper()
	var stderr bytes.Buffer
	cmd := c.Command(name, args...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(cmd.Args, " "), err, stderr.Bytes())
	}
	return string(out)
}

// Alloc makes an allocation of tasks tasks on every node of the cluster
// (overcommitted on the machine's few CPUs) and puts this test process inside it: it sets the SLURM_* variables
// that salloc gives its shell, as when nccltune runs under salloc, and
// returns the job ID. The allocation is released when the test ends. args
// are salloc's own beside those (-G 6: GPUs asked for job-wide).
//
// salloc holds the allocation for as long as its command runs: here a shell
// that prints its environment and waits for its standard input to close.
// salloc --no-shell would give only the job ID, not the variables
// (SLURM_NTASKS, SLURM_OVERCOMMIT, ...) that srun takes as its defaults.
func (c *Cluster) Alloc(t testing.TB, tasks int, args ...string) string {
	t.Helper()
	args = append([]string{"-N", strconv.Itoa(len(c.Nodes)), "-n", strconv.Itoa(tasks), "--overcommit", "-J", t.Name()}, args...)
	cmd := c.Command("salloc", append(args, "sh", "-c", `env -0 && printf '\0' && exec cat >/dev/null`)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close() // the shell's cat ends, and salloc releases the allocation
		timer := time.AfterFunc(allocTimeout, func() { cmd.Process.Kill() })
		defer timer.Stop()
		if err := cmd.Wait(); err != nil {
			t.Errorf("salloc: %v\n%s", err, stderr.Bytes())
		}
	})
	timer := time.AfterFunc(allocTimeout, func() { cmd.Process.Kill() })
	env, err := readEnv(stdout)
	timer.Stop()
	if err != nil {
		t.Fatalf("salloc: no allocation within %s: %v\n%s", allocTimeout, err, stderr.Bytes())
	}
	for _, kv := range os.Environ() { // unset what salloc did not set
		if name, _, _ := strings.Cut(kv, "="); strings.HasPrefix(name, "SLURM_") {
			t.Setenv(name, "")
			os.Unsetenv(name)
		}
	}
	for name, value := range env {
		if strings.HasPrefix(name, "SLURM_") {
			t.Setenv(name, value)
		}
	}
	if env["SLURM_JOB_ID"] == "" {
		t.Fatalf("salloc gave no SLURM_JOB_ID\n%s", stderr.Bytes())
	}
	return env["SLURM_JOB_ID"]
}

// readEnv reads NUL-terminated NAME=value entries up to an empty one.
func readEnv(r io.Reader) (map[string]string, error) {
	env := map[string]string{}
	br := bufio.NewReader(r)
	for {
		entry, err := br.ReadString(0)
		if err != nil {
			return nil, err
		}
		if entry == "\x00" {
			return env, nil
		}
		name, value, _ := strings.Cut(strings.TrimSuffix(entry, "\x00"), "=")
		env[name] = value
	}
}

// FakeAllocation makes the test seem to run inside a Slurm allocation of
// the nodes named, without Slurm: SLURM_JOB_NODELIST is set, and a
// scontrol first on the PATH expands it to them.
func FakeAllocation(t testing.TB, nodes ...string) {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "scontrol"), []byte("#!/bin/sh\necho "+strings.Join(nodes, " ")+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Setenv("SLURM_JOB_NODELIST", strings.Join(nodes, ","))
}
