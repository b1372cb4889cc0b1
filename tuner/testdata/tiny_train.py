"""A tiny data-parallel training loop, the user's own program in the command
benchmark's tests: DistributedDataParallel over gloo on CPU (NCCL on the GPU
with --cuda), one rank per process (ranks from torchrun's or mpirun's
environment), printing each step's time the way Megatron-LM does. With --fail
it dies as a broken NCCL would."""
import os
import sys
import time


def env_int(*names, default):
    for name in names:
        if os.environ.get(name):
            return int(os.environ[name])
    return default


def main():
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 8
    if "--fail" in sys.argv:
        print("RuntimeError: NCCL error in: ProcessGroupNCCL.cpp:1970, unhandled system error", flush=True)
        sys.exit(1)
    import torch
    import torch.distributed as dist

    rank = env_int("RANK", "OMPI_COMM_WORLD_RANK", default=0)
    world = env_int("WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", default=1)
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29533")
    cuda = "--cuda" in sys.argv
    device = torch.device("cuda", env_int("LOCAL_RANK", default=0)) if cuda else torch.device("cpu")
    dist.init_process_group("nccl" if cuda else "gloo", rank=rank, world_size=world)
    torch.manual_seed(rank)
    width = 4096 if cuda else 256
    layers = torch.nn.Sequential(torch.nn.Linear(width, width), torch.nn.ReLU(), torch.nn.Linear(width, width)).to(device)
    model = torch.nn.parallel.DistributedDataParallel(layers, device_ids=[device.index] if cuda else None)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for i in range(steps):
        start = time.perf_counter()
        loss = model(torch.randn(64, width, device=device)).square().mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        dist.barrier()
        if cuda:
            torch.cuda.synchronize()
        ms = (time.perf_counter() - start) * 1e3
        if rank == 0:
            print(f" iteration {i + 1:8d}/{steps:8d} | elapsed time per iteration (ms): {ms:.3f} | loss: {loss.item():.4f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
