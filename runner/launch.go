package runner

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/nccltune/nccltune/internal/text"
	"github.com/nccltune/nccltune/runner/nccltests"
	"github.com/nccltune/nccltune/space"
)

// Launcher turns a benchmark command into the command that starts it on every
// rank, passing the trial's variables to all of them.
type Launcher interface {
	Wrap(cmd, env []string) ([]string, error)
}

// Local starts the benchmark directly on this node; its variables reach it
// through the process environment.
type Local struct{}

// Wrap returns cmd unchanged.
func (Local) Wrap(cmd, _ []string) ([]string, error) { return cmd, nil }

// An ExitReader is a launcher whose own exit status may not be the failed
// rank's: RankExit reads from the launch's output how the first rank to
// fail ended (e, the launcher's, where it cannot tell).
type ExitReader interface {
	RankExit(output []byte, e Exit) Exit
}

// A FailedRankReader is a launcher that can run on past a rank that failed
// until the trial's timeout (torchrun on several nodes, whose agent waits
// at its exit barrier for the others'): FailedRank is how the first rank
// to fail ended, as output, what the launch printed before the timeout,
// says; false where it says none failed.
type FailedRankReader interface {
	FailedRank(output []byte) (Exit, bool)
}

// A DetailReader is a launcher whose output can say, better than its last
// line, what made its failed rank fail: FailureDetail is that ("" where it
// does not say), which a benchmark gives as the detail of a failed trial.
type DetailReader interface {
	FailureDetail(output []byte) string
}

// A LaunchReader is a launcher that can fail before any rank runs, with an
// exit status of its own that a benchmark would read as a rank's (srun's 1
// is nccl-tests' "internal error"): LaunchFailure is the launcher's own
// error where its output says so, "" where the ranks ran.
type LaunchReader interface {
	LaunchFailure(output []byte, e Exit) string
}

// An EnvFilter is a launcher that reads some of its options from its own
// environment, which a trial's launcher inherits from nccltune's caller:
// LauncherEnv drops from env the variables that would set what the space
// says (how many ranks, where, how they run), or hide the output nccltune reads.
type EnvFilter interface {
	LauncherEnv(env []string) []string
}

// without is env less the variables named in names.
func without(env []string, names []string) []string {
	return slices.DeleteFunc(slices.Clone(env), func(kv string) bool {
		name, _, _ := strings.Cut(kv, "=")
		return slices.Contains(names, name)
	})
}

// inStep reports whether env is that of a task of a Slurm step (nccltune
// started by srun): srun sets SLURM_STEP_ID in each of its tasks, salloc and
// a batch script have none.
func inStep(env []string) bool {
	return slices.ContainsFunc(env, func(kv string) bool { return strings.HasPrefix(kv, "SLURM_STEP_ID=") })
}

// outerStep are the variables by which srun describes, to each task of its
// step, that step and the task's place in it (src/common/env.c): inherited
// by a trial's launcher where nccltune runs in such a task, a trial's srun
// takes SLURM_DISTRIBUTION as its own -m (ranks placed cyclically where
// they would be in blocks), and its ranks see the other step's task IDs.
// Every SLURM_STEP_* (the step's GPUs and reserved ports too) is the
// step's as well.
var outerStep = []string{
	"SLURM_STEPID", "SLURM_SRUN_COMM_HOST", "SLURM_SRUN_COMM_PORT",
	"SLURM_PROCID", "SLURM_LOCALID", "SLURM_NODEID", "SLURM_GTIDS", "SLURM_TASK_PID", "SLURM_DISTRIBUTION",
}

// withoutOuterLaunch is env less what an outer launcher told nccltune's
// own process, where nccltune runs as one of its ranks: the step nccltune
// runs in a task of (outerStep), the Open MPI job it is a rank of
// (outerMPIJob), and the rank's process management wiring (pmiWiring,
// and PMIx's: PMIX_RANK, PMIX_SERVER_URI..., of srun --mpi=pmix or Open
// MPI), which reach every rank that a trial's launcher wires no other way
// (the local launcher's, torchrun's, srun --mpi=none) as one of that outer
// launch's ranks. It holds for every launcher (Runner.Run). PMIx's MCA
// parameters (PMIX_MCA_*) and the PMI variables the user sets (Cray PMI's
// PMI_NO_FORK, srun's PMI_FANOUT) are settings, not wiring, and stay.
// Outside an outer launch nothing goes: a batch script's
// SLURM_DISTRIBUTION is sbatch -m's, the allocation's. env itself is left
// as it is.
func withoutOuterLaunch(env []string) []string {
	has := func(name string) bool {
		return slices.ContainsFunc(env, func(kv string) bool { return strings.HasPrefix(kv, name+"=") })
	}
	step, mpiJob := inStep(env), has("OMPI_COMM_WORLD_SIZE")
	pmi := has("PMI_RANK") || has("PMI_ID") || has("PALS_RANKID")
	if !step && !mpiJob && !pmi {
		return slices.Clone(env)
	}
	interactive := slices.Contains(env, "SLURM_STEP_ID="+interactiveStep)
	return slices.DeleteFunc(slices.Clone(env), func(kv string) bool {
		name, _, _ := strings.Cut(kv, "=")
		switch {
		case slices.Contains(pmiWiring, name), pmixWiring(name):
			return true
		case step && (slices.Contains(outerStep, name) || strings.HasPrefix(name, "SLURM_STEP_")):
			return true
		case step && outerTaskCPUs(name, interactive):
			return !slices.Contains(bindings, name) || setBySrun(env, name)
		}
		return mpiJob && outerMPIJob(name)
	})
}

// bindings are srun's input variables for a step's binding, --cpu-bind's
// and --mem-bind's defaults.
var bindings = []string{"SLURM_CPU_BIND", "SLURM_MEM_BIND"}

// setBySrun reports whether env's binding variable name (one of bindings)
// is the one srun set in a task of its step, with its parts beside it
// (src/common/env.c: SLURM_CPU_BIND=quiet,mask_cpu:0x3 is
// SLURM_CPU_BIND_VERBOSE "," SLURM_CPU_BIND_TYPE SLURM_CPU_BIND_LIST, and
// --mem-bind=prefer's SLURM_MEM_BIND=quiet,prefer,map_mem:0 has
// SLURM_MEM_BIND_PREFER "," before the type; 22.05), rather than the
// user's own, exported in that task's shell after (srun --pty bash; export
// SLURM_CPU_BIND=none), which their job's srun there takes.
func setBySrun(env []string, name string) bool {
	bind, ok := lookup(env, name)
	verbose, hasVerbose := lookup(env, name+"_VERBOSE")
	typ, hasType := lookup(env, name+"_TYPE")
	list, _ := lookup(env, name+"_LIST")
	if prefer, hasPrefer := lookup(env, name+"_PREFER"); hasPrefer {
		typ = prefer + "," + typ
	}
	return ok && hasVerbose && hasType && bind == verbose+","+typ+list
}

// lookup is env's value of the variable name, as os.LookupEnv's.
func lookup(env []string, name string) (string, bool) {
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, name+"="); ok {
			return v, true
		}
	}
	return "", false
}

// pmiWiring are the variables by which a process manager wires each rank
// into its job for PMI-1 and PMI-2 (a rank of which, PMI_RANK, PMI_ID or
// PALS_RANKID, marks an outer launch): Hydra's (src/pm/hydra, pmip_cb.c:
// PMI_RANK, PMI_FD and PMI_SIZE, or PMI_PORT and PMI_ID, with
// MPI_LOCALRANKID and MPI_LOCALNRANKS; PMI_SPAWNED in a spawned job's),
// srun --mpi=pmi2's (PMI_FD, PMI_JOBID, PMI_RANK, PMI_SIZE, as 22.05 sets
// them), and HPE Cray PMI's under srun --mpi=cray_shasta, Flux or PALS's
// own mpiexec: PALS_* (PALS_APINFO, the step's layout; PALS_FD, PALS_DEPTH
// and PALS_LOCAL_SIZE too under PALS, as pals.h lists them) and, in later
// Slurm, PMI_JOBID, PMI_LOCAL_RANK, PMI_LOCAL_SIZE, PMI_UNIVERSE_SIZE,
// PMI_CONTROL_PORT and PMI_SHARED_SECRET. Any other PMI_* is the user's,
// which srun hands every task as given: Cray PMI's PMI_NO_FORK,
// PMI_MMAP_SYNC_WAIT_TIME, srun's own PMI_FANOUT, PMI_TIME.
var pmiWiring = []string{
	"PMI_RANK", "PMI_FD", "PMI_SIZE", "PMI_PORT", "PMI_ID", "PMI_SPAWNED", "MPI_LOCALRANKID", "MPI_LOCALNRANKS",
	"PMI_JOBID", "PMI_LOCAL_RANK", "PMI_LOCAL_SIZE", "PMI_UNIVERSE_SIZE", "PMI_CONTROL_PORT", "PMI_SHARED_SECRET",
	"PALS_APID", "PALS_APINFO", "PALS_RANKID", "PALS_NODEID", "PALS_LOCAL_RANKID", "PALS_SPOOL_DIR",
	"PALS_FD", "PALS_DEPTH", "PALS_LOCAL_SIZE",
}

// interactiveStep is the ID of the step in which salloc runs its shell
// under LaunchParameters=use_interactive_step (SLURM_INTERACTIVE_STEP).
const interactiveStep = "4294967290"

// outerTaskCPUs reports whether name is one of the variables by which srun
// gives each task of its step the CPUs, binding and frequency the step
// asked for (srun -c 2 --cpu-bind=cores nccltune ...; src/common/env.c):
// the outer step's, overwriting the allocation's SLURM_CPUS_PER_TASK. A
// trial's srun reads them as its own options (SLURM_CPUS_PER_TASK as -c
// before 22.05 and again from 23.11, SLURM_TRES_PER_TASK, SLURM_CPU_BIND,
// SLURM_MEM_BIND, SLURM_CPU_FREQ_REQ), as does the srun that Open MPI's
// mpirun or torchrun's wrapper runs, and srun --export=ALL hands every rank
// the rest as its own. The SRUN_CPUS_PER_TASK the job exported, which
// srun does not set in a task (nor do 22.05's salloc and sbatch), stays;
// so do the CPUs per task in salloc's interactive step, which asks for
// none of its own: they are salloc's; and so does a binding the user
// exported in the task's shell (setBySrun).
func outerTaskCPUs(name string, interactive bool) bool {
	switch name {
	case "SLURM_CPUS_PER_TASK", "SLURM_TRES_PER_TASK":
		return !interactive
	case "SLURM_CPU_FREQ_REQ":
		return true
	}
	return strings.HasPrefix(name, "SLURM_CPU_BIND") || strings.HasPrefix(name, "SLURM_MEM_BIND")
}

// pmixWiring reports whether a variable (its name, or NAME=value) is PMIx's
// wiring of a rank into its job, not a setting: one of PMIx's MCA
// parameters (PMIX_MCA_*), or PMIX_INSTALL_PREFIX, where a relocated or
// external PMIx is installed, which Open MPI reads (as OPAL_PREFIX) and
// its mpirun sets in no rank (4.1.4).
func pmixWiring(name string) bool {
	return strings.HasPrefix(name, "PMIX_") && !strings.HasPrefix(name, "PMIX_MCA_") && name != "PMIX_INSTALL_PREFIX"
}

// Checker is implemented by launchers that can find problems before any trial
// runs: a missing binary or hostfile, a rank count that does not fit.
type Checker interface {
	Check() error
}

// MPIRun starts the benchmark's ranks with mpirun. Every trial variable is
// passed to every rank on every node: Open MPI's -x NAME (the value is taken
// from mpirun's environment, so no value is ever re-parsed by a shell or
// split at a comma), MPICH's and Intel MPI's -genv NAME VALUE.
type MPIRun struct {
	Flavor   string // "openmpi" (default) or "mpich" (also Intel MPI)
	Command  string // the mpirun binary; default "mpirun"
	NP       int    // ranks; 0 leaves it to mpirun (hostfile or allocation)
	Hostfile string
	MapBy    string
	BindTo   string
	Args     []string // extra launcher arguments, before the benchmark
	// Hosts, instead of Hostfile, lists the hosts (one group's of launcher.groups).
	Hosts []Host
}

func (m MPIRun) command() string { return or(m.Command, "mpirun") }

// or is s, or def when s is empty.
func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// Wrap builds the mpirun command line.
func (m MPIRun) Wrap(cmd, env []string) ([]string, error) {
	argv := []string{m.command()}
	if m.NP > 0 {
		argv = append(argv, "-np", strconv.Itoa(m.NP))
	}
	openmpi := m.Flavor != "mpich"
	if m.Hostfile != "" {
		flag := "--hostfile"
		if !openmpi {
			flag = "-f"
		}
		argv = append(argv, flag, m.Hostfile)
	}
	if len(m.Hosts) > 0 {
		flag, hosts := "-hosts", m.Hosts
		if openmpi {
			// The hosts as Open MPI reads a hostfile's (ompiHostKey), the
			// names it knows them by under Slurm: its --host takes a name
			// as written and finds n2.cluster or alice@n3 in no allocation
			// ("All nodes which are allocated for this job are already
			// filled"; 4.1.4), where a hostfile's line of it runs on n3.
			flag, hosts = "--host", slices.Clone(hosts)
			for i := range hosts {
				hosts[i].Name = ompiHostKey(hosts[i].Name)
			}
		}
		argv = append(argv, flag, hostList(hosts))
	}
	if m.MapBy != "" {
		argv = append(argv, "--map-by", m.MapBy)
	}
	if m.BindTo != "" {
		flag := "--bind-to"
		if !openmpi {
			flag = "-bind-to"
		}
		argv = append(argv, flag, m.BindTo)
	}
	for _, kv := range env {
		name, value, ok := strings.Cut(kv, "=")
		if !ok {
			return nil, fmt.Errorf("mpirun: malformed variable %q", kv)
		}
		if openmpi {
			argv = append(argv, "-x", name)
		} else {
			argv = append(argv, "-genv", name, value)
		}
	}
	argv = append(argv, m.Args...)
	if len(m.Hosts) > 0 {
		// A group's ranks meet where its rank 0 runs, its first host: a
		// MASTER_ADDR of launcher.args or of the job's shell (which MPICH
		// hands every rank) is one for every group, where the ranks of the
		// others waited for a rank 0 of theirs until the trial's timeout.
		// After launcher.args: mpirun takes the last. The host's address
		// is its name less a user to log in as (alice@n3: n3).
		addr := m.Hosts[0].Name
		addr = addr[strings.LastIndexByte(addr, '@')+1:]
		if openmpi {
			argv = append(argv, "-x", "MASTER_ADDR="+addr)
		} else {
			argv = append(argv, "-genv", "MASTER_ADDR", addr)
		}
	}
	return append(argv, cmd...), nil
}

// mpirunLaunchErrors are in Open MPI's reports that it started no rank or
// not all of them (4's mpirun, 5's prterun): the executable not found or not
// executable on a node (mpirun exits 132, which reads as a rank killed by
// SIGILL), too few slots (exit 1, nccl-tests' "internal error"), daemons
// that did not start; ranks it would not map or bind as launcher.map_by,
// bind_to or args ask (an unknown policy, more ranks bound than cores, more
// cores per rank than there are; help-orte-rmaps-base.txt,
// help-orte-odls-default.txt), daemons that died before they called back
// (under Slurm, started by a srun whose output mpirun discards), a run as
// root without Open MPI's consent
// (OMPI_ALLOW_RUN_AS_ROOT), an option it does not know (`mpirun:
// Error: unknown option "--foo"`), and hosts it refuses, each exit 1 too; an execve that failed
// past Open MPI's own checks (a script's interpreter missing), exit 131,
// which reads as a rank killed by SIGQUIT; and the count of ranks that did
// not start, which follows any report of it, also one not listed here.
var mpirunLaunchErrors = []string{
	`tried to fork a new process via the "execve" system call but`, "was unable to start the specified application",
	"total processes failed to start", "total process failed to start",
	"was unable to launch the specified application", "was unable to find the specified executable file",
	"There are not enough slots available in the system", "was unable to reliably start one or more daemons",
	"daemon has unexpectedly failed after launch",
	"has detected an attempt to run as root", "Error: unknown option",
	"policy is not recognized:", "An unrecognized value was given for the number of processes",
	"The mapping request contains", "A request for multiple cpus-per-proc was given",
	"A request was made to bind to that would result in binding more", "Your job failed to map.",
	"Your job has requested a conflicting number of processes", "Your job has requested more cpus per process",
	"we found no available cpus on", "without launching the target application",
	// Hosts it refuses (help-hostfile.txt, help-dash-host.txt): a
	// hostfile's line it cannot parse or a host's slots given twice, a host
	// of the hostfile or --host (launcher.groups) not in the Slurm
	// allocation it runs in (4.1's mapper finds no slot on the others:
	// help-orte-rmaps-base.txt).
	"detected a parse error in the hostfile", "A hostfile was provided that contains",
	"not included in the current allocation", "All nodes which are allocated for this job are already filled.",
}

// LaunchFailure is Open MPI's report that it could not start the ranks,
// its paragraph on one line.
func (MPIRun) LaunchFailure(output []byte, e Exit) string {
	if e.Code == 0 || e.Signal != 0 {
		return ""
	}
	lines := strings.Split(string(output), "\n")
	for i, line := range lines {
		if !slices.ContainsFunc(mpirunLaunchErrors, func(m string) bool { return strings.Contains(line, m) }) {
			continue
		}
		// From the paragraph's first line: the words may stand further in.
		for i > 0 && strings.TrimSpace(lines[i-1]) != "" && !strings.HasPrefix(strings.TrimSpace(lines[i-1]), "-----") {
			i--
		}
		var para []string
		for _, l := range lines[i:] {
			l = strings.TrimSpace(l)
			if l == "" || strings.HasPrefix(l, "-----") {
				break
			}
			para = append(para, l)
		}
		return clip(strings.Join(para, " "))
	}
	return ""
}

// FailureDetail is the last line with words that the ranks printed before
// mpirun's reports at the output's end, each framed by rules of '-' (Open
// MPI's "mpirun detected that one or more processes exited with non-zero
// status ... Exit code: 1") or '=' (Hydra's "BAD TERMINATION ..."), NCCL's
// INFO lines aside: the output's last line was the report's "Exit code:
// 1", which says nothing of why. "" where there is none.
func (MPIRun) FailureDetail(output []byte) string {
	// A report's rule: torchrun's kind (isRule), or Open MPI's of '-'.
	reportRule := func(l string) bool { return len(l) >= 10 && (isRule(l) || strings.Trim(l, "-") == "") }
	lines := strings.Split(string(output), "\n")
	i := len(lines) - 1
	for i >= 0 {
		// A rank's NCCL INFO line can come between Open MPI's reports
		// (ranks' output and mpirun's own arrive apart), never its last words.
		line := strings.TrimSpace(lines[i])
		if line != "" && !reportRule(line) && !strings.Contains(line, " NCCL INFO ") && !slices.Contains(hydraClosing, line) && !hydraSignalRE.MatchString(line) {
			break
		}
		if reportRule(line) { // a report's closing rule: pass over it to its opening one
			open := i - 1
			for ; open >= 0 && !reportRule(strings.TrimSpace(lines[open])); open-- {
			}
			if open < 0 {
				break // none: the rule is the rank's own, printed after its last words
			}
			i = open
		}
		i--
	}
	for ; i >= 0; i-- {
		if line := strings.TrimSpace(lines[i]); saysSomething(line) && !strings.Contains(line, " NCCL INFO ") {
			return clip(line)
		}
	}
	return ""
}

// Hydra (MPICH's and Intel MPI's mpiexec) reports the first rank to fail
// between rules of '=', "=   EXIT CODE: 3" or Intel MPI's "=   KILLED BY
// SIGNAL: 6 (Aborted)", and exits with the OR of every rank's wait status
// (src/pm/hydra/mpiexec/mpiexec.c), not 128+N: 6 for a rank killed by
// SIGABRT (nccl-tests' "invalid usage"), 9 for one that exited 3 while its
// cleanup killed the others. Where that OR reads as a signal, it says so
// below the report, then closes with hydraClosing.
var (
	hydraKilledRE = regexp.MustCompile(`(?m)^=\s+KILLED BY SIGNAL: ([0-9]+)`)
	hydraExitRE   = regexp.MustCompile(`(?m)^=\s+EXIT CODE: ([0-9]+)`)
	hydraSignalRE = regexp.MustCompile(`(?m)^(?:YOUR )?APPLICATION TERMINATED WITH THE EXIT STRING: .*\(signal ([0-9]+)\)\s*$`)
	hydraClosing  = []string{"This typically refers to a problem with your application.", "Please see the FAQ page for debugging suggestions"}
)

// RankExit is how the first rank to fail ended, as Hydra reports it (see
// hydraExitRE): a signal where its report names one, or its exit status
// where that is not the signal Hydra's own status reads as (an exit of 139
// is 128+11 as a shell's). Open MPI's mpirun exits with the failed rank's
// status itself.
func (m MPIRun) RankExit(output []byte, e Exit) Exit {
	if m.Flavor != "mpich" || e.Code == 0 || e.Signal != 0 {
		return e
	}
	first := func(re *regexp.Regexp) int {
		n := 0
		if sub := re.FindSubmatch(output); sub != nil {
			n, _ = strconv.Atoi(string(sub[1]))
		}
		return n
	}
	killed, code, signal := first(hydraKilledRE), first(hydraExitRE), first(hydraSignalRE)
	switch {
	case killed > 0 && killed <= maxSignal:
		return Exit{Code: -1, Signal: syscall.Signal(killed)}
	case code > 0 && code <= maxSignal && signal&code == code:
		// MPICH 3.2 on reports only a rank a signal killed, by its wait
		// status, whose bits the ranks' OR holds (6 in 6|9, SIGABRT's and
		// the cleanup's SIGKILL); 3.0 and 3.1 also a rank's exit status,
		// which the OR holds above them.
		return Exit{Code: -1, Signal: syscall.Signal(code)}
	case code > 0 && code != signal:
		return Exit{Code: code}
	case signal > 0 && signal <= maxSignal:
		return Exit{Code: -1, Signal: syscall.Signal(signal)}
	}
	return e
}

// Check finds the mpirun binary and checks the hostfile against NP.
func (m MPIRun) Check() error {
	var errs []error
	if _, err := exec.LookPath(m.command()); err != nil {
		errs = append(errs, fmt.Errorf("launcher mpirun: %w", err))
	}
	if m.Flavor != "" && m.Flavor != "openmpi" && m.Flavor != "mpich" {
		errs = append(errs, fmt.Errorf("launcher mpirun: flavor %q is not openmpi or mpich", m.Flavor))
	}
	if m.Flavor != "mpich" {
		// Open MPI (4's mpirun, 5's PRRTE) refuses to run where variables
		// come both by -x, nccltune's, and by mca_base_env_list: every
		// trial would fail.
		for _, name := range []string{"OMPI_MCA_mca_base_env_list", "PRTE_MCA_mca_base_env_list"} {
			if v, ok := os.LookupEnv(name); ok {
				errs = append(errs, fmt.Errorf("launcher mpirun: %s=%s: Open MPI refuses to run with it beside the -x options by which nccltune hands the ranks each trial's variables; unset it, and give its variables with -x in launcher.args", name, v))
			}
		}
	}
	if m.Hostfile != "" {
		hosts, err := HostfileHosts(m.Hostfile)
		slots, again, h := slotsOf(hosts), slotsGivenAgain(hosts), mpichForm(hosts)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("launcher mpirun: %w", err))
		case m.Flavor != "mpich" && h != nil:
			errs = append(errs, fmt.Errorf("launcher mpirun: hostfile line %d gives host %s its slots in MPICH's form, %s:%d, which Open MPI reads as a host of that name: write %s slots=%d (%s)", h.Line, h.Name, h.Name, h.Slots, h.Name, h.Slots, m.Hostfile))
		case m.Flavor != "mpich" && again != "":
			errs = append(errs, fmt.Errorf("launcher mpirun: hostfile %s lists host %s on two lines, the later one giving it a slot count, which Open MPI refuses (\"multiple definitions of the slot count\"): list each host once, with all its slots", m.Hostfile, again))
		case slots > 0 && m.NP > 0 && m.NP != slots && !m.oversubscribes():
			errs = append(errs, fmt.Errorf("launcher mpirun: np = %d does not match the %s of hostfile %s", m.NP, text.Count(slots, "slot", "slots"), m.Hostfile))
		}
	}
	if m.Flavor != "mpich" && os.Getenv("SLURM_JOB_NODELIST") != "" {
		hosts, _ := HostfileHosts(m.Hostfile) // refused above where it cannot be read
		where := "hostfile " + m.Hostfile
		if len(m.Hosts) > 0 {
			hosts, where = m.Hosts, "its group of launcher.groups ("+hostList(m.Hosts)+")"
		}
		if host, node := inAnotherCase(hosts); host != "" {
			errs = append(errs, fmt.Errorf("launcher mpirun: %s names host %s, which Open MPI finds in no node of the Slurm allocation: it takes a node's name as Slurm spells it, %s", where, host, node))
		}
	}
	if len(m.Hosts) > 0 {
		slots := 0
		for _, h := range m.Hosts {
			slots += h.Slots
		}
		if m.NP > 0 && !slices.ContainsFunc(m.Hosts, func(h Host) bool { return h.Slots == 0 }) && m.NP != slots && !m.oversubscribes() {
			errs = append(errs, fmt.Errorf("launcher mpirun: np = %d does not match the %s of its group of launcher.groups (%s): np is each group's rank count", m.NP, text.Count(slots, "slot", "slots"), hostList(m.Hosts)))
		}
	}
	return errors.Join(errs...)
}

// inAnotherCase is the first of hosts that Open MPI's mpirun in a Slurm
// allocation finds among none of its nodes, as it compares names (less a
// domain and a user: ompiHostKey; 4.1.4), though one of them is that host
// in another case, as DNS reads names; and that node. Every trial would
// fail ("A hostfile was provided that contains at least one node not
// present in the allocation"). "" where none is, or the allocation's
// nodes are unknown.
func inAnotherCase(hosts []Host) (host, node string) {
	if len(hosts) == 0 {
		return "", ""
	}
	nodes, err := AllocationNodes()
	if err != nil {
		return "", ""
	}
	for _, h := range hosts {
		key := ompiHostKey(h.Name)
		if slices.Contains(nodes, key) {
			continue
		}
		if i := slices.IndexFunc(nodes, func(n string) bool { return strings.EqualFold(n, key) }); i >= 0 {
			return h.Name, nodes[i]
		}
	}
	return "", ""
}

// oversubscribes reports whether mpirun is told to place more ranks than a
// host has slots: --oversubscribe (-oversubscribe: Open MPI 4 reads a long
// option after one dash), a mapping policy's OVERSUBSCRIBE modifier (Open
// MPI 5's spelling), in map_by, the args' --map-by or the MCA parameter of
// the mapping policy, or the MCA parameter rmaps_base_oversubscribe set;
// an MCA parameter given in the args (--mca NAME VALUE) or in mpirun's
// environment (OMPI_MCA_NAME, PRTE_MCA_NAME), as container images set it.
func (m MPIRun) oversubscribes() bool {
	mca := map[string]string{}
	for _, name := range []string{"rmaps_base_oversubscribe", "rmaps_base_mapping_policy", "rmaps_default_mapping_policy"} {
		mca[name] = cmp.Or(os.Getenv("OMPI_MCA_"+name), os.Getenv("PRTE_MCA_"+name))
	}
	policies := []string{m.MapBy}
	for i, a := range m.Args {
		name, value, attached := strings.Cut(strings.TrimLeft(a, "-"), "=")
		switch {
		case name == "oversubscribe":
			return true
		case name == "map-by" && attached:
			policies = append(policies, value)
		case name == "map-by" && i+1 < len(m.Args):
			policies = append(policies, m.Args[i+1])
		case strings.HasSuffix(name, "mca") && i+2 < len(m.Args):
			if _, known := mca[m.Args[i+1]]; known {
				mca[m.Args[i+1]] = m.Args[i+2]
			}
		}
	}
	if space.MCATrue(mca["rmaps_base_oversubscribe"]) {
		return true
	}
	policies = append(policies, mca["rmaps_base_mapping_policy"], mca["rmaps_default_mapping_policy"])
	return slices.ContainsFunc(policies, func(p string) bool {
		modifiers := strings.FieldsFunc(p, func(r rune) bool { return r == ':' || r == ',' })
		return slices.ContainsFunc(modifiers, func(f string) bool { return strings.EqualFold(f, "oversubscribe") })
	})
}

// LauncherEnv drops the caller's variables by which mpirun would hand the
// ranks NCCL variables past the trial's own, as the caller's NCCL_* are
// dropped (BaseEnv): Open MPI reads an MCA parameter from OMPI_MCA_NAME
// (Open MPI 5's PRRTE from PRTE_MCA_, PMIx from PMIX_MCA_ too), so
// OMPI_MCA_mca_base_env_list="NCCL_ALGO=Ring" sets NCCL_ALGO in every rank,
// after nccltune's -x. Dropped are: mca_base_env_list where it names an
// NCCL variable (one that does not stays); its delimiter, which would split
// a list of launcher.args other than the space's load check read it; the
// parameters that name files of more parameters or variables
// (mca_base_param_files, mca_base_param_file_prefix, --am's,
// mca_base_envar_file_prefix, mca_base_override_param_file), which nccltune
// does not read; those that write the ranks' output as XML or to files
// only (4's orte_xml_output, orte_xml_file: mpirun --xml's; 5's output=xml
// or file=...:nocopy), where nccltune reads it as printed;
// Hydra's HYDRA_CONFIG_FILE, a file of options (-genv); and the labels
// MPICH's gforker and remshell mpiexec (src/pm/util/labelout.c) and
// ParaStation's put before each rank's line where MPIEXEC_PREFIX_DEFAULT,
// _STDOUT or _STDERR is set ("3> ", "3(err)> "), which the output's
// readers take for the rank's words (Hydra reads none of them).
// Their settings can be given in launcher.args, which the load checks.
// Where nccltune runs in a Slurm step's task or a rank of an MPI job, that
// step's or job's description goes too, as under every launcher
// (withoutOuterLaunch).
func (MPIRun) LauncherEnv(env []string) []string {
	return slices.DeleteFunc(slices.Clone(env), func(kv string) bool {
		name, value, _ := strings.Cut(kv, "=")
		if name == "HYDRA_CONFIG_FILE" || strings.HasPrefix(name, "MPIEXEC_PREFIX_") {
			return true
		}
		_, param, ok := strings.Cut(strings.ToLower(name), "_mca_")
		switch {
		case !ok:
			return false
		case strings.HasSuffix(param, "mca_base_env_list"):
			return strings.Contains(value, "NCCL_")
		}
		return strings.HasSuffix(param, "mca_base_env_list_delimiter") || space.MCAReadsFile(param) || space.MCAHidesOutput(param, value) != ""
	})
}

// outerMPIJob reports whether name is one of the variables by which Open
// MPI's mpirun describes, to each rank, its job and the rank's place in it
// (set in every rank, with OMPI_COMM_WORLD_SIZE): inherited by a trial's
// mpirun where nccltune is such a rank, OMPI_UNIVERSE_SIZE made Open MPI 4
// refuse "recursive calls", and the outer daemon's URI and ess settings
// made it fail to start its own job. Its PMIx wiring is dropped as every
// outer launcher's is (withoutOuterLaunch). The caller's own MCA
// parameters, which mpirun hands its ranks too, are settings and stay,
// also those named orte_* (orte_rsh_agent, plm_rsh_agent's synonym).
func outerMPIJob(name string) bool {
	switch name {
	case "OMPI_UNIVERSE_SIZE", "OMPI_APP_CTX_NUM_PROCS", "OMPI_NUM_APP_CTX", "OMPI_FIRST_RANKS", "OMPI_ARGV", "OMPI_COMMAND", "OMPI_FILE_LOCATION":
		return true
	}
	param, mca := strings.CutPrefix(name, "OMPI_MCA_")
	switch {
	case strings.HasPrefix(name, "OMPI_COMM_WORLD_"):
		return true
	case !mca:
		return false
	case strings.HasPrefix(param, "ess"), strings.HasPrefix(param, "orte_ess_"):
		return true
	}
	return slices.Contains(orteRankParams, param)
}

// orteRankParams are the MCA parameters, other than the ess ones, that
// Open MPI 4's daemon sets in each rank's environment for its job (4.1.4's
// mpirun -np 1 env): its daemons' URIs, session directories, the rank's
// app, binding and the job's transport key.
var orteRankParams = []string{
	"orte_hnp_uri", "orte_local_daemon_uri", "orte_jobfam_session_dir", "orte_top_session_dir", "orte_app_num",
	"orte_launch", "orte_num_nodes", "orte_bound_at_launch", "orte_precondition_transports", "orte_num_restarts",
}

// Srun starts the ranks with Slurm's srun inside an existing allocation. The
// trial's variables are in srun's environment and --export=ALL hands them to
// every task: an --export=NAME=value list would split values at commas.
type Srun struct {
	Command      string // default "srun"
	Nodes        int    // -N; 0: every node of the allocation
	TasksPerNode int    // --ntasks-per-node; 0: one
	Args         []string
	// NodeList names the nodes (one group's of launcher.groups); empty: srun picks.
	NodeList []string
	// GPUs, if not 0, is the step's --gpus: the allocation's GPUs on
	// NodeList where the job asked for its GPUs job-wide (SrunStep, Groups).
	GPUs int
}

func (s Srun) command() string { return or(s.Command, "srun") }

// Wrap builds the srun command line. The step's shape is given in full, -N,
// -n and --ntasks-per-node: inside an allocation srun takes whatever is not
// given from it (srun -N 2 under salloc -n 16 runs 16 tasks; without -N,
// --ntasks-per-node 3 ran 3 tasks in all on 2 nodes).
func (s Srun) Wrap(cmd, _ []string) ([]string, error) {
	nodes, err := s.NodeCount()
	if err != nil {
		return nil, err
	}
	tasks := max(s.TasksPerNode, 1)
	// --kill-on-bad-exit ends the step when a rank fails, as mpirun does:
	// srun would wait for the other ranks, which a failed peer can leave
	// hanging in NCCL until the trial's timeout.
	argv := []string{s.command(), "--export=ALL", "--kill-on-bad-exit=1",
		"-N", strconv.Itoa(nodes), "-n", strconv.Itoa(nodes * tasks), "--ntasks-per-node", strconv.Itoa(tasks)}
	if len(s.NodeList) > 0 {
		argv = append(argv, "--nodelist="+strings.Join(s.NodeList, ","))
	}
	if s.GPUs > 0 {
		argv = append(argv, "--gpus="+strconv.Itoa(s.GPUs))
	}
	if inStep(os.Environ()) {
		// nccltune runs in a task of a step (srun nccltune ...), which holds
		// the allocation's CPUs: since Slurm 20.11 a step shares no CPU with
		// another unless it overlaps, and the trial's would wait for them
		// until its timeout.
		argv = append(argv, "--overlap")
	}
	argv = append(argv, s.Args...)
	return append(argv, cmd...), nil
}

// NodeCount is the step's node count: Nodes, or every node of the allocation.
func (s Srun) NodeCount() (int, error) {
	if s.Nodes > 0 {
		return s.Nodes, nil
	}
	v := os.Getenv("SLURM_JOB_NUM_NODES")
	if n, err := strconv.Atoi(v); err == nil && n > 0 {
		return n, nil
	}
	return 0, fmt.Errorf("launcher srun: no node count (launcher.nodes), and the allocation's is unknown: SLURM_JOB_NUM_NODES = %q", v)
}

// LauncherEnv drops srun's input variables (srun(1), INPUT ENVIRONMENT
// VARIABLES) that count a step's tasks and nodes or take its output: salloc
// and sbatch set several of them for every command of the allocation
// (SLURM_NTASKS, SLURM_NNODES, ...), which srun would take as the defaults
// of options nccltune does not pass. The ranks are the space's alone (nodes,
// ntasks_per_node). What each task has and where it sits (CPUs and GPUs per
// task, binding, distribution) stays as the allocation gives it, as the
// user's job's own srun takes it: a trial measures the job's setting, and
// without the SRUN_CPUS_PER_TASK a job script exports (22.05's sbatch -c
// sets only SLURM_CPUS_PER_TASK, which srun reads from 23.11 on) each rank
// would get one CPU for NCCL's proxy threads where the job's get more.
// What describes the step nccltune itself may run in is dropped under
// every launcher (withoutOuterLaunch); a task prolog and an --export list
// are never inherited (BaseEnv). SLURM_JOB_ID, which puts the step in the
// allocation, stays, and so does the cluster's configuration (SLURM_CONF,
// SLURM_MPI_TYPE, the account, ...).
func (Srun) LauncherEnv(env []string) []string {
	// SLURM_CPU_BIND and SLURM_MEM_BIND are --cpu-bind's and --mem-bind's
	// defaults: the user's own, exported in the batch script or a shell
	// (SLURM_CPU_BIND=none, =cores), stay, as their job's srun takes them.
	// One that srun set in a task nccltune itself runs in is that one
	// task's CPUs (setBySrun): read as the trial's binding, every rank
	// would share them.
	return slices.DeleteFunc(without(env, srunShape), func(kv string) bool {
		name, _, _ := strings.Cut(kv, "=")
		return slices.Contains(bindings, name) && setBySrun(env, name)
	})
}

var srunShape = []string{
	// How many tasks, on how many nodes.
	"SLURM_NTASKS", "SLURM_NPROCS", "SLURM_NNODES", "SLURM_JOB_NUM_NODES", "SLURM_NTASKS_PER_NODE",
	"SLURM_NTASKS_PER_CORE", "SLURM_NTASKS_PER_SOCKET", "SLURM_NTASKS_PER_GPU", "SLURM_NTASKS_PER_TRES",
	// Where a relative benchmark path resolves.
	"SLURM_REMOTE_CWD", "SLURM_WORKING_DIR",
	// Their output and exit, which nccltune reads: labelled, sent to files,
	// or srun's own failure given a status of a killed rank (137). -o, -e
	// and -i are SRUN_OUTPUT, SRUN_ERROR and SRUN_INPUT, the SLURM_*MODE
	// names kept for backward compatibility (src/srun/opt.c).
	"SLURM_LABELIO", "SLURM_STDOUTMODE", "SLURM_STDERRMODE", "SLURM_STDINMODE", "SRUN_OUTPUT", "SRUN_ERROR", "SRUN_INPUT",
	"SLURM_EXIT_ERROR", "SLURM_EXIT_IMMEDIATE",
	// srun's -v and --slurmd-debug, whose lines (srun's "propagating
	// RLIMIT_STACK=8388608", slurmstepd's in each task's stderr) a metric's
	// regex reads as the ranks', and -u, which passes the ranks' output on
	// unbuffered: their lines run into each other's (22.05).
	"SLURM_DEBUG", "SLURMD_DEBUG", "SLURM_UNBUFFEREDIO",
}

// srunTaskRE is srun's report of tasks that ended badly: "srun: error: n1:
// task 1: Exited with exit code 3", "srun: error: n1: tasks 0,2-3: Terminated".
var srunTaskRE = regexp.MustCompile(`(?m)^srun: error: [^:\s]+: tasks? [0-9,-]+: (.+)$`)

// RankExit is how the first rank to fail ended, as srun reports it: srun
// exits with the highest status of its tasks, which is 143 (SIGTERM) once
// --kill-on-bad-exit has ended the others, whatever the failed rank's was.
func (Srun) RankExit(output []byte, e Exit) Exit {
	m := srunTaskRE.FindSubmatch(output)
	if m == nil || e.Code == 0 || e.Signal != 0 {
		return e
	}
	how := strings.TrimSuffix(strings.TrimSpace(string(m[1])), " (core dumped)")
	if code, ok := strings.CutPrefix(how, "Exited with exit code "); ok {
		// A 0 (srun reports none, but a rank's own output can hold the
		// words) would make the failed step a clean exit.
		if n, err := strconv.Atoi(code); err == nil && n != 0 {
			return Exit{Code: n}
		}
		return e
	}
	// Otherwise srun names the signal as strsignal does, as Go's names are.
	for sig := syscall.Signal(1); sig <= maxSignal; sig++ {
		if strings.EqualFold(how, sig.String()) {
			return Exit{Code: -1, Signal: sig}
		}
	}
	return e
}

// srunErrorRE is an error of srun's own: "srun: error: Unable to create
// step for job 7: Requested node configuration is not available", "srun:
// error: Only allocated 1 nodes asked for 2", "srun: fatal: ...", and
// getopt's on its command line (launcher.args), after which srun exits 255:
// "srun: unrecognized option '--foo'", "srun: option '--nodes' requires an
// argument", "srun: invalid option -- 'z'".
var srunErrorRE = regexp.MustCompile(`(?m)^srun: (?:(?:error|fatal): |unrecognized option |invalid option |option .*(?:requires an argument|allow an argument|is ambiguous)).*$`)

// srunPendingRE is srun's word that the step waits for resources ("srun:
// Job 7 step creation temporarily disabled, retrying (Requested nodes are
// busy)"), which a trial's step does while the last one's nodes are still
// being cleared; "srun: Step created for StepId=7.1" follows once it is
// created (src/srun/libsrun/launch.c).
var srunPendingRE = regexp.MustCompile(`(?m)^srun: Job [0-9]+ step creation temporarily disabled.*$`)

// slurmstepd is how slurmstepd's lines in a task's output begin: its name
// and node ("slurmstepd-n1"), after the task's label where srun --label
// labels the task's output ("0: slurmstepd-n1: error: ..."); srun's own
// lines have none.
const slurmstepd = `(?:` + nccltests.SrunLabel + `)?slurmstepd(?:-[^:\s]+)?`

// srunExecRE is slurmstepd's word that it could not exec a task's program
// (src/slurmd/slurmstepd/task.c): "slurmstepd-n1: error: execve():
// /bin/all_reduce_perf: No such file or directory", or "execve(): bad
// interpreter(/usr/bin/python3.9): ..." for a script's. The task then
// exits with execve's errno, 2 (ENOENT) or 13 (EACCES), which srun reports
// as a rank's exit status.
var srunExecRE = regexp.MustCompile(`(?m)^` + slurmstepd + `: error: execve\(\): .*$`)

// LaunchFailure is srun's own error where it failed without a rank's
// report (srunTaskRE): the step was not created or not launched, and its
// status (1) is srun's, not a rank's. A step still waiting to be created
// when srun ended (stopped at the trial's timeout) never ran a rank either,
// whatever srun's status: the trial did not hang, its step never started.
// Nor did a task whose program slurmstepd could not exec (srunExecRE),
// whose status is execve's errno, not the benchmark's: the benchmark or
// its interpreter missing or not executable on a node.
func (Srun) LaunchFailure(output []byte, e Exit) string {
	if pending := stepNeverCreated(output); pending != "" {
		return pending
	}
	if e.Code == 0 || e.Signal != 0 {
		return ""
	}
	if m := srunExecRE.Find(output); m != nil {
		return clip(strings.TrimRight(string(m), "\r"))
	}
	if srunTaskRE.Match(output) {
		return ""
	}
	return strings.TrimRight(string(srunErrorRE.Find(output)), "\r")
}

// stepNeverCreated is srun's word that a step waited for resources
// (srunPendingRE) where no word that it was created follows: the step ran
// no rank, and did not hang. "" where there is none.
func stepNeverCreated(output []byte) string {
	if loc := srunPendingRE.FindIndex(output); loc != nil && !bytes.Contains(output[loc[1]:], []byte("\nsrun: Step created for ")) {
		return strings.TrimRight(string(output[loc[0]:loc[1]]), "\r") + ": the step was never created"
	}
	return ""
}

// taskNotStarted is slurmstepd's or srun's word, in what a trial printed
// before its timeout, that a task of a step could not start its program:
// slurmstepd's execve error (srunExecRE), or srun's report of a task that
// exited 127 or 126, a shell's "not found" and "not executable". The
// step's other tasks ran on to the timeout, waiting for it (torchrun's
// rendezvous, for the node whose torchrun never joined): no hang of the
// settings. It is read under every launcher, as any may run srun (torchrun's
// wrapper for several nodes); "" where there is none.
func taskNotStarted(output []byte) string {
	line := srunExecRE.Find(output)
	if line == nil {
		line = srunNotStartedRE.Find(output)
	}
	if line == nil {
		return ""
	}
	return "a task of a srun step could not start its program, and the others waited for it until the timeout: " + clip(strings.TrimRight(string(line), "\r"))
}

// srunNotStartedRE is srun's report of a task that exited 127 or 126.
var srunNotStartedRE = regexp.MustCompile(`(?m)^srun: error: [^:\s]+: tasks? [0-9,-]+: Exited with exit code 12[67]\r?$`)

// srunNodeFailRE is srun's or slurmstepd's word that a node of the step
// failed, as Slurm 22.05 gave it when a node went down under a step: "srun:
// error: Node failure on n2", "slurmstepd-n1: error: *** STEP 1.0 ON n1
// CANCELLED AT ... DUE TO NODE FAILURE, SEE SLURMCTLD LOG FOR DETAILS ***",
// or a job's state (NODE_FAIL). Not "srun: Job step aborted: Waiting up to
// 32 seconds ...", which follows every cancel of a step, nccltune's own at
// the timeout too; nor a rank's line with the words.
var srunNodeFailRE = regexp.MustCompile(`(?m)^(?:srun|` + slurmstepd + `): .*(?:Node failure on |DUE TO NODE FAILURE|NODE_FAIL).*$`)

// stepTimeLimitRE is slurmstepd's word that it ended a step at the step's
// own time limit (srun --time, in launcher.args or a wrapper's srun) as
// Slurm 22.05 gives it: "slurmstepd-n1: error: *** STEP 7.3 ON n1
// CANCELLED AT 2026-12-07T01:00:00 DUE TO TIME LIMIT ***". The job's time
// limit ends its steps with the same words, which allocationEnded reads
// first, as the job's state says it ended.
var stepTimeLimitRE = regexp.MustCompile(`(?m)^` + slurmstepd + `: error: \*\*\* STEP \S+ ON \S+ CANCELLED AT \S+ DUE TO TIME LIMIT \*\*\*`)

// ompiTimeLimitRE is Open MPI's mpirun's word that it ended its job at its
// own time limit (--timeout, or MPIEXEC_TIMEOUT in its environment), after
// which 4.1.4 exits 110: "The user-provided time limit for job execution
// has been reached:", then "Timeout: 2 seconds".
var ompiTimeLimitRE = regexp.MustCompile(`(?m)^The user-provided time limit for job execution has been reached:\s*(Timeout: \d+ seconds?)`)

// ownTimeLimit is why a launcher ended a failed trial at a time limit of
// its own (a step's, srun --time; mpirun's), past which it ran as one past
// benchmark.timeout does: it is read under every launcher, as any may run
// srun or mpirun. "" where none did.
func ownTimeLimit(output []byte) string {
	if line := stepTimeLimitRE.Find(output); line != nil {
		return "the step ran past its own time limit (srun --time), the job running on: " + strings.TrimRight(string(line), "\r")
	}
	if m := ompiTimeLimitRE.FindSubmatch(output); m != nil {
		return "the job ran past mpirun's own time limit (--timeout, MPIEXEC_TIMEOUT): " + string(m[1])
	}
	return ""
}

// stepCancelledRE is slurmstepd's word that a step was cancelled for no
// reason of Slurm's own (slurmstepd's req.c, 22.05: "slurmstepd-n1: error:
// *** STEP 7.3 ON n1 CANCELLED AT 2026-12-07T01:00:00 ***", where a time
// limit, preemption or node failure adds "DUE TO ..."): scancel of the step,
// or srun ending its own step at a failed rank (--kill-on-bad-exit), which
// first reports the rank and says so (srunEndsStepRE).
var (
	stepCancelledRE = regexp.MustCompile(`(?m)^` + slurmstepd + `: error: \*\*\* STEP \S+ ON \S+ CANCELLED AT \S+ \*\*\*`)
	srunEndsStepRE  = regexp.MustCompile(`(?m)^srun: launch/slurm: _step_signal: Terminating `)
)

// stepCancelledByHand is slurmstepd's word that it cancelled a step of the
// trial that no failed rank had srun end (stepCancelledRE): one cancelled
// from outside nccltune (a hand's scancel), whose ranks' SIGTERM or
// SIGKILL is none of the trial's settings' doing. "" where there is none.
func stepCancelledByHand(output []byte) string {
	loc := stepCancelledRE.FindIndex(output)
	if loc == nil || srunTaskRE.Match(output[:loc[0]]) || srunEndsStepRE.Match(output[:loc[0]]) {
		return ""
	}
	return strings.TrimRight(string(output[loc[0]:loc[1]]), "\r")
}

// ompiDaemonLostRE is Open MPI's mpirun's word that it lost a node's
// daemon (help-errmgr-base.txt; 4's ORTE, 5's PRTE), which it gives where
// a node fails under its ranks: under Slurm it starts its daemons with a
// srun whose output it discards. ompiRemoteRE is the daemon's node, on a
// line of the report below it ("Remote daemon: [[16919,0],1] on node n2").
var (
	ompiDaemonLostRE = regexp.MustCompile(`(?m)^(?:ORTE|PRTE) has lost communication with a remote daemon\.`)
	ompiRemoteRE     = regexp.MustCompile(`(?m)^\s*Remote daemon\s*:.* on node (\S+)\s*$`)
)

// nodeFailureLine is srun's or slurmstepd's first line saying that a node of
// a step failed, or Open MPI's that it lost a node's daemon, where Slurm
// confirms that the job lost a node (lostANode): the ranks then end
// killed, or hang, whatever their settings. It is read under every
// launcher, as any may run srun (the srun launcher, torchrun's wrapper for
// several nodes, a training script). Neither srun nor mpirun labels its
// ranks' lines, so a rank could print the words, and its trial, held as
// the node's, would stop the campaign on every resume; a daemon that
// crashed or could not reach mpirun is no node lost either. "" where none.
func nodeFailureLine(output []byte) string {
	line, named := strings.TrimRight(string(srunNodeFailRE.Find(output)), "\r"), ""
	if m := nodeNamedRE.FindStringSubmatch(line); m != nil {
		named = m[1]
	}
	if loc := ompiDaemonLostRE.FindIndex(output); line == "" && loc != nil {
		line = string(output[loc[0]:loc[1]])
		if m := ompiRemoteRE.FindSubmatch(output[loc[1]:]); m != nil {
			named = string(m[1])
			line += " (" + strings.TrimSpace(string(m[0])) + ")"
		}
	}
	if line == "" || !lostANode(os.Getenv("SLURM_JOB_ID"), named) {
		return ""
	}
	return line
}

// nodeNamedRE is the node srun names in its word of a node's failure.
var nodeNamedRE = regexp.MustCompile(`Node failure on ([^\s,]+)`)

// lostANode reports whether Slurm says job id lost a node: the job's state
// is NODE_FAIL (the allocation revoked), or a node of its list, or the node
// srun named (named: a job that asked for --no-kill goes on without it, and
// its list may not hold it any more), is down, failing or not responding
// (sinfo's "*"); false where Slurm cannot be asked.
func lostANode(id, named string) bool {
	if id == "" {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), stopTimeout)
	defer cancel()
	state, nodes, err := showJob(ctx, id)
	switch {
	case err != nil:
		return false
	case state == "NODE_FAIL":
		return true
	}
	if named != "" {
		nodes = strings.TrimPrefix(nodes+","+named, ",")
	}
	if nodes == "" {
		return false
	}
	states, err := slurmOutput(ctx, "sinfo", "-h", "-N", "-n", nodes, "-o", "%t")
	if err != nil {
		return false
	}
	return slices.ContainsFunc(strings.Fields(string(states)), func(st string) bool {
		return strings.HasSuffix(st, "*") || strings.HasPrefix(st, "down") || strings.HasPrefix(st, "fail")
	})
}

// errNoSuchJob is scontrol's answer for a job that slurmctld does not
// know: one that ended and was purged (MinJobAge), or never was.
var errNoSuchJob = errors.New("no such job")

// showJob is job id's state (JobState=RUNNING: "RUNNING") and node list,
// as scontrol shows them in its record.
func showJob(ctx context.Context, id string) (state, nodes string, err error) {
	out, err := slurmOutput(ctx, "scontrol", "-o", "show", "job", id)
	var exit *exec.ExitError
	if errors.As(err, &exit) && bytes.Contains(exit.Stderr, []byte("Invalid job id")) {
		return "", "", errNoSuchJob
	}
	if err != nil {
		return "", "", err
	}
	// A job array's id (that of its last task to start) or a heterogeneous
	// job's shows every task's or component's record, a line each: only
	// the one of id itself is the job's (another task's may have ended).
	for line := range strings.Lines(string(out)) {
		fields := strings.Fields(line)
		if !slices.Contains(fields, "JobId="+id) {
			continue
		}
		for _, f := range fields {
			if v, ok := strings.CutPrefix(f, "JobState="); ok {
				state = v
			} else if v, ok := strings.CutPrefix(f, "NodeList="); ok {
				nodes = v
			}
		}
		return state, nodes, nil
	}
	return "", "", fmt.Errorf("scontrol showed no record of job %s", id)
}

// allocationEnded says why a failed trial is the allocation's: where its
// launcher starts the ranks through Slurm (srun, or mpirun's daemons, which
// Slurm signals with the ranks: mpirun may tell of a rank's signal first,
// and nothing of Slurm's), or its output has Slurm's own lines (srun's,
// slurmstepd's: any launcher's command may run srun) or Open MPI's word
// that it lost a daemon, and Slurm says that the job no longer runs. Its
// time limit, scancel of the job or its preemption end every step ("***
// STEP 7.0 ON n1 CANCELLED AT ... DUE TO TIME LIMIT ***", the ranks
// Terminated), and srun then creates none ("srun: error: Slurm job 7 has
// expired"; mpirun's daemons fail): neither is the settings' doing, and no
// later trial can run in the allocation. "" where the job runs, or Slurm
// cannot be asked.
func allocationEnded(output []byte, viaSlurm bool) string {
	id := os.Getenv("SLURM_JOB_ID")
	if id == "" || !viaSlurm && !slurmSaysRE.Match(output) && !ompiDaemonLostRE.Match(output) {
		return ""
	}
	ctx, cancel := context.WithTimeout(context.Background(), stopTimeout)
	defer cancel()
	state, _, err := showJob(ctx, id)
	switch {
	case errors.Is(err, errNoSuchJob):
		return fmt.Sprintf("Slurm job %s no longer runs: slurmctld no longer knows it", id)
	case err != nil, state == "", slices.Contains(runningStates, state):
		return ""
	}
	return fmt.Sprintf("Slurm job %s no longer runs (JobState=%s)", id, state)
}

// runningStates are the states scontrol shows for a job that runs:
// RUNNING, or a flag of a running job, which it names in place of the
// state (job_state_string, 22.05): CONFIGURING while the job's nodes boot
// (salloc may return before they have; its steps wait for them), RESIZING
// while its size is updated. A job that ended (COMPLETING, REQUEUED, ...),
// or whose processes Slurm stops or signals (SUSPENDED, STOPPED,
// SIGNALING), a trial's ranks among them, is not running.
var runningStates = []string{"RUNNING", "CONFIGURING", "RESIZING"}

// throughSlurm reports whether l starts its ranks through Slurm (srun, or
// Open MPI's mpirun, whose daemons srun starts in an allocation), so that
// the allocation's end is why a trial of it can fail. Another launcher
// launches as well after the job ended (a shell kept from a finished
// salloc, its SLURM_JOB_ID with it): there it is the trial's failure,
// unless the output has Slurm's own lines (its command ran srun).
func throughSlurm(l Launcher) bool {
	switch l.(type) {
	case Srun, MPIRun:
		return true
	}
	return false
}

// slurmLineRE is a line of srun's or slurmstepd's own ("srun: Force
// Terminated StepId=7.0", "slurmstepd-n1: error: *** STEP 7.0 ON n1
// CANCELLED AT ... ***"), not a rank's.
var slurmLineRE = regexp.MustCompile(`^(?:srun|` + slurmstepd + `): `)

// slurmSaysRE is such a line anywhere in the output.
var slurmSaysRE = regexp.MustCompile(`(?m)` + slurmLineRE.String())

// FailureDetail is the last line with words that the ranks printed, NCCL's
// INFO lines aside (nccltune sets NCCL_DEBUG=INFO): as --kill-on-bad-exit
// ends a failed step, srun and slurmstepd print lines of their own after
// it, which say nothing of why, and the output's last line was one. Where
// the ranks said nothing, srun's report of the first task to fail ("srun:
// error: n1: task 2: Exited with exit code 5").
func (Srun) FailureDetail(output []byte) string {
	lines := strings.Split(string(output), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		line := strings.TrimSpace(lines[i])
		if saysSomething(line) && !slurmLineRE.MatchString(line) && !strings.Contains(line, " NCCL INFO ") {
			return clip(line)
		}
	}
	return strings.TrimRight(string(srunTaskRE.Find(output)), "\r")
}

// Check finds srun and an allocation to run in.
func (s Srun) Check() error {
	var errs []error
	if _, err := exec.LookPath(s.command()); err != nil {
		errs = append(errs, fmt.Errorf("launcher srun: %w", err))
	}
	if os.Getenv("SLURM_JOB_ID") == "" {
		errs = append(errs, errors.New("launcher srun: not inside a Slurm allocation (run nccltune under salloc or sbatch)"))
	} else if _, err := s.NodeCount(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// stopSteps cancels, through slurmctld, the steps that the srun processes
// among the trial's (pid and its descendants) run: the srun launcher's, a
// wrapper script's srun (launcher.command), whose pid is not the
// launcher's, or one that the benchmark's own command runs under any
// launcher (torchrun's wrapper for several nodes, a training script). A
// step's ranks run under slurmstepd, not in the trial's process tree. srun
// kills its step itself on SIGTERM, and a child of srun cancels it if srun
// dies; but a srun that cannot act on SIGTERM within the grace period gets
// SIGKILL together with that child, and its ranks would run on. Outside a
// Slurm allocation there is nothing to cancel (and maybe no slurmctld to
// ask, which Run would wait for).
func stopSteps(pid int) error {
	if os.Getenv("SLURM_JOB_ID") == "" {
		return nil
	}
	pids := map[int]bool{pid: true}
	for _, p := range descendants(pid) {
		pids[p.pid] = true
	}
	ctx, cancel := context.WithTimeout(context.Background(), stopTimeout)
	defer cancel()
	out, err := slurmOutput(ctx, "scontrol", "-o", "show", "step", os.Getenv("SLURM_JOB_ID"))
	if err != nil {
		return fmt.Errorf("srun: listing steps: %w", err)
	}
	host, err := os.Hostname()
	if err != nil {
		return fmt.Errorf("srun: %w", err)
	}
	steps := stepsOf(string(out), host, pids)
	if len(steps) == 0 {
		return nil // the steps have ended, or were never created
	}
	if out, err := slurmCommand(ctx, "scancel", steps...).CombinedOutput(); err != nil {
		return fmt.Errorf("srun: scancel %s: %w: %s", strings.Join(steps, " "), err, out)
	}
	return nil
}

// stopTimeout bounds the runner's Slurm commands, which wait for
// slurmctld: Stop's, which Run waits for before it returns, and the
// queries of the job's nodes, GPUs and state. A variable: a test of a
// Slurm that never answers waits out a shorter one.
var stopTimeout = 5 * time.Second

// slurmOutput is the output of Slurm command name, killed when ctx ends
// (slurmCommand).
func slurmOutput(ctx context.Context, name string, args ...string) ([]byte, error) {
	return slurmCommand(ctx, name, args...).Output()
}

// slurmCommand is Slurm command name, killed when ctx ends. A site's
// wrapper script may leave a child holding the output open once killed:
// its output is given up on a second later, not when the child ends.
func slurmCommand(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.WaitDelay = time.Second
	return cmd
}

// stepsOf finds, in the lines of `scontrol -o show step`, the running
// steps that a srun process among pids on host started
// ("SrunHost:Pid=node1:4242"; host names compared short).
func stepsOf(steps, host string, pids map[int]bool) []string {
	short := func(h string) string { h, _, _ = strings.Cut(h, "."); return h }
	var ids []string
	for _, line := range strings.Split(steps, "\n") {
		var id, srunHost, srunPid string
		for _, f := range strings.Fields(line) {
			if v, ok := strings.CutPrefix(f, "StepId="); ok {
				id = v
			} else if v, ok := strings.CutPrefix(f, "SrunHost:Pid="); ok {
				srunHost, srunPid, _ = strings.Cut(v, ":")
			}
		}
		// A pending step has no number yet (StepId=7.TDB), nor ranks to cancel.
		_, num, _ := strings.Cut(id, ".")
		_, err := strconv.Atoi(num)
		if p, perr := strconv.Atoi(srunPid); err == nil && perr == nil && pids[p] && short(srunHost) == short(host) {
			ids = append(ids, id)
		}
	}
	return ids
}

// Torchrun starts the ranks with PyTorch's torchrun on this node (or, with
// RdzvEndpoint, as one node of a multi-node rendezvous; run one per node, for
// example through srun). The variables reach every rank through its environment.
type Torchrun struct {
	Command      string // default "torchrun"
	NProcPerNode int    // --nproc-per-node
	NNodes       int    // --nnodes
	RdzvEndpoint string // --rdzv-endpoint host:port (c10d); empty for a single node
	Args         []string
}

func (t Torchrun) command() string { return or(t.Command, "torchrun") }

// Wrap builds the torchrun command line. torchrun (torch/distributed/run.py)
// runs its positional script with its own interpreter, "python -u script",
// or "python -u -m module" with -m; with --no_python it executes the command
// itself. A .py file runs under torchrun's python; any other command (a
// python interpreter and its script, a shell script, a binary) runs as
// written under --no_python (torchrunTarget).
func (t Torchrun) Wrap(cmd, _ []string) ([]string, error) {
	argv := []string{t.command()}
	if t.NProcPerNode > 0 {
		// Underscored options: torchrun of PyTorch 1.x knows no other spelling, 2.x both.
		argv = append(argv, "--nproc_per_node", strconv.Itoa(t.NProcPerNode))
	}
	if t.NNodes > 0 {
		argv = append(argv, "--nnodes", strconv.Itoa(t.NNodes))
	}
	if t.RdzvEndpoint != "" {
		// An id of this launch's own (every node's torchrun gets the same
		// argv): under torchrun's default id, "none", a torchrun of another
		// campaign on the same endpoint, finding the port taken, connects to
		// this one's store as a client and joins its rendezvous, as does a
		// node's torchrun left over from an earlier trial.
		argv = append(argv, "--rdzv_backend", "c10d", "--rdzv_endpoint", t.RdzvEndpoint, "--rdzv_id", rdzvID())
	} else {
		argv = append(argv, "--standalone")
	}
	argv = append(argv, t.Args...)
	if len(cmd) == 0 || slices.ContainsFunc(t.Args, func(a string) bool { return slices.Contains(torchrunHow, a) }) {
		return append(argv, cmd...), nil // launcher.args already say how to run it
	}
	return append(argv, torchrunTarget(cmd)...), nil
}

// rdzvID is a rendezvous id no other launch has.
func rdzvID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b) // never fails on Linux
	return "nccltune-" + hex.EncodeToString(b)
}

// torchrunHow are torchrun's options that say how it runs its target.
var torchrunHow = []string{"--no_python", "--no-python", "-m", "--module", "--run_path", "--run-path"}

var pythonRE = regexp.MustCompile(`^python[0-9.]*$`)

// torchrunTarget is what follows torchrun's own options to run cmd. A
// python interpreter is kept, not left to torchrun's own "python -u",
// which is the one torchrun's script names (/usr/bin/torchrun's
// /usr/bin/python3.11) and need not be cmd's (a venv's, the DDP step's
// benchmark.python) nor have its packages; one that runs a script or a
// module gets torchrun's -u, so that the workers' lines come as written.
func torchrunTarget(cmd []string) []string {
	if strings.HasSuffix(cmd[0], ".py") {
		return cmd
	}
	if pythonRE.MatchString(filepath.Base(cmd[0])) {
		rest := cmd[1:]
		for len(rest) > 0 && rest[0] == "-u" {
			rest = rest[1:]
		}
		if len(rest) >= 2 && rest[0] == "-m" || len(rest) >= 1 && !strings.HasPrefix(rest[0], "-") {
			return append([]string{"--no_python", cmd[0], "-u"}, rest...)
		}
	}
	return append([]string{"--no_python"}, cmd...)
}

// LauncherEnv drops every PET_ variable: torchrun takes PET_NAME as the
// default of its option --name (torch/distributed/argparse_util.py), so the
// caller's PET_NPROC_PER_NODE, PET_NNODES or PET_RDZV_ENDPOINT would set what
// the space leaves out, PET_MAX_RESTARTS rerun failed workers within one
// trial, PET_REDIRECTS or PET_LOCAL_RANKS_FILTER take their output away,
// and PET_NO_PYTHON or PET_MODULE change how the command runs.
func (Torchrun) LauncherEnv(env []string) []string {
	return slices.DeleteFunc(slices.Clone(env), func(kv string) bool { return strings.HasPrefix(kv, "PET_") })
}

// RankExit is how the first worker to fail ended, as torchrun's report of
// it names it: torchrun exits 1 whatever its workers did, and a worker
// killed by a signal would be a plain exit 1. The report is PyTorch's
// ChildFailedError (torch/distributed/elastic/multiprocessing/errors):
// under "Root Cause (first observed failure):", "exitcode  : -9 (pid: 4242)",
// the status as Python's subprocess gives it, -N for signal N.
func (Torchrun) RankExit(output []byte, e Exit) Exit {
	if e.Code == 0 || e.Signal != 0 {
		return e // a clean run, or torchrun itself was killed
	}
	i := torchrunReport(output)
	if i < 0 {
		return e
	}
	m := torchrunExitRE.FindSubmatch(output[i:])
	if m == nil {
		return e
	}
	n, err := strconv.Atoi(string(m[1]))
	switch {
	case err == nil && n < 0 && n >= -maxSignal:
		return Exit{Code: -1, Signal: syscall.Signal(-n)}
	case err == nil && n > 0:
		return Exit{Code: n}
	}
	return e
}

// FailedRank is how the first worker to fail ended, as torchrun's log of
// it says ("failed (exitcode: 1) local_rank: 0 (pid: 4242) of binary:
// ..."), which it writes as it finds the worker gone: on several nodes, it
// then waits at its exit barrier, up to 300 s, for the other nodes'
// agents, whose workers may wait on the failed one until the trial's
// timeout, and prints its report (RankExit's) only after.
func (Torchrun) FailedRank(output []byte) (Exit, bool) {
	m := torchrunFailedRE.FindSubmatch(output)
	if m == nil {
		return Exit{}, false
	}
	n, err := strconv.Atoi(string(m[1]))
	switch {
	case err == nil && n < 0 && n >= -maxSignal:
		return Exit{Code: -1, Signal: syscall.Signal(-n)}, true
	case err == nil && n > 0:
		return Exit{Code: n}, true
	}
	return Exit{}, false
}

// torchrunFailedRE is torchrun's log line of a worker that failed, as each
// PyTorch writes it (torchrunLogRE): its status (-N for signal N), local
// rank and pid.
var torchrunFailedRE = regexp.MustCompile(`(?m)^.*torch[./]distributed[./]elastic[./]multiprocessing[./]api\b.*\bfailed \(exitcode: (-?[0-9]+)\) local_rank: ([0-9]+) \(pid: ([0-9]+)\) of binary: `)

// LaunchFailure is torchrun's own error where it started no worker: its
// command line refused ("torchrun: error: unrecognized arguments: --foo",
// exit 2, which nccl-tests' codes read as a CUDA error), or its exception
// where its rendezvous failed (a node that never joined within the join
// timeout, a store it could not reach; exit 1, as for a failed worker) or
// otherwise before any worker ran (torchrunStartFailure).
// The exception is torchrun's last line, unprefixed (a worker's lines
// under torchrun 2.x's or --tee's prefixes are not torchrun's); "" where
// workers ran and failed (its ChildFailedError's report), whatever came
// after, and where its traceback shows that the workers had started: the
// agent's poll for new nodes while they ran (the store's node gone, its
// workers failed or stopped at the timeout) or its rendezvous again after
// they failed (--max-restarts).
func (Torchrun) LaunchFailure(output []byte, e Exit) string {
	if e.Code == 0 && e.Signal == 0 || bytes.Contains(output, []byte(torchrunRootCause)) {
		return ""
	}
	if m := torchrunUsageRE.Find(output); m != nil {
		return clip(strings.TrimSpace(string(m)))
	}
	all := torchrunRdzvRE.FindAllIndex(output, -1)
	if all == nil {
		return torchrunStartFailure(output)
	}
	last := all[len(all)-1]
	tb := output[max(bytes.LastIndex(output[:last[0]], []byte(pyTraceback)), 0):last[0]]
	if workersStarted(tb) {
		return ""
	}
	return "torchrun's rendezvous failed: " + clip(strings.TrimSpace(string(output[last[0]:last[1]])))
}

// torchrunStartFailure is the exception that torchrun raised before any of
// its workers ran, where its last traceback shows one: as Python imported
// it, before its main ran (torchrunEntryRE); as it set up its rendezvous
// (torchrunStarting), before its agent ran (the rendezvous
// handler's store at rdzv_endpoint a service that is not PyTorch's:
// "MemoryError: std::bad_alloc", with no Rendezvous*Error), or as its
// agent started its workers (agent/server/api.py's _initialize_workers):
// their processes could not be made (a program under --no_python missing
// or not executable: FileNotFoundError, PermissionError), or torchrun
// itself is broken (PyTorch 1.13 under Python 3.11: "AttributeError:
// 'NoneType' object has no attribute 'get'"). "" otherwise, and where the
// workers had run: it was restarting them.
func torchrunStartFailure(output []byte) string {
	i := bytes.LastIndex(output, []byte(pyTraceback))
	if i < 0 {
		return ""
	}
	tb := output[i:]
	if workersStarted(tb) {
		return ""
	}
	what := ""
	if torchrunEntryRE.Match(tb) && !torchrunMainRE.Match(tb) {
		what = "torchrun could not start: " // PyTorch's import failed (a CUDA library missing on the node)
	}
	for _, s := range torchrunStarting {
		if what == "" && bytes.Contains(tb, []byte(s.frame)) {
			what = s.what
		}
	}
	if what == "" {
		return ""
	}
	if exc, _, _ := lastException(strings.Split(string(tb), "\n"), nil); exc != "" {
		return what + clip(exc)
	}
	return ""
}

// torchrunEntryRE is the frame of torchrun's own script, or of its module
// run as python -m torch.distributed.run, as Python starts it;
// torchrunMainRE is its main's, which runs once torchrun's imports did.
var (
	torchrunEntryRE = regexp.MustCompile(`(?m)^\s*File ".*(?:/torchrun|torch/distributed/run\.py)", line [0-9]+, in <module>`)
	torchrunMainRE  = regexp.MustCompile(`(?m)^\s*File ".*torch/distributed/run\.py", line [0-9]+, in main`)
)

// torchrunStarting are the frames of torchrun that run before any worker
// does, with what a traceback through each says failed.
var torchrunStarting = []struct{ frame, what string }{
	{", in get_rendezvous_handler", "torchrun's rendezvous failed: "}, // launcher/api.py's launch_agent, before the agent runs
	{", in _initialize_workers", "torchrun failed as it started its workers: "},
}

const pyTraceback = "Traceback (most recent call last):"

// torchrunStarted are the frames of torchrun's elastic agent
// (agent/server/api.py) that run once its workers have started.
var torchrunStarted = []string{", in num_nodes_waiting", ", in _restart_workers"}

// workersStarted reports whether torchrun's traceback tb shows that its
// workers had started (torchrunStarted).
func workersStarted(tb []byte) bool {
	return slices.ContainsFunc(torchrunStarted, func(f string) bool { return bytes.Contains(tb, []byte(f)) })
}

// torchrunUsageRE is argparse's error on torchrun's command line.
var torchrunUsageRE = regexp.MustCompile(`(?m)^torchrun: error: .*$`)

// torchrunRdzvRE is the exception torchrun's elastic agent raises where its
// rendezvous fails (torch/distributed/elastic/rendezvous/api.py).
var torchrunRdzvRE = regexp.MustCompile(`(?m)^torch\.distributed\.elastic\.rendezvous\.api\.Rendezvous\w*Error\b.*$`)

var torchrunExitRE = regexp.MustCompile(`(?m)^\s*exitcode\s*: (-?[0-9]+) \(pid: ([0-9]+)\)`)

// FailureDetail is the exception that the first worker to fail raised, as
// Python printed it ("torch.distributed.DistBackendError: NCCL error in:
// ..."), where torchrun's report says that worker exited with a status: the
// report's own last line with words in it is "traceback : To enable
// traceback see: https://...", and above the report comes torchrun's own
// traceback, which ends in its ChildFailedError. Where the worker wrote an
// error file (a script under @record), the report's traceback field is the
// worker's, and its exception is taken from there; otherwise from the last
// traceback the worker printed before the report, the root cause's rank's
// first where torchrun's prefixes ("[rank0]:", --tee's "[default0]:") say
// which lines are whose. Where the report names a signal, its word of it
// ("Signal 9 (SIGKILL) received by PID 4242"); "" where it is missing and
// no log line of torchrun's tells of the failure. Where no traceback shows
// an exception (a worker that exited with a status of its own), the last
// line the workers printed (workerLastLine), not the report's.
func (Torchrun) FailureDetail(output []byte) string {
	i := torchrunReport(output)
	if i < 0 {
		// No report, as where torchrun still waited at its exit barrier at
		// the timeout (FailedRank): its log line of the worker's failure.
		m := torchrunFailedRE.FindSubmatchIndex(output)
		if m == nil || output[m[2]] == '-' {
			return ""
		}
		localRank, _ := strconv.Atoi(string(output[m[4]:m[5]]))
		return workerFailure(output[:m[0]], string(output[m[6]:m[7]]), -1, localRank)
	}
	root := output[i:]
	m := torchrunExitRE.FindSubmatch(root)
	switch {
	case m == nil:
		return ""
	case bytes.HasPrefix(m[1], []byte("-")):
		// Its word of the signal ("Signal 9 (SIGKILL) received by PID
		// 4242"), not a line after the report (srun's, on several nodes).
		return torchrunTraceback(root)
	}
	if m := torchrunErrorFileRE.FindSubmatch(root); m != nil && string(m[1]) != "<N/A>" {
		if detail := torchrunTraceback(root); detail != "" {
			return detail
		}
	}
	rank, localRank := -1, -1
	if m := torchrunRankRE.FindSubmatch(root); m != nil {
		rank, _ = strconv.Atoi(string(m[1]))
		localRank, _ = strconv.Atoi(string(m[2]))
	}
	// The report begins at the rule above "train.py FAILED".
	before := output[:i]
	if j := lastRule(before); j >= 0 {
		before = before[:j]
	}
	return workerFailure(before, string(m[2]), rank, localRank)
}

// workerFailure is FailureDetail's account of the worker pid that exited
// with a status (its global rank, -1 where unknown, and local rank), from
// what came before torchrun's report or log of it.
func workerFailure(before []byte, pid string, rank, localRank int) string {
	lines := strings.Split(string(before), "\n")
	preferred := func(role string, n int) bool {
		if role == "rank" {
			return n == rank // torch's "[rank0]:", the global rank
		}
		return n == localRank // torchrun's "[default0]:", role and local rank
	}
	// Another rank's exception is mostly the root cause's effect (its peer
	// gone, "Connection closed by peer"): the root cause's own last line
	// goes before it, and it is named as another's.
	exc, key, whose := lastException(lines, preferred)
	if exc != "" && (whose || key == "" || rank < 0) {
		return exc
	}
	line, lineWhose := workerLastLine(lines, preferred, pid)
	if exc == "" || lineWhose {
		return line
	}
	return fmt.Sprintf("rank %d printed no traceback; %s then raised %s", rank, prefixWorker(key), exc)
}

// prefixWorker names the worker of a prefix's key (cutPyPrefixes):
// "rank 3" for torch's "[rank3]:", "local rank 3" for --tee's "[default3]:".
func prefixWorker(key string) string {
	i := strings.IndexFunc(key, func(r rune) bool { return r >= '0' && r <= '9' })
	if key[:i] == "rank" {
		return "rank " + key[i:]
	}
	return "local rank " + key[i:]
}

// torchrunLogRE is a log line of torchrun's own, as each PyTorch 2.x writes
// one: "ERROR:torch.distributed.elastic.multiprocessing.api:...", "[...]
// torch.distributed.elastic.multiprocessing.api: [ERROR] ...", "E1205
// 10:00:00.000000 140 torch/distributed/elastic/multiprocessing/api.py:874]
// ...", and torch.distributed.run's likewise.
var torchrunLogRE = regexp.MustCompile(`torch[./]distributed[./](elastic|run\b)`)

// workerNoiseRE is what a worker prints as it exits that is not why: c10's
// warnings and notes ("[W1205 10:00:00.000000 4242
// torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1250] Warning: WARNING:
// process group has NOT been destroyed ...", torch 2.4's at the exit of a
// script that did not destroy it; before 2.4 "[W ProcessGroupNCCL.cpp:1168]
// ..."), and Python's warnings ("x.py:12: UserWarning: ...", followed by its
// indented source line).
var workerNoiseRE = regexp.MustCompile(`^\[?[WI](?:[0-9]{4} [0-9:.]+ +[0-9]+)? ?[^ \]]+:[0-9]+\]|^\S.*:[0-9]+: [A-Za-z]*Warning: `)

// workerLastLine is, for a worker that exited with a status but printed no
// traceback (sys.exit("no data in /data"), exit(1) after a message of its
// own), the last line with words that the workers printed, the root cause's
// rank's where prefixes say which lines are whose (whose: it is): not torchrun's own that
// follow it (its log lines (torchrunLogRE), "failed (exitcode: 1) local_rank: 0 ...",
// "Sending process 4243 closing signal SIGTERM", and its traceback ending in
// ChildFailedError), nor NCCL's INFO lines (nccltune sets NCCL_DEBUG=INFO),
// c10's warnings and Python's (workerNoiseRE), nor lines indented under
// another, nor torchrun's banner above the workers' output ("Setting
// OMP_NUM_THREADS environment variable ..."). "" where there is none.
func workerLastLine(lines []string, preferred func(role string, n int) bool, pid string) (line string, whose bool) {
	// torchrun's traceback: from its last unprefixed header on.
	for j := len(lines) - 1; j >= 0; j-- {
		if strings.HasPrefix(strings.TrimRight(lines[j], "\r"), "Traceback (most recent call last):") {
			if slices.ContainsFunc(lines[j:], func(l string) bool { return strings.Contains(l, "ChildFailedError") }) {
				lines = lines[:j]
			}
			break
		}
	}
	// torchrun's banner, above every worker's line.
	for j := len(lines) - 1; j >= 0; j-- {
		if strings.Contains(lines[j], "Setting OMP_NUM_THREADS environment variable") {
			lines = lines[j+1:]
			break
		}
	}
	last := ""
	for j := len(lines) - 1; j >= 0; j-- {
		_, isPreferred, line := cutPyPrefixes(plainLine(lines[j]), preferred)
		// A progress bar rewrites its line with '\r': the line is what a
		// terminal shows, its last part.
		if k := strings.LastIndexByte(line, '\r'); k >= 0 {
			line = line[k+1:]
		}
		indented := line != "" && (line[0] == ' ' || line[0] == '\t')
		line = strings.TrimSpace(line)
		switch {
		case !saysSomething(line),
			indented, strings.Contains(line, "distributed") && torchrunLogRE.MatchString(line),
			strings.Contains(line, " NCCL INFO "), isWorkerNoise(line), otherProcessNCCL(line, pid),
			strings.Contains(line, "%|"), // tqdm's bar ("10%|█   | 10/100 [...]")
			strings.HasPrefix(line, "wandb: ") && !strings.Contains(line, "ERROR"): // W&B's summary at exit
		case isPreferred:
			return clip(line), true
		case last == "":
			last = line
		}
	}
	return clip(last), false
}

// ncclLinePID is the process of an NCCL log line: "host:pid:tid [dev] NCCL WARN ...".
var ncclLinePID = regexp.MustCompile(`^[^\s:]+:([0-9]+):[0-9]+ \[[0-9]+\] NCCL `)

// otherProcessNCCL reports whether line is NCCL's from a process other than
// pid, the root cause's: a surviving rank's warnings as its peer exits
// ("socket closed", "remote process exited") follow the root cause's own
// last line and are not why.
func otherProcessNCCL(line, pid string) bool {
	if !strings.Contains(line, " NCCL ") {
		return false
	}
	m := ncclLinePID.FindStringSubmatch(line)
	return m != nil && m[1] != pid
}

// maxWorkerLine bounds workerLastLine's detail: the line it takes may be
// anything a worker printed (a dump of a tensor, a line of megabytes).
const maxWorkerLine = 512

// clip is line cut to maxWorkerLine bytes (clipTo).
func clip(line string) string { return clipTo(line, maxWorkerLine) }

// clipTo is s cut to n bytes, at a character's start, "..." marking the cut.
func clipTo(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return text.Prefix(s, n) + "..."
}

// isWorkerNoise is workerNoiseRE's match, its regexp run only on a line
// that could match it (one of megabytes costs a pass of the NFA).
func isWorkerNoise(line string) bool {
	could := line != "" && (line[0] == '[' || line[0] == 'W' || line[0] == 'I') || strings.Contains(line, "Warning: ")
	return could && workerNoiseRE.MatchString(line)
}

// lastRule is where the last line of output that is a rule of '='
// (isRule) begins, -1 where none is: read from the end, line by
// line, as the report's rule is a few lines above its root cause, where
// the regexp would pass over every byte of the output before it.
func lastRule(output []byte) int {
	for end := len(output); end >= 0; {
		start := bytes.LastIndexByte(output[:end], '\n') + 1
		if isRule(string(output[start:end])) {
			return start
		}
		end = start - 1
	}
	return -1
}

// isRule reports whether line is a rule of '=', as torchrun draws around its report.
func isRule(line string) bool {
	line = strings.TrimRight(line, " \t\r\v\f")
	return line != "" && strings.Trim(line, "=") == ""
}

const torchrunRootCause = "Root Cause (first observed failure):"

// torchrunReport is where the root cause of torchrun's report of the first
// worker to fail begins in output, -1 where there is none. On several
// nodes each node's torchrun prints its own, as they leave their exit
// barrier together, in no order: the report whose failure was observed
// first (its time field, of seconds) is the root cause's, the last of
// those where several were observed in that second. The last report is
// taken otherwise: a worker's output, printed before torchrun's, may hold
// the words too.
func torchrunReport(output []byte) int {
	var starts []int
	for i := 0; ; {
		j := bytes.Index(output[i:], []byte(torchrunRootCause))
		if j < 0 {
			break
		}
		starts = append(starts, i+j)
		i += j + 1
	}
	best, bestTime := -1, ""
	for k, i := range starts {
		end := len(output)
		if k+1 < len(starts) {
			end = starts[k+1]
		}
		m := torchrunTimeRE.FindSubmatch(output[i:end])
		if m == nil {
			return starts[len(starts)-1]
		}
		if t := string(m[1]); best < 0 || t <= bestTime {
			best, bestTime = i, t
		}
	}
	return best
}

// torchrunTimeRE is the time a report's failure was observed
// ("2026-12-07_17:15:56", which sorts as it reads).
var torchrunTimeRE = regexp.MustCompile(`(?m)^\s*time\s*: ([0-9]{4}-[0-9]{2}-[0-9]{2}_[0-9]{2}:[0-9]{2}:[0-9]{2})\s*$`)

var (
	torchrunRankRE      = regexp.MustCompile(`(?m)^\s*rank\s*: ([0-9]+) \(local_rank: ([0-9]+)\)`)
	torchrunErrorFileRE = regexp.MustCompile(`(?m)^\s*error_file\s*: (.*?)\s*$`)
	torchrunTracebackRE = regexp.MustCompile(`(?m)^\s*traceback\s*: `)
)

// torchrunTraceback is the exception in the traceback field of the root
// cause's report: the traceback the worker wrote to its error file, which
// torchrun prints with two more spaces at the head of every line after the
// first; or the field's first line where it is a message without a traceback.
func torchrunTraceback(root []byte) string {
	loc := torchrunTracebackRE.FindIndex(root)
	if loc == nil {
		return ""
	}
	lines := strings.Split(string(root[loc[1]:]), "\n")
	if end := slices.IndexFunc(lines, isRule); end >= 0 {
		lines = lines[:end]
	}
	for j := 1; j < len(lines); j++ {
		lines[j] = strings.TrimPrefix(lines[j], "  ")
	}
	if detail, _, _ := lastException(lines, nil); detail != "" {
		return detail
	}
	first := strings.TrimSpace(lines[0])
	if first == "" || first == "<N/A>" || strings.HasPrefix(first, "To enable traceback") || strings.HasPrefix(first, "Traceback (most recent call last)") {
		return ""
	}
	return first
}

var (
	// pyPrefixRE is the prefix of a worker's line under torchrun: torch's
	// "[rank3]:", torchrun --tee's "[default3]:" (role and local rank).
	pyPrefixRE = regexp.MustCompile(`^\[([A-Za-z_]*)([0-9]+)\]: ?`)
	// sgrRE is a terminal's colour sequence, which Python 3.13 puts in its
	// tracebacks where FORCE_COLOR or PYTHON_COLORS=1 asks for colour on a
	// pipe ("\x1b[1;35mRuntimeError\x1b[0m: \x1b[35mboom\x1b[0m").
	sgrRE = regexp.MustCompile("\x1b\\[[0-9;]*m")
	// pyFrameRE is a frame of a Python traceback.
	pyFrameRE = regexp.MustCompile(`^\s+File ".*", line [0-9]+`)
	// pyExceptionRE is the line that ends a Python traceback: the
	// exception's (dotted) name, then ": " and its message, if any.
	pyExceptionRE = regexp.MustCompile(`^(?:[A-Za-z_][A-Za-z0-9_]*\.)*[A-Za-z_][A-Za-z0-9_]*(?::|: .*)?$`)
)

// stripPyPrefixes is line without the workers' prefixes at its head, all of
// them where they nest ("[default0]:[rank0]: ", torch's under --tee's).
func stripPyPrefixes(line string) string {
	_, _, rest := cutPyPrefixes(line, nil)
	return rest
}

// maxPyPrefix bounds the head of a line that pyPrefixRE reads, so that a
// line of megabytes costs no more than a short one at each prefix it has.
const maxPyPrefix = 128

// cutPyPrefixes strips the workers' prefixes at line's head (pyPrefixRE),
// all of them where they nest ("[default0]:[rank0]: "): key is the outer
// one's role and number ("" where none), isPreferred whether preferred
// (nil: none) takes any of them.
func cutPyPrefixes(line string, preferred func(role string, n int) bool) (key string, isPreferred bool, rest string) {
	for len(line) > 0 && line[0] == '[' {
		m := pyPrefixRE.FindStringSubmatch(line[:min(len(line), maxPyPrefix)])
		if m == nil {
			break
		}
		if key == "" {
			key = m[1] + m[2]
		}
		n, err := strconv.Atoi(m[2])
		isPreferred = isPreferred || err == nil && preferred != nil && preferred(m[1], n)
		line = line[len(m[0]):]
	}
	return key, isPreferred, line
}

// plainLine is line less a '\r' ending it and the colour sequences in it
// (sgrRE), the regexp run only where there is an escape.
func plainLine(line string) string {
	line = strings.TrimRight(line, "\r")
	if strings.IndexByte(line, '\x1b') >= 0 {
		line = sgrRE.ReplaceAllString(line, "")
	}
	return line
}

// lastException is the exception line ending the last Python traceback in
// lines that is not torchrun's own (ChildFailedError): the first line after
// the traceback's header or frames that is not indented and has the form of
// one, so that the rest of a message of several lines is passed over. Each
// prefixed line is read with its prefix's other lines (the ranks' tracebacks
// interleave). The last exception of a prefix that preferred takes (nil:
// none) goes before an unprefixed one, and that before another prefix's;
// key is the prefix's (cutPyPrefixes, "" for none), whose whether
// preferred takes it.
func lastException(lines []string, preferred func(role string, n int) bool) (exc, key string, whose bool) {
	inTraceback := map[string]bool{} // by prefix
	var plain, other, otherKey string
	for _, line := range lines {
		// The prefix's role and number, not its spacing, name the worker:
		// --tee's "[default0]:" is followed by the line as it was ("  File"
		// keeps its two spaces, where the one after torch's "[rank0]:" is
		// the prefix's). A line under both ("[default0]:[rank0]: ") is read
		// under the outer one, and preferred for either.
		k, isPreferred, line := cutPyPrefixes(plainLine(line), preferred)
		switch {
		case strings.TrimSpace(line) == "":
		case strings.HasPrefix(line, "Traceback (most recent call last):"), strings.Contains(line, `File "`) && pyFrameRE.MatchString(line):
			inTraceback[k] = true
		case line[0] == ' ' || line[0] == '\t':
			// a frame's source line, a caret line, or an indented message
		case inTraceback[k] && pyExceptionRE.MatchString(line):
			inTraceback[k] = false
			name, _, _ := strings.Cut(line, ":")
			if strings.HasSuffix(name, "ChildFailedError") {
				continue // torchrun's own, raised with its report
			}
			switch line = strings.TrimSpace(line); {
			case isPreferred:
				exc, key, whose = line, k, true
			case k == "":
				plain = line
			default:
				other, otherKey = line, k
			}
		}
	}
	switch {
	case whose:
		return exc, key, true
	case plain != "":
		return plain, "", false
	}
	return other, otherKey, false
}

// Check finds torchrun.
func (t Torchrun) Check() error {
	if _, err := exec.LookPath(t.command()); err != nil {
		return fmt.Errorf("launcher torchrun: %w", err)
	}
	return nil
}

// NewLauncher builds the launcher of a space's [launcher] table.
func NewLauncher(l space.LauncherSettings) Launcher {
	switch l.Kind {
	case "mpirun":
		return MPIRun{Flavor: l.Flavor, Command: l.Command, NP: l.NP, Hostfile: l.Hostfile, MapBy: l.MapBy, BindTo: l.BindTo, Args: l.Args}
	case "srun":
		return Srun{Command: l.Command, Nodes: l.Nodes, TasksPerNode: l.TasksPerNode, Args: l.Args}
	case "torchrun":
		return Torchrun{Command: l.Command, NProcPerNode: l.NProcPerNode, NNodes: l.Nodes, RdzvEndpoint: l.RdzvEndpoint, Args: l.Args}
	}
	return Local{}
}
