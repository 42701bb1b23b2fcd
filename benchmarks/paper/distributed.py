"""Data-parallel training on ``torch.distributed``: processes, sharded batches, one gradient.

A run with ``P`` processes trains the same model as one process does: every process draws the
same global batch order (same seed), takes its contiguous part of each global batch, and scales
its summed loss by ``P / B`` (``B`` the global batch size), so that DistributedDataParallel's
gradient average equals the gradient of the mean loss over the global batch. Only the order of
floating-point sums differs from one process, so the results agree within rounding.

:func:`launch` starts ``P`` processes on this machine: gloo when they train on the CPU (also
on a machine with GPUs), nccl when they train on CUDA, process ``r`` on ``cuda:r``. Under
``torchrun`` (``RANK``/``WORLD_SIZE``/``MASTER_ADDR`` set) the processes exist already and
:func:`launch` runs the body in this one.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch
import torch.distributed as dist
from torch import Tensor, nn

from matlang.errors import MatlangError


@dataclass(frozen=True)
class Group:
    """This process's place: ``rank`` of ``world`` (``world == 1``: no process group), and the
    device it trains on (``"cpu"``, or one CUDA device per process)."""

    rank: int = 0
    world: int = 1
    device: str = "cpu"

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    def shard(self, batch: Sequence[int]) -> list[int]:
        """This process's contiguous part of a global batch (sizes differ by at most one)."""
        n, p = len(batch), self.world
        lo = self.rank * n // p
        hi = (self.rank + 1) * n // p
        return list(batch[lo:hi])

    def wrap(self, model: nn.Module) -> nn.Module:
        """``model`` under DistributedDataParallel (itself for one process)."""
        if self.world == 1:
            return model
        # every parameter takes part in every forward pass (an empty shard multiplies them
        # by 0), so DDP need not search the graph for unused ones
        ids = [torch.device(self.device).index] if self.device.startswith("cuda") else None
        return nn.parallel.DistributedDataParallel(model, device_ids=ids)

    def loss_scale(self, global_batch: int) -> float:
        """The factor on this process's summed loss (see the module docstring)."""
        return self.world / max(1, global_batch)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def check_device(device: str, nproc: int = 1) -> str:
    """``device`` (``cpu``, ``cuda`` or ``cuda:K``) as torch names it, or an error saying why
    it cannot train here: no CUDA device, a device index past the last one, or more processes
    than GPUs (nccl, the CUDA backend, wants one GPU per process)."""
    try:
        dev = torch.device(device)
    except RuntimeError:
        raise MatlangError(f"--device takes cpu, cuda or cuda:K, got {device!r}") from None
    if dev.type == "cpu":
        return "cpu"
    if dev.type != "cuda":
        raise MatlangError(f"--device takes cpu, cuda or cuda:K, got {device!r}")
    count = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if count == 0:
        raise MatlangError(f"--device {device}: torch sees no CUDA device on this machine")
    if dev.index is not None and dev.index >= count:
        raise MatlangError(f"--device {device}: this machine has {count} CUDA device(s)")
    if nproc > 1 and (dev.index is not None or nproc > count):
        raise MatlangError(
            f"--device {device} --nproc {nproc}: data-parallel CUDA training runs one process "
            f"per GPU (process r on cuda:r) and this machine has {count}; give --device cuda "
            f"and at most {count} processes"
        )
    return str(dev) if dev.index is not None else "cuda:0"


def one_process_device(device: str, bench: str, nproc: int, *others: tuple[bool, str]) -> str:
    """:func:`check_device` for a bench that trains on a GPU in one process, seed by seed: an
    error naming the first option that asks for more (``others``: ``(given, option)`` pairs
    checked before ``--nproc`` and torchrun) when ``device`` is a GPU."""
    dev = check_device(device)
    several = nproc > 1 or from_environment() is not None
    asks = [flag for given, flag in (*others, (several, "--nproc (or torchrun)")) if given]
    if dev != "cpu" and asks:
        raise MatlangError(
            f"--device {device}: bench {bench} trains on a GPU in one process, seed by seed; "
            f"drop {asks[0]} or train on the CPU (--device cpu)"
        )
    return dev


def device_label(device: str, nproc: int = 1) -> str:
    """What a run's ``device`` field says: ``cpu``, or the GPU's name (``NVIDIA H200 (cuda)``;
    with ``P`` processes, ``P × …``). Runs of a file may differ here: the settings that must
    agree are the ``config``'s, and a fold's accuracy does not depend on where it trained beyond
    rounding."""
    if device == "cpu":
        return "cpu"
    name = f"{torch.cuda.get_device_name(torch.device(device))} (cuda)"
    return name if nproc == 1 else f"{nproc} × {name}"


def _rank_device(device: str, rank: int) -> str:
    """The device of process ``rank`` of several when the run trains on ``device``: the CPU,
    or ``cuda:rank`` (one GPU per process)."""
    if device == "cpu":
        return device
    torch.cuda.set_device(rank)
    return f"cuda:{rank}"


def from_environment(device: str = "cpu") -> Group | None:
    """The group ``torchrun`` describes in the environment, initialised, training on
    ``device`` (CUDA: the process's ``LOCAL_RANK`` GPU); ``None`` outside."""
    if "RANK" not in os.environ or "WORLD_SIZE" not in os.environ:
        return None
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    local = int(os.environ.get("LOCAL_RANK", rank))
    group = Group(rank, world, _rank_device(device, local) if world > 1 else device)
    if group.world > 1 and not dist.is_initialized():
        dist.init_process_group(_backend(group.device))
    return group


def follow_torchrun(args: Any) -> None:
    """Under ``torchrun``, only process 0 writes the result file and prints: the others run
    with ``--no-save`` and a silent standard output."""
    import sys

    rank = int(os.environ.get("RANK", "0"))
    if "WORLD_SIZE" in os.environ and rank != 0:
        args.no_save = True
        args.append = False
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - for the rest of this process


def _backend(device: str) -> str:
    """The backend for processes training on ``device``: nccl for CUDA (where torch has it),
    gloo for the CPU, also on a machine with GPUs (nccl reduces only CUDA tensors)."""
    return "nccl" if device.startswith("cuda") and dist.is_nccl_available() else "gloo"


def _worker(
    rank: int, world: int, port: int, body: Callable[[Group], Any], out: str, device: str
) -> None:
    os.environ.update(
        MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank), WORLD_SIZE=str(world)
    )
    torch.set_num_threads(1)
    device = _rank_device(device, rank)
    dist.init_process_group(_backend(device), rank=rank, world_size=world)
    try:
        result = body(Group(rank, world, device))
        if rank == 0:
            # through a file: tensors sent through a queue are shared memory that dies with
            # the process that sent them
            torch.save(result, out)
    finally:
        dist.destroy_process_group()


def launch(body: Callable[[Group], Any], nproc: int = 1, device: str = "cpu") -> Any:
    """``body(group)`` in ``nproc`` processes; the result of process 0. Under ``torchrun``,
    ``body`` runs in this process with the group of the environment. ``body`` must be
    picklable (a module-level function or a ``functools.partial`` of one)."""
    if nproc < 1:
        raise MatlangError(f"--nproc must be at least 1, got {nproc}")
    env = from_environment(device)
    if env is not None:
        return body(env)
    if nproc == 1:
        return body(Group(device=device))
    import tempfile

    import torch.multiprocessing as mp

    with tempfile.TemporaryDirectory(prefix="matlang-ddp-") as tmp:
        out = os.path.join(tmp, "result.pt")
        mp.start_processes(
            _worker,
            args=(nproc, _free_port(), body, out, device),
            nprocs=nproc,
            join=True,
            start_method="spawn",
        )
        return torch.load(out, weights_only=False)


def all_sum(t: Tensor, group: Group) -> Tensor:
    """The sum of ``t`` over the processes (``t`` itself for one)."""
    if group.world == 1:
        return t
    t = t.clone()
    dist.all_reduce(t)
    return t


__all__ = [
    "Group",
    "all_sum",
    "check_device",
    "device_label",
    "one_process_device",
    "follow_torchrun",
    "from_environment",
    "launch",
]
