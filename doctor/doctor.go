// Package doctor is the layered pre-flight check people otherwise walk by
// hand before a campaign, or when a tuned job is slow: hardware and fabric,
// then NCCL, then the framework. Each check reads a tool's output with a small
// parser (tested on recorded outputs); a missing tool is a skip, not a crash.
package doctor

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/nccltune/nccltune/internal/text"
	"github.com/nccltune/nccltune/runner"
	"github.com/nccltune/nccltune/runner/nccllog"
	"github.com/nccltune/nccltune/space"
)

// Status is a check's verdict.
type Status string

const (
	OK   Status = "ok"
	Warn Status = "warn"
	Fail Status = "fail"
	Skip Status = "skip"
)

// Result is one check's verdict, with what to do about it.
type Result struct {
	Layer  string `json:"layer"` // hardware, nccl, framework
	Check  string `json:"check"`
	Status Status `json:"status"`
	Detail string `json:"detail"`
	Fix    string `json:"fix"` // "" where there is none: a key scripts may read on every result
}

// Options says where to look and what to run.
type Options struct {
	Root string // prefix for /proc, /sys and NCCL's config files (tests point it at testdata); "" is the real machine
	// Exec runs a tool and returns its output; nil runs it for real. An
	// exec.ErrNotFound error means the tool is missing (the check is skipped).
	Exec func(ctx context.Context, name string, args ...string) ([]byte, error)
	// Probe is the tiny all-reduce to run (nccl-tests, or the simulated
	// cluster), through Launcher; nil skips the check.
	Probe    *runner.Job
	Launcher runner.Launcher
	// Env is the space's pinned variables, which every trial runs with: the
	// all-reduce runs with them, and a check of one (NCCL_IB_GID_INDEX)
	// reads it here before the environment.
	Env     []string
	Python  string        // for the framework check; "" skips it
	Timeout time.Duration // each tool's time limit; 0 is 30s
}

// Run runs every check of this node, layer by layer.
func Run(ctx context.Context, o Options) []Result {
	if o.Timeout == 0 {
		o.Timeout = 30 * time.Second
	}
	if o.Exec == nil {
		o.Exec = func(ctx context.Context, name string, args ...string) ([]byte, error) {
			return run(ctx, o.Timeout, name, args...)
		}
	}
	f := &facts{}
	var out []Result
	for _, check := range []func(context.Context, Options, *facts) Result{
		checkGPUs, checkPorts, checkGID, checkDrivers, checkPeermem, checkMemlock, checkOMPI, checkMaster,
	} {
		out = append(out, check(ctx, o, f).Bounded())
	}
	out = append(out, NCCL(ctx, o, HardwareOf(out)), checkFramework(ctx, o, f).Bounded())
	return out
}

// Bounded is r with its detail, which quotes tools' output, cut to
// maxDetail bytes. Its fix quotes none, only what to do (a command to run
// by hand, whole).
func (r Result) Bounded() Result {
	r.Detail = clip(r.Detail, maxDetail)
	return r
}

// Hardware is what the hardware checks found, which NCCL's choices are judged against.
type Hardware struct {
	RDMA    bool // an InfiniBand or RoCE port is active
	Peermem bool // GPUDirect RDMA is possible
}

// Names of the checks HardwareOf reads.
const (
	portsCheck   = "InfiniBand/RoCE ports (ibstat)"
	peermemCheck = "GPUDirect RDMA (nvidia_peermem)"
	masterCheck  = "MASTER_ADDR reachable"
)

// GroupsCheck is the check that launcher.groups' groups of nodes are alike.
const GroupsCheck = "groups of nodes alike (launcher.groups)"

// HardwareOf reads the fabric from hardware results, of one node or of all:
// RDMA if any node has an active port, GPUDirect if every node that said has it.
func HardwareOf(results []Result) Hardware {
	var f Hardware
	peermem, denied := false, false
	for _, r := range results {
		switch {
		case r.Check == portsCheck && r.Status == OK:
			f.RDMA = true
		case r.Check == peermemCheck && r.Status == OK:
			peermem = true
		case r.Check == peermemCheck && r.Status == Warn:
			denied = true
		}
	}
	f.Peermem = peermem && !denied
	return f
}

// facts carries what earlier checks learnt to later ones ("IB is up, so NCCL should use it").
type facts struct {
	activePorts []Port
	roce        bool
}

// maxToolOutput bounds what is kept of a tool's output: the checks read a
// few lines, and a tool gone wrong can print without end.
const maxToolOutput = 1 << 20

// run runs a tool for at most timeout. On a hung GPU or fabric, tools hang:
// the tool is killed with its process group (a wrapper script's children
// too), and output that a child that left the group holds open is given up
// on a second later. A tool in uninterruptible sleep (nvidia-smi in a
// wedged driver) outlives SIGKILL until the kernel lets it go: it is left
// to it, waited for no longer than that.
func run(ctx context.Context, timeout time.Duration, name string, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = time.Second
	var out output
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-ctx.Done():
		select {
		case err = <-done:
		case <-time.After(2 * cmd.WaitDelay):
		}
	}
	// What the tool left running in its group (a wrapper's daemon) goes
	// with it; that it held the output open is no failure of the tool's.
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	if errors.Is(err, exec.ErrWaitDelay) {
		err = nil
	}
	if ctx.Err() != nil {
		err = fmt.Errorf("%s: %w in %s", name, errNoAnswer, timeout)
	}
	return out.Bytes(), err
}

// errNoAnswer is a tool killed at its time limit: what it printed before
// is not why it failed.
var errNoAnswer = errors.New("no answer")

// Markers that checks look for anywhere in a tool's output.
const (
	ompiCUDA    = "mca:mpi:base:param:mpi_built_with_cuda_support:value:"
	frameworkOK = "FRAMEWORK_OK"
	noTorch     = "No module named 'torch'"
	noGPU       = "No devices were found" // nvidia-smi's, exit status 6, where it sees no GPU
)

var markers = [][]byte{[]byte(ompiCUDA), []byte(frameworkOK), []byte(noTorch), []byte(noGPU)}

// output keeps what the checks read of a tool's output, however much it
// prints: its first maxToolOutput bytes, and after them the lines that
// hold a marker (ompi_info --all prints its CUDA line after megabytes on a
// build of many components), as many bytes again at most, and the last
// line, where a failing tool says why. Each line after the head is kept to
// its first maxLine bytes. (Not an embedded bytes.Buffer, whose ReadFrom
// io.Copy would call instead of Write.)
type output struct {
	mu     sync.Mutex // a tool left running writes on while run returns
	head   bytes.Buffer
	past   bool     // the head is full
	line   []byte   // the line being written after the head
	marked [][]byte // the lines after the head that hold a marker
	size   int      // their bytes
	last   []byte   // the last line ended after the head
}

const maxLine = 64 << 10

func (o *output) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	n := len(p)
	if !o.past {
		room := maxToolOutput - o.head.Len()
		if len(p) <= room {
			o.head.Write(p)
			return n, nil
		}
		o.head.Write(p[:room])
		p, o.past = p[room:], true
		// The line the bound cuts is read whole after the head.
		b := o.head.Bytes()
		cut := bytes.LastIndexByte(b, '\n') + 1
		o.add(b[cut:])
		o.head.Truncate(cut)
	}
	for {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			o.add(p)
			return n, nil
		}
		o.add(p[:i])
		o.end()
		p = p[i+1:]
	}
}

func (o *output) add(b []byte) {
	o.line = append(o.line, b[:min(len(b), maxLine-len(o.line))]...)
}

func (o *output) end() {
	marked := slices.ContainsFunc(markers, func(m []byte) bool { return bytes.Contains(o.line, m) })
	if marked && o.size < maxToolOutput {
		o.marked = append(o.marked, slices.Clone(o.line))
		o.size += len(o.line)
	}
	o.last, o.line = append(o.last[:0], o.line...), o.line[:0]
}

// Bytes is the output kept: the head, then the lines kept after it, in
// their order, the last one last.
func (o *output) Bytes() []byte {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := slices.Clone(o.head.Bytes())
	for _, l := range o.marked {
		out = append(append(out, l...), '\n')
	}
	last := o.last
	if len(o.line) > 0 { // unended
		last = o.line
	}
	if len(last) > 0 && (len(o.marked) == 0 || !bytes.Equal(last, o.marked[len(o.marked)-1])) {
		out = append(append(out, last...), '\n')
	}
	return out
}

// missing reports whether a tool is not there: not in the PATH, or not at
// the path it was named by.
func missing(err error) bool {
	return errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist)
}

func checkGPUs(ctx context.Context, o Options, f *facts) Result {
	r := Result{Layer: "hardware", Check: "GPUs (nvidia-smi)"}
	out, err := o.Exec(ctx, "nvidia-smi", "--query-gpu=index,name,pci.bus_id,memory.total,driver_version,mig.mode.current", "--format=csv")
	switch {
	case missing(err):
		r.Status, r.Detail = Skip, "nvidia-smi not found"
		return r
	case err != nil && !bytes.Contains(out, []byte(noGPU)):
		r.Status, r.Detail, r.Fix = Fail, summary(out, err), "check the NVIDIA driver (nvidia-smi must work)"
		return r
	}
	gpus := ParseNvidiaSMI(string(out))
	if len(gpus) == 0 {
		// nvidia-smi lists every GPU the node (or container) has: CUDA_VISIBLE_DEVICES is not its business.
		r.Status, r.Detail, r.Fix = Fail, "nvidia-smi lists no GPU", "check the driver, and that the node (or container) was given its GPUs (docker run --gpus, NVIDIA_VISIBLE_DEVICES)"
		return r
	}
	// Models in the order first seen, each with its count.
	var models, mig []string
	count := map[string]int{}
	for _, g := range gpus {
		if count[g.Name] == 0 {
			models = append(models, g.Name)
		}
		count[g.Name]++
		if g.MIG == "Enabled" {
			mig = append(mig, strconv.Itoa(g.Index))
		}
	}
	var kinds []string
	for _, m := range models {
		kinds = append(kinds, fmt.Sprintf("%d x %s", count[m], m))
	}
	r.Status = OK
	r.Detail = fmt.Sprintf("%s, driver %s", strings.Join(kinds, ", "), gpus[0].Driver)
	var fixes []string
	if len(models) > 1 {
		fixes = append(fixes, "GPUs of different models: a collective runs at the slowest one's pace, and a trial's score depends on which GPUs it gets; give the job GPUs of one model (CUDA_VISIBLE_DEVICES)")
	}
	if len(mig) > 0 {
		r.Detail += "; MIG mode on GPU " + strings.Join(mig, ", ")
		fixes = append(fixes, "a MIG instance has no NVLink or PCIe peer-to-peer path to another GPU, so NCCL goes through host memory: turn MIG off (nvidia-smi -i N -mig 0) on GPUs that NCCL spans")
	}
	if len(fixes) > 0 {
		r.Status, r.Fix = Warn, strings.Join(fixes, "; ")
	}
	return r
}

func checkPorts(ctx context.Context, o Options, f *facts) Result {
	r := Result{Layer: "hardware", Check: portsCheck}
	out, err := o.Exec(ctx, "ibstat")
	ports := ParseIbstat(string(out))
	from := ""
	sys := ReadPorts(o.Root)
	switch {
	case err == nil && len(sys) > len(ports):
		// ibstat warns of a CA it cannot stat and goes on, exit status 0:
		// its list lacks that CA's ports.
		ports, from = sys, fmt.Sprintf(" (read from /sys/class/infiniband: ibstat listed %d of its %d ports)", len(ports), len(sys))
	case err != nil:
		// ibstat missing (infiniband-diags, seldom in a container), failing
		// (it needs ib_umad, which NCCL does not), or stopped part-way (its
		// list may lack the ports after): the kernel lists the ports in
		// sysfs too, where NCCL reads them.
		why := "failed"
		switch {
		case missing(err):
			why = "not found"
		case errors.Is(err, errNoAnswer):
			why = "hung"
		}
		if len(sys) > 0 {
			ports, from, err = sys, " (read from /sys/class/infiniband: ibstat "+why+")", nil
		} else if len(ports) == 0 && noHCA(o.Root) {
			// ibstat, missing or failing for want of ib_umad, which no HCA
			// loads: a node without one is no fabric left unchecked.
			from, err = " (none in /sys/class/infiniband; ibstat "+why+")", nil
		}
	}
	if missing(err) {
		r.Status, r.Detail = Skip, "ibstat not found (infiniband-diags), and no port in /sys/class/infiniband; no RDMA fabric checked"
		return r
	}
	var up, down, unread []string
	for _, p := range ports {
		name := fmt.Sprintf("%s/%d %s", p.CA, p.Num, p.LinkLayer)
		switch {
		case p.Active():
			f.activePorts = append(f.activePorts, p)
			f.roce = f.roce || p.LinkLayer == "Ethernet"
			up = append(up, name+" "+p.Rate+"Gb/s")
		case p.State == "": // not down: unknown
			unread = append(unread, fmt.Sprintf("%s/%d", p.CA, p.Num))
		default:
			down = append(down, name+" "+p.State)
		}
	}
	switch {
	case len(ports) == 0 && err != nil:
		// Its ports unread, not absent: ibstat needs ib_umad, which NCCL does not.
		r.Status, r.Detail, r.Fix = Warn, "ibstat failed: "+summary(out, err), "modprobe ib_umad (ibstat reads the ports through it); no RDMA fabric checked"
	case len(ports) == 0:
		r.Status, r.Detail, r.Fix = Warn, "no HCA found", "without RDMA NCCL uses TCP sockets between nodes; fine on one node"
	case len(up) == 0 && len(unread) > 0:
		r.Status, r.Detail = Warn, "cannot read the state of "+strings.Join(unread, ", ")
		if len(down) > 0 {
			r.Detail += "; down: " + strings.Join(down, "; ")
		}
		r.Fix = "see the ports' state with ibstat (infiniband-diags) or ibv_devinfo, and give the node (or container) a readable /sys/class/infiniband; no RDMA fabric checked"
	case len(up) == 0:
		r.Status, r.Detail, r.Fix = Fail, "no port is Active: "+strings.Join(down, "; "), "bring the links up (cables, subnet manager for IB, switch config for RoCE)"
	default:
		r.Status, r.Detail = OK, "active: "+strings.Join(up, "; ")
		if len(down) > 0 {
			r.Detail += "; down: " + strings.Join(down, "; ")
		}
		if len(unread) > 0 {
			r.Detail += "; state unread: " + strings.Join(unread, ", ")
		}
	}
	r.Detail += from
	return r
}

// noHCA reports whether sysfs, which lists every RDMA device the kernel
// has, lists none: its class folder is there, and no infiniband class in it.
func noHCA(root string) bool {
	_, err := os.Stat(root + "/sys/class/infiniband")
	_, classes := os.Stat(root + "/sys/class")
	return errors.Is(err, fs.ErrNotExist) && classes == nil
}

// checkGID judges each active RoCE port's GID table as NCCL picks from it
// (2.21 and later, NCCL_IB_GID_INDEX unset: a GID of the kind GIDKind says,
// each port its own), and an index pinned in the space or the environment
// against every port.
func checkGID(_ context.Context, o Options, f *facts) Result {
	r := Result{Layer: "hardware", Check: "RoCE GID index"}
	if !f.roce {
		r.Status, r.Detail = Skip, "no active RoCE (Ethernet link layer) port"
		return r
	}
	pinned := int(o.paramInt("NCCL_IB_GID_INDEX", -1))
	// The config file that sets the index, which a wrong one's fix names.
	from := ""
	if _, file := o.setting("NCCL_IB_GID_INDEX"); file != "" {
		from = " (" + file + ")"
	}
	kind := GIDKind{IPv6: o.getenv("NCCL_IB_ADDR_FAMILY") == "AF_INET6", Version: int(o.paramInt("NCCL_IB_ROCE_VERSION_NUM", 2))}
	kind.Range = ParseAddrRange(o.getenv("NCCL_IB_ADDR_RANGE"), kind.IPv6)
	all := ReadGIDs(o.Root)
	var wrong, none, unread, found []string
	indices := map[int]bool{}
	for _, p := range f.activePorts {
		if p.LinkLayer != "Ethernet" {
			continue
		}
		name := fmt.Sprintf("%s/%d", p.CA, p.Num)
		gids := slices.DeleteFunc(slices.Clone(all), func(g GID) bool { return g.CA != p.CA || g.Port != p.Num })
		idx, ok := SuggestGIDIndex(gids, kind)
		// NCCL takes a pinned index as is, whatever NCCL_IB_ADDR_FAMILY and
		// NCCL_IB_ADDR_RANGE say: it fits where it names a routable GID, of
		// the family asked for where the port has one (an IPv6-only port's
		// any).
		at := slices.IndexFunc(gids, func(g GID) bool { return g.Index == pinned })
		_, offered := SuggestGIDIndex(gids, GIDKind{IPv6: kind.IPv6, Version: kind.Version})
		fits := at >= 0 && kind.routable(gids[at]) && (!offered || gids[at].IPv4() != kind.IPv6)
		switch {
		case len(gids) == 0:
			unread = append(unread, name)
		case pinned >= 0 && !fits:
			entry := "unused entry"
			if at >= 0 {
				entry = gids[at].Type + " GID " + gids[at].GID
			}
			want := fmt.Sprintf("a routable RoCE v%d one", kind.Version)
			if ok {
				want = fmt.Sprintf("its %s one (index %d)", kind, idx)
			}
			wrong = append(wrong, fmt.Sprintf("NCCL_IB_GID_INDEX=%d%s names %s's %s, not %s", pinned, from, name, entry, want))
		case pinned >= 0:
			found = append(found, fmt.Sprintf("%s at index %d", name, pinned))
		case !ok:
			none = append(none, name)
		default:
			found = append(found, fmt.Sprintf("%s at index %d", name, idx))
			indices[idx] = true
		}
	}
	var details, fixes []string
	if label := kind.String(); len(found) > 0 {
		if pinned >= 0 {
			label = fmt.Sprintf("NCCL_IB_GID_INDEX=%d, a routable RoCE v%d GID", pinned, kind.Version)
		}
		details = append(details, label+": "+strings.Join(found, ", "))
	}
	r.Status = OK
	switch {
	case pinned >= 0 && len(wrong) == 0 && len(found) > 0:
		fixes = append(fixes, fmt.Sprintf("NCCL_IB_GID_INDEX=%d is set and fits (NCCL 2.21 and later pick the GID themselves when it is unset)", pinned))
	case len(indices) == 1:
		fixes = append(fixes, fmt.Sprintf("NCCL 2.21 and later pick it themselves (NCCL_IB_GID_INDEX unset); older NCCL needs NCCL_IB_GID_INDEX=%d", slices.Collect(maps.Keys(indices))[0]))
	case len(indices) > 1:
		fixes = append(fixes, "NCCL 2.21 and later pick each port's own (leave NCCL_IB_GID_INDEX unset); older NCCL takes one index for all ports, and none fits them all")
	}
	if len(unread) > 0 {
		r.Status = Warn
		details = append(details, "cannot read the GID table of "+strings.Join(unread, ", ")+" under /sys/class/infiniband")
		fixes = append(fixes, "NCCL reads the same table to pick the GID: give the node (or container) /sys/class/infiniband")
	}
	if len(none) > 0 {
		r.Status = Fail
		details = append(details, fmt.Sprintf("%s has no %s GID", strings.Join(none, ", "), kind))
		fix := "give the interface an IPv4 address and enable RoCE v2 (cma_roce_mode); on an IPv6-only fabric set NCCL_IB_ADDR_FAMILY=AF_INET6"
		switch {
		case kind.Range.Bits < 0:
			fix = fmt.Sprintf("NCCL_IB_ADDR_RANGE=%s has a negative mask, in which NCCL finds no address (it takes GID index 0 then): give the fabric's mask length (10.1.0.0/16)", kind.Range)
		case kind.Range.Set():
			fix += "; or set NCCL_IB_ADDR_RANGE to the fabric's addresses"
		}
		fixes = append(fixes, fix)
	}
	if len(wrong) > 0 {
		r.Status = Fail
		details = append(details, wrong...)
		fixes = append(fixes, "unset NCCL_IB_GID_INDEX"+from+": NCCL 2.21 and later pick each port's GID themselves (a wrong index fails or slows RoCE)")
	}
	r.Detail, r.Fix = strings.Join(details, "; "), strings.Join(fixes, "; ")
	return r
}

// getenv is a variable's value as NCCL reads it (setting).
func (o Options) getenv(name string) string {
	v, _ := o.setting(name)
	return v
}

// setting is a variable's value as NCCL reads it, and the config file it
// comes from ("" for o.Env and the environment): in o.Env (the last one
// set wins), in the environment, else in NCCL's config files, whose first
// line that sets it wins: NCCL_CONF_FILE (else the user's ~/.nccl.conf),
// then /etc/nccl.conf.
func (o Options) setting(name string) (value, file string) {
	if v, ok := o.lookupEnv(name); ok {
		return v, ""
	}
	var files []string
	if conf, _ := o.lookupEnv("NCCL_CONF_FILE"); conf != "" {
		files = append(files, conf)
	} else if u, err := user.Current(); err == nil { // NCCL's home is getpwuid's, not $HOME
		files = append(files, filepath.Join(u.HomeDir, ".nccl.conf"))
	}
	for _, file := range append(files, "/etc/nccl.conf") {
		if v, ok := confValue(o.Root+file, name); ok {
			return v, file
		}
	}
	return "", ""
}

func (o Options) lookupEnv(name string) (string, bool) {
	for _, kv := range slices.Backward(o.Env) {
		if v, ok := strings.CutPrefix(kv, name+"="); ok {
			return v, true
		}
	}
	return os.LookupEnv(name)
}

// maxConf bounds what is read of a config file.
const maxConf = 1 << 20

// confValue is name's value in the NCCL config file at path as NCCL reads
// it: its first NAME=value line, a line that begins with '#' a comment, and
// nothing but the '\n' dropped. A file that is not a regular one (a FIFO,
// which would block, or /dev/zero, which never ends) is not read.
func confValue(path, name string) (string, bool) {
	if fi, err := os.Stat(path); err != nil || !fi.Mode().IsRegular() { // before open, where a FIFO blocks
		return "", false
	}
	f, err := os.Open(path)
	if err != nil {
		return "", false
	}
	defer f.Close()
	data, _ := io.ReadAll(io.LimitReader(f, maxConf))
	for _, line := range strings.Split(string(data), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok && k == name && !strings.HasPrefix(line, "#") {
			return v, true
		}
	}
	return "", false
}

// paramInt is a variable as NCCL reads an integer setting
// (space.ParamInt), def where NCCL keeps its default.
func (o Options) paramInt(name string, def int64) int64 {
	if n, ok := space.ParamInt(o.getenv(name)); ok {
		return n
	}
	return def
}

func (o Options) modules() (map[string]bool, error) {
	data, err := os.ReadFile(o.Root + "/proc/modules")
	return Modules(string(data)), err
}

// loaded reports whether kernel module name is loaded, by mods (from
// /proc/modules) or /sys/module: a module built into the kernel has no line
// in /proc/modules, but a directory in /sys/module as a loaded one has, and
// a sandboxed container may show /sys/module where it hides /proc/modules.
// A module's directory stays while it unloads: its initstate (which a
// built-in one lacks) says "going" then, and "live" once loaded.
func (o Options) loaded(mods map[string]bool, name string) bool {
	if live, listed := mods[name]; listed {
		return live
	}
	dir := o.Root + "/sys/module/" + name
	if state, err := os.ReadFile(dir + "/initstate"); err == nil {
		return strings.TrimSpace(string(state)) == "live"
	}
	_, err := os.Stat(dir)
	return err == nil
}

func checkDrivers(_ context.Context, o Options, f *facts) Result {
	r := Result{Layer: "hardware", Check: "mlx5 driver"}
	if len(f.activePorts) == 0 {
		r.Status, r.Detail = Skip, "no active RDMA port"
		return r
	}
	if !slices.ContainsFunc(f.activePorts, func(p Port) bool { return o.mlx5(p.CA) }) {
		r.Status, r.Detail = Skip, "no active port is an mlx5 one (another vendor's NIC)"
		return r
	}
	mods, err := o.modules()
	switch {
	case o.loaded(mods, "mlx5_core") && o.loaded(mods, "mlx5_ib"):
		r.Status, r.Detail = OK, "mlx5_core and mlx5_ib loaded"
	case err != nil:
		r.Status, r.Detail = Skip, "cannot read /proc/modules"
	default:
		r.Status, r.Detail, r.Fix = Warn, "mlx5_ib not loaded", "modprobe mlx5_ib (or install the vendor OFED)"
	}
	return r
}

// mlx5 reports whether HCA ca is one mlx5_core runs (a ConnectX, BlueField):
// by its driver in sysfs, since rdma-core's udev rule names an HCA by its
// PCI address (rocep65s0f0, ibp12s0) rather than mlx5_N; by its name where
// sysfs does not say.
func (o Options) mlx5(ca string) bool {
	if link, err := os.Readlink(o.Root + "/sys/class/infiniband/" + ca + "/device/driver"); err == nil {
		return strings.HasPrefix(filepath.Base(link), "mlx5_core") // mlx5_core.sf for a sub-function
	}
	return strings.HasPrefix(ca, "mlx5")
}

func checkPeermem(_ context.Context, o Options, f *facts) Result {
	r := Result{Layer: "hardware", Check: peermemCheck}
	mods, err := o.modules()
	switch {
	case o.loaded(mods, "nvidia_peermem") || o.loaded(mods, "nv_peer_mem"):
		r.Status, r.Detail = OK, "nvidia_peermem loaded: NICs can read and write GPU memory directly"
	case len(f.activePorts) == 0:
		r.Status, r.Detail = Skip, "no active RDMA port; GPUDirect RDMA is moot"
	case o.dmabuf():
		r.Status, r.Detail = OK, "nvidia_peermem not loaded, but the open GPU kernel module on Linux 5.12 or later gives NICs GPU memory through DMA-BUF"
		r.Fix = "NCCL uses DMA-BUF by itself (unless NCCL_DMABUF_ENABLE=0); its log says \"DMA-BUF is available\""
	case err != nil:
		r.Status, r.Detail = Skip, "cannot read /proc/modules"
	default:
		r.Status, r.Detail, r.Fix = Warn, "nvidia_peermem not loaded, and no DMA-BUF (it needs the open GPU kernel module and Linux 5.12 or later): inter-node traffic is staged through host memory",
			"modprobe nvidia_peermem, or install the open GPU kernel module (Linux 5.12 or later) for DMA-BUF"
	}
	return r
}

// dmabuf reports whether GPU memory can be shared with NICs through DMA-BUF,
// which CUDA offers with the open GPU kernel module on Linux 5.12 or later.
func (o Options) dmabuf() bool {
	version, err1 := os.ReadFile(o.Root + "/proc/driver/nvidia/version")
	release, err2 := os.ReadFile(o.Root + "/proc/sys/kernel/osrelease")
	var major, minor int
	if err1 != nil || err2 != nil || !bytes.Contains(version, []byte("Open Kernel Module")) {
		return false
	}
	if _, err := fmt.Sscanf(string(release), "%d.%d", &major, &minor); err != nil {
		return false
	}
	return major > 5 || major == 5 && minor >= 12
}

// checkMemlock reads the locked-memory limit (ulimit -l) this process, and
// so a rank started alike, runs under: RDMA pins the buffers it registers,
// and under a small limit (a container's default) NCCL's IB transport fails
// to register them.
func checkMemlock(_ context.Context, o Options, f *facts) Result {
	r := Result{Layer: "hardware", Check: "locked memory (ulimit -l)"}
	if len(f.activePorts) == 0 {
		r.Status, r.Detail = Skip, "no active RDMA port"
		return r
	}
	data, err := os.ReadFile(o.Root + "/proc/self/limits")
	soft, hard, ok := MemlockLimits(string(data))
	switch {
	case err != nil || !ok:
		r.Status, r.Detail = Skip, "cannot read /proc/self/limits"
	case soft == "unlimited":
		r.Status, r.Detail = OK, "unlimited"
	default:
		r.Status, r.Detail = Warn, limitText(soft)+" (soft), "+limitText(hard)+" (hard)"
		r.Fix = "RDMA pins the memory it registers: raise it to unlimited (ulimit -l unlimited; memlock in /etc/security/limits.conf, docker run --ulimit memlock=-1, Slurm's PropagateResourceLimits)"
	}
	return r
}

// limitText writes a limit from /proc/self/limits in MiB where it is a whole number of them.
func limitText(v string) string {
	n, err := strconv.ParseInt(v, 10, 64)
	switch {
	case err != nil:
		return v
	case n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	default:
		return fmt.Sprintf("%d bytes", n)
	}
}

func checkOMPI(ctx context.Context, o Options, _ *facts) Result {
	r := Result{Layer: "hardware", Check: "Open MPI CUDA support (ompi_info)"}
	out, err := o.Exec(ctx, "ompi_info", "--parsable", "--all")
	if missing(err) {
		r.Status, r.Detail = Skip, "ompi_info not found"
		return r
	}
	cuda, known := OMPICUDA(string(out))
	switch {
	case !known && err != nil:
		r.Status, r.Detail = Skip, "ompi_info failed: "+summary(out, err)
	case !known:
		r.Status, r.Detail = Skip, "ompi_info does not say"
	case cuda:
		r.Status, r.Detail = OK, "built with CUDA support"
	default:
		r.Status, r.Detail = Warn, "built without CUDA support"
		r.Fix = "harmless for NCCL (it moves GPU data itself), but MPI calls on GPU buffers will fail"
	}
	return r
}

func checkMaster(ctx context.Context, _ Options, _ *facts) Result {
	r := Result{Layer: "hardware", Check: masterCheck}
	host := os.Getenv("MASTER_ADDR")
	if host == "" {
		r.Status, r.Detail = Skip, "MASTER_ADDR not set"
		return r
	}
	port := os.Getenv("MASTER_PORT")
	if port == "" {
		port = "29500"
	}
	conn, err := (&net.Dialer{Timeout: 3 * time.Second}).DialContext(ctx, "tcp", net.JoinHostPort(host, port))
	var opErr *net.OpError
	switch {
	case err == nil:
		conn.Close()
		r.Status, r.Detail = OK, "something listens on "+host+":"+port
	case errors.As(err, &opErr) && strings.Contains(err.Error(), "refused"):
		// A firewall that rejects (rather than drops) answers so too: the
		// route is there, but such a firewall would refuse the job's port.
		r.Status, r.Detail = OK, host+":"+port+" refused the connection: nothing listens yet (expected before a job starts), or a firewall on the way rejects the port"
	default:
		r.Status, r.Detail, r.Fix = Fail, err.Error(), "check the address, routes and firewalls between nodes"
	}
	return r
}

// NCCL runs the tiny all-reduce (o.NCCLTest, through o.Launcher) and judges
// the transport NCCL chose against the fabric.
func NCCL(ctx context.Context, o Options, f Hardware) Result {
	r := Result{Layer: "nccl", Check: "tiny all-reduce (NCCL_DEBUG=INFO)"}
	if o.Probe == nil {
		r.Status, r.Detail = Skip, "no nccl-tests binary configured (give --space with benchmark.binary)"
		return r
	}
	launcher := o.Launcher
	if launcher == nil {
		launcher = runner.Local{}
	}
	job := *o.Probe
	job.Env = append(append([]string{}, o.Env...), "NCCL_DEBUG=INFO", "NCCL_DEBUG_SUBSYS=INIT,ENV,NET,GRAPH")
	if job.Timeout == 0 {
		job.Timeout = 2 * time.Minute
	}
	rn := &runner.Runner{Launcher: launcher, BaseEnv: runner.BaseEnv()}
	res := rn.Run(ctx, job)
	if res.Failure != nil {
		r.Status, r.Detail, r.Fix = Fail, res.Failure.Error(), "run it by hand with NCCL_DEBUG=INFO: "+strings.Join(res.Command, " ")
		return r.Bounded()
	}
	return judgeNCCL(r, res.Log, job.Env, res.Measurement.Ranks, f)
}

// judgeNCCL compares what NCCL chose with what the fabric checks say it
// should, and names what NCCL read that env, the probe's, does not set.
func judgeNCCL(r Result, log nccllog.Log, env []string, ranks int, f Hardware) Result {
	net := log.Network
	if net == "" {
		net = "none (one node, or not logged)"
	}
	r.Detail = fmt.Sprintf("NCCL %s, %s, network %s, GPUDirect RDMA %v, %s", orDash(log.Version), text.Count(ranks, "rank", "ranks"), net, log.GDR, text.Count(log.Channels, "channel", "channels"))
	r.Status = OK
	switch {
	case !log.Debug:
		// NCCL_DEBUG=INFO was set, so NCCL printed elsewhere or not at all.
		r.Status = Warn
		r.Detail = "NCCL printed no INFO line under NCCL_DEBUG=INFO: " + r.Detail
		r.Fix = "NCCL_DEBUG_FILE set in NCCL_CONF_FILE, ~/.nccl.conf or /etc/nccl.conf (NCCL reads them where the environment is silent) sends NCCL's log to a file, or the benchmark is not NCCL's: every trial reads NCCL's log for what it chose and read, and its fabric is unjudged here; remove NCCL_DEBUG_FILE there"
	case f.RDMA && log.Network == "Socket":
		r.Status = Fail
		r.Fix = "RDMA ports are active but NCCL used sockets: check NCCL_IB_HCA, NCCL_IB_DISABLE, NCCL_NET and that libibverbs is installed"
	// On one node no GPU connects to a NIC, and NCCL has no GPUDirect RDMA to log.
	case f.RDMA && log.Network != "" && !log.GDR && f.Peermem && log.Nodes != 1:
		r.Status = Warn
		r.Fix = "NCCL uses the NICs without GPUDirect RDMA although the node offers it (nvidia_peermem or DMA-BUF): the GPU-NIC PCI distance may exceed NCCL_NET_GDR_LEVEL (try PHB)"
	case ranks == 1:
		r.Status = Warn
		r.Fix = "the probe ran one rank, which sends nothing: NCCL chooses no algorithm or protocol and a collective is a local copy; run the benchmark on 2 GPUs or more (benchmark.gpus, the launcher's ranks) to tune anything"
	}
	for _, n := range log.Notes {
		if strings.Contains(n, "No capable device") || strings.Contains(n, "ib0") && log.Network == "Socket" {
			if r.Status == OK {
				r.Status = Warn
			}
			r.Detail += "; " + n
		}
	}
	if inherited := log.Inherited(env); len(inherited) > 0 {
		r.Detail += "; NCCL also read " + strings.Join(inherited, ", ") +
			" (NCCL_CONF_FILE, ~/.nccl.conf, /etc/nccl.conf or the ranks' own environment): every trial runs with them, and no export carries them"
	}
	return r.Bounded()
}

func checkFramework(ctx context.Context, o Options, _ *facts) Result {
	r := Result{Layer: "framework", Check: "torch.distributed all_reduce"}
	if o.Python == "" {
		r.Status, r.Detail = Skip, "no python configured"
		return r
	}
	// A world of one needs no rendezvous: an in-process store, not env://,
	// whose MASTER_ADDR names another node in a job's environment.
	script := `import torch, torch.distributed as dist
cuda = torch.cuda.is_available()
dist.init_process_group("nccl" if cuda else "gloo", store=dist.HashStore(), rank=0, world_size=1)
t = torch.ones(1024, device="cuda" if cuda else "cpu")
dist.all_reduce(t)
print("` + frameworkOK + ` torch", torch.__version__, "backend", "nccl %s" % ".".join(map(str, torch.cuda.nccl.version())) if cuda else "gloo", "sum", float(t[0]))
dist.destroy_process_group()`
	out, err := o.Exec(ctx, o.Python, "-c", script)
	switch {
	case missing(err):
		r.Status, r.Detail = Skip, o.Python+" not found"
	case bytes.Contains(out, []byte(noTorch)):
		r.Status, r.Detail = Skip, "PyTorch is not installed for "+o.Python
	case err != nil || !bytes.Contains(out, []byte(frameworkOK)):
		r.Status, r.Detail, r.Fix = Fail, summary(out, err), "run the DDP step by hand to see the full error"
	default:
		// The rest of the script's line: output can follow it (NCCL's own,
		// with NCCL_DEBUG set, which libc flushes at exit).
		_, after, _ := bytes.Cut(out, []byte(frameworkOK))
		line, _, _ := bytes.Cut(after, []byte("\n"))
		r.Status, r.Detail = OK, strings.TrimSpace(string(line))
	}
	return r
}

// maxDetail bounds a result's detail: it goes into the node's report,
// which the fan-out reads back through the launcher's bounded output, and
// into the report.
const maxDetail = 4 << 10

// maxSummary bounds a summary: it goes into the node's report,
// which the fan-out reads back through the launcher's bounded output.
const maxSummary = 500

// summary is the last line of a tool's output (where errors end up), or the
// error, or "no output" from a tool that ended well and said nothing.
func summary(out []byte, err error) string {
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	last := strings.TrimSpace(lines[len(lines)-1])
	switch {
	case last == "" && err != nil || errors.Is(err, errNoAnswer):
		return err.Error()
	case last == "":
		return "no output"
	}
	return clip(last, maxSummary)
}

// clip is s cut to n bytes at most, and "…" where it is cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return text.Prefix(s, n) + "…"
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// GroupsAlike compares launcher.groups' groups of nodes, given each group's
// nodes' results: trials that ran on different groups are compared with one
// another, so the groups must be of one kind. Each node is known by its
// hardware checks' verdicts (GPUs, ports, drivers, ...).
func GroupsAlike(groups [][][]Result) Result {
	r := Result{Layer: "hardware", Check: GroupsCheck}
	if len(groups) == 0 || len(groups[0]) == 0 {
		r.Status, r.Detail = Skip, "the groups name no nodes (each is a simulated cluster of its own)"
		return r
	}
	kinds := make([][]string, len(groups))
	for g, nodes := range groups {
		for _, results := range nodes {
			kinds[g] = append(kinds[g], nodeKind(results))
		}
		slices.Sort(kinds[g])
	}
	var differ []string
	for g := 1; g < len(groups); g++ {
		if !slices.Equal(kinds[g], kinds[0]) {
			differ = append(differ, fmt.Sprintf("group %d (%s) differs from group 0 (%s)", g, strings.Join(kinds[g], "; "), strings.Join(kinds[0], "; ")))
		}
	}
	if len(differ) > 0 {
		r.Status, r.Detail = Warn, strings.Join(differ, "; ")
		r.Fix = "give launcher.groups nodes of one kind (srun --constraint, or a hostfile of like hosts): a trial's score depends on its group's hardware"
		return r
	}
	r.Status, r.Detail = OK, fmt.Sprintf("%s of %s, each: %s", text.Count(len(groups), "group", "groups"), text.Count(len(kinds[0]), "node", "nodes"), strings.Join(slices.Compact(slices.Clone(kinds[0])), "; "))
	return r
}

// nodeKind is one node's hardware as its checks saw it; the MASTER_ADDR
// check is about the network's names, not the node.
func nodeKind(results []Result) string {
	var parts []string
	for _, r := range results {
		if r.Layer == "hardware" && r.Check != masterCheck && r.Status != Skip {
			parts = append(parts, fmt.Sprintf("%s: %s %s", r.Check, r.Status, r.Detail))
		}
	}
	if len(parts) == 0 {
		return "no hardware checked"
	}
	return strings.Join(parts, ", ")
}
