"""nccltune's DDP step benchmark (written out by nccltune for each campaign).

Builds a stack of linear layers with about --params parameters, wraps it in
torch.nn.parallel.DistributedDataParallel, and times --steps training steps
after --warmup. Each rank prints one line:

    NCCLTUNE_DDP {"rank": 0, "world": 8, "step_ms_mean": ..., ...}

Ranks come from torchrun (RANK, WORLD_SIZE, LOCAL_RANK) or from mpirun
(OMPI_COMM_WORLD_*, PMI_*). Errors are printed as NCCLTUNE_DDP_ERROR lines with
a kind nccltune classifies (no_torch, no_cuda, no_rendezvous, oom, nccl, wrong,
error). After the timed steps each rank checks one step's all-reduced
gradients against its own: a wrong reduction is no result.
"""
import argparse
import json
import math
import os
import re
import statistics
import sys
import time
import traceback


def emit(tag, obj):
    # One write per line, so that ranks sharing a pipe do not split each other's lines.
    sys.stdout.write(tag + " " + json.dumps(obj) + "\n")
    sys.stdout.flush()


def fail(kind, message, code=2):
    # CUDA's OOM text runs on for a paragraph: its first two sentences say it all.
    message = ". ".join(message.split(". ")[:2])
    emit("NCCLTUNE_DDP_ERROR", {"kind": kind, "message": message})
    leave(code)


def leave(code):
    """Exits at once, past the interpreter's teardown: ProcessGroupNCCL's,
    without destroy_process_group, aborts NCCL's communicators, which waits
    on the ranks still in a collective; a failed rank that waited there
    kept its launcher from ending the others until the trial's timeout."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def parse_size(text):
    """A parameter count written as nccltune's sizes are ("100M", "4MB",
    "1 MiB", "64k"), each unit a power of 1000: no form nccltune accepts
    fails every trial."""
    m = re.match(r"\s*(\d+(?:\.\d+)?)\s*(?:([KMGT])(?:I?B)?|B)?\s*$", text, re.IGNORECASE)
    if not m:
        raise argparse.ArgumentTypeError("invalid size %r (want a count such as 100M or 1G)" % text)
    return int(float(m.group(1)) * {"K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}.get((m.group(2) or "").upper(), 1))


# Where each launcher puts a rank's place in the world, read from its own
# variables only (--ranks-from): torchrun's RANK, WORLD_SIZE and LOCAL_RANK;
# srun's SLURM_PROCID, SLURM_NTASKS (the step's) and SLURM_LOCALID; mpirun's,
# Open MPI's or MPICH's PMI ones. Another launcher's, inherited from whatever
# started nccltune (a job script's exported WORLD_SIZE or RANK, which srun and
# mpirun hand every rank as they are; the batch step's SLURM_PROCID under
# torchrun), describe that caller's world, not the trial's: read first, a
# world of another size waited in init_process_group until the timeout.
RANK_SOURCES = {
    "torchrun": (("RANK",), ("WORLD_SIZE",), ("LOCAL_RANK",)),
    "srun": (("SLURM_PROCID",), ("SLURM_NTASKS",), ("SLURM_LOCALID",)),
    "mpirun": (("OMPI_COMM_WORLD_RANK", "PMI_RANK"), ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE"),
               ("OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID")),
    "local": ((), (), ()),
}


def env_first(*names, default=None):
    for name in names:
        if os.environ.get(name):
            return os.environ[name]
    return default


def env_int(names, default):
    """The first of the variables names that is set, as an integer."""
    for name in names:
        if os.environ.get(name):
            try:
                return int(os.environ[name])
            except ValueError:
                fail("no_rendezvous", "%s=%s, from the launcher, is no integer" % (name, os.environ[name]))
    return default


def first_host(nodelist):
    """The first host of a Slurm host list: "n[07-08,12],m3" gives "n07"."""
    depth, end = 0, len(nodelist)
    for i, c in enumerate(nodelist):
        depth += {"[": 1, "]": -1}.get(c, 0)
        if c == "," and depth == 0:
            end = i
            break
    host = nodelist[:end]
    while "[" in host:
        head, rest = host.split("[", 1)
        ranges, tail = rest.split("]", 1)
        host = head + ranges.split(",")[0].split("-")[0] + tail
    return host


def rendezvous_host(source):
    """Where rank 0, which hosts the rendezvous, runs, as the launcher that
    started the ranks (source) tells it; None where it does not (torchrun
    sets MASTER_ADDR itself; mpirun's ranks on several nodes know no host
    list). A MASTER_ADDR inherited from the job script names the job's first
    node, not the trial's step's: steps of launcher.groups run on other
    nodes, where a group's ranks sent there would join another group's world
    or wait until the timeout."""
    if source == "srun" and os.environ.get("SLURM_STEP_NODELIST"):
        nodes = os.environ["SLURM_STEP_NODELIST"]
        if env_int(("SLURM_STEP_NUM_NODES",), 1) <= 1:
            return "127.0.0.1"
        # On the job's own nodes, rank 0 runs where the job script's
        # MASTER_ADDR points: it is kept, an address where Slurm's node
        # names do not resolve (NodeName is not NodeHostname).
        if os.environ.get("MASTER_ADDR") and nodes == os.environ.get("SLURM_JOB_NODELIST"):
            return None
        return first_host(nodes)
    if source == "local" or source == "mpirun" and not mpirun_nodes():
        return "127.0.0.1"
    return None


def mpirun_nodes():
    """Whether mpirun's ranks run on several nodes: a node's ranks are fewer
    than the world's (Open MPI's and MPICH's counts; one node where neither
    says)."""
    local = env_int(("OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS"), None)
    world = env_int(("OMPI_COMM_WORLD_SIZE", "PMI_SIZE"), None)
    return local is not None and world is not None and local < world


def rank_source(ranks_from):
    """The launcher whose variables give the ranks: ranks_from, or for "any"
    the one whose rank variable is set."""
    if ranks_from != "any":
        return ranks_from
    for source in ("torchrun", "mpirun", "srun"):
        if env_first(*RANK_SOURCES[source][0]):
            return source
    return "local"


def check(model, ddp, opt, x, dist, rank, world):
    """Fails the run where DDP's all-reduce gave wrong gradients (an NCCL
    setting that corrupts data steps as fast as any: its time must not be
    a result). Every rank steps on the same model and input, its loss
    scaled by a power of two of its own, so that the average of the ranks'
    gradients is each rank's own unscaled one times the scales' mean: a
    rank's part lost, counted twice or taken in another's place shows too.
    A power of two scales every rounding alike, so matrix products of less
    precision (TF32) round the scaled gradients as they round the rank's
    own. A scale of 2 ** (rank % 4) alone made ranks 4 apart alike; there is
    a step for each base-4 digit of the ranks, scaled by 2 ** (digit + 1),
    so that any two ranks differ in one of them, while the smallest part
    stays an eighth of the largest; and none is 1, the timed steps' scale,
    so that a reduction that gives the step before's data shows."""
    worst, digits = 0.0, 1
    while 4 ** digits < world:
        digits += 1
    for digit in range(digits):
        worst = max(worst, check_step(model, ddp, opt, x, rank, world, lambda r: 2.0 ** (r // 4 ** digit % 4 + 1)))
    # Each rank's verdict is every rank's, so that none goes on to report a
    # time; a rank whose own check failed fails even where this reduction
    # is wrong too.
    import torch
    wrong = torch.tensor([float(not worst <= 1e-3)], device=x.device)
    dist.all_reduce(wrong, op=dist.ReduceOp.MAX)
    if not worst <= 1e-3:
        fail("wrong", "DDP's all-reduced gradients differ from those the ranks' steps make by up to %.3g of "
             "their largest" % worst)
    if wrong.item() != 0:
        fail("wrong", "another rank's all-reduced gradients differ from those the ranks' steps make")


def check_step(model, ddp, opt, x, rank, world, scale):
    """One step of check, each rank's loss scaled by scale(rank): how far,
    relative to its largest, a parameter's reduced gradient is from the one
    the ranks' scales make of this rank's own (inf for a NaN)."""
    import torch
    opt.zero_grad(set_to_none=True)
    (ddp(x).float().pow(2).mean() * scale(rank)).backward()
    mean = sum(scale(r) for r in range(world)) / world
    worst = 0.0
    for group in groups(list(model.parameters()), 8):
        # Through the module, not DDP, and by autograd.grad, which leaves
        # .grad and DDP's hooks alone: this rank's gradients, not reduced. A
        # group at a time: the whole model's, beside the reduced ones, need
        # memory that a model filling the GPU in the timed steps lacks.
        own = torch.autograd.grad(model(x).float().pow(2).mean(), group)
        for p, g in zip(group, own):
            largest = float(torch.linalg.vector_norm(g, float("inf")))
            err = float(torch.linalg.vector_norm(g.mul_(mean).sub_(p.grad), float("inf"))) / max(largest, 1e-30)
            # A NaN is as wrong as can be: kept as one, a later parameter's
            # number replaced it.
            worst = max(worst, err if err == err else math.inf)
        del own
    opt.zero_grad(set_to_none=True)
    return worst


def groups(params, n):
    """params in consecutive groups of about 1/n of their elements (one
    parameter at least)."""
    limit = sum(p.numel() for p in params) / n
    group, size = [], 0
    for p in params:
        if group and size + p.numel() > limit:
            yield group
            group, size = [], 0
        group.append(p)
        size += p.numel()
    if group:
        yield group


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--params", type=parse_size, default="100M", help="model parameters, e.g. 100M")
    p.add_argument("--layers", type=int, default=8)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    p.add_argument("--master-port", type=int, default=29500,
                   help="rank 0's rendezvous port where MASTER_PORT is not set (nccltune's: one free per trial)")
    p.add_argument("--ranks-from", choices=sorted(RANK_SOURCES) + ["any"], default="any",
                   help="the launcher whose variables give the ranks (any: the one whose rank variable is set)")
    p.add_argument("--bucket-cap-mb", type=float, default=25.0)
    p.add_argument("--gradient-as-bucket-view", type=int, choices=[0, 1], default=0)
    p.add_argument("--static-graph", type=int, choices=[0, 1], default=0)
    args = p.parse_args()

    source = rank_source(args.ranks_from)
    rank_names, world_names, local_names = RANK_SOURCES[source]
    rank, world, local = env_int(rank_names, 0), env_int(world_names, 1), env_int(local_names, 0)
    if world < 1 or not 0 <= rank < world:
        # A rank outside its world has no rank 0 to meet: it waited for one
        # until the trial's timeout.
        fail("no_rendezvous", "the launcher's variables (%s) make this rank %d of a world of %d"
             % (", ".join(rank_names + world_names) or "none", rank, world))
    host = rendezvous_host(source)
    if host:
        os.environ["MASTER_ADDR"] = host
    elif source == "mpirun" and mpirun_nodes() and not os.environ.get("MASTER_ADDR"):
        fail("no_rendezvous", "MASTER_ADDR is not set, and the ranks run on several nodes: give rank 0's host "
             "(mpirun -x MASTER_ADDR=<first host>), or the others wait for it at 127.0.0.1 until the timeout")
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    if not os.environ.get("MASTER_PORT"):
        os.environ["MASTER_PORT"] = str(args.master_port)
    os.environ["RANK"], os.environ["WORLD_SIZE"] = str(rank), str(world)

    try:
        import torch
        import torch.distributed as dist
    except ImportError as e:
        fail("no_torch", "PyTorch is not installed for %s: %s" % (sys.executable, e))

    if args.device == "cuda":
        if not torch.cuda.is_available():
            fail("no_cuda", "CUDA is not available to PyTorch %s" % torch.__version__)
        torch.cuda.set_device(local % torch.cuda.device_count())
        device, backend = torch.device("cuda"), "nccl"
    else:
        device, backend = torch.device("cpu"), "gloo"

    try:
        dist.init_process_group(backend=backend, rank=rank, world_size=world)
    except Exception as e:  # noqa: BLE001 - reported, then nccltune classifies it
        fail("nccl" if "NCCL" in str(e) else "error", "init_process_group: %s" % e)

    hidden = max(8, int((args.params / args.layers) ** 0.5))
    torch.manual_seed(1234)
    times, n_params = [], 0
    try:
        # Built on the device directly: a model too large for the GPU fails at
        # once, instead of first filling host memory.
        layers = []
        for _ in range(args.layers):
            layers += [torch.nn.Linear(hidden, hidden, device=device), torch.nn.GELU()]
        model = torch.nn.Sequential(*layers)
        n_params = sum(p.numel() for p in model.parameters())
        ddp = torch.nn.parallel.DistributedDataParallel(
            model,
            device_ids=[device.index] if device.type == "cuda" else None,
            bucket_cap_mb=args.bucket_cap_mb,
            gradient_as_bucket_view=bool(args.gradient_as_bucket_view),
            static_graph=bool(args.static_graph),
        )
        opt = torch.optim.SGD(ddp.parameters(), lr=1e-4)
        x = torch.randn(args.batch, hidden, device=device)

        def step():
            opt.zero_grad(set_to_none=True)
            ddp(x).float().pow(2).mean().backward()
            opt.step()

        for i in range(args.warmup + args.steps):
            if device.type == "cuda":
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start.record()
                step()
                end.record()
                torch.cuda.synchronize()
                ms = start.elapsed_time(end)
            else:
                t0 = time.perf_counter()
                step()
                ms = (time.perf_counter() - t0) * 1e3
            if i >= args.warmup:
                times.append(ms)
        check(model, ddp, opt, x, dist, rank, world)
    except torch.cuda.OutOfMemoryError as e:
        fail("oom", "out of GPU memory for a model of about %s parameters: %s" % (args.params, str(e).splitlines()[0]))
    except RuntimeError as e:
        text = str(e)
        kind = "oom" if "out of memory" in text else "nccl" if "NCCL" in text else "error"
        fail(kind, text.splitlines()[0] if text else repr(e))

    times.sort()
    result = {
        "rank": rank, "world": world, "backend": backend, "device": device.type,
        "torch": torch.__version__, "params": n_params,
        # DDP all-reduces every gradient once per step: 4 bytes per fp32 parameter.
        "allreduce_bytes": 4 * n_params,
        "steps": len(times),
        "step_ms_mean": statistics.fmean(times),
        "step_ms_p50": times[len(times) // 2],
        "step_ms_p95": times[min(len(times) - 1, int(round(0.95 * (len(times) - 1))))],
    }
    if backend == "nccl":
        result["nccl"] = ".".join(str(v) for v in torch.cuda.nccl.version())
    emit("NCCLTUNE_DDP", result)
    dist.barrier()
    dist.destroy_process_group()
    # Past the teardown, as a failed rank leaves: DDP's reducer, freed as
    # main returned after the gradient check's extra step, waited there
    # for good in about one run in five (gloo, PyTorch 1.13).
    leave(0)


if __name__ == "__main__":
    try:
        main()
    except Exception:  # noqa: BLE001 - its traceback is the trial's reason
        traceback.print_exc()
        leave(1)
