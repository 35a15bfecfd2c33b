"""Where scan tasks run: all cores of this machine, or Dask.

Both run :func:`fidelity.scan.partition.index_chunk` and
:func:`~fidelity.scan.partition.replay_batch` on the same tasks and return
results in task order; results merge by addition, so the output does not
depend on the executor. Why Dask rather than Ray: docs/scan.md, "Executors"."""

from __future__ import annotations

import gc
import multiprocessing
import os
import signal
from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["Executor", "LocalExecutor", "DaskExecutor", "make_executor", "EXECUTORS"]

EXECUTORS = ("local", "dask")


class Executor:
    """Runs ``fn(*args)`` for each tuple of ``items``; results in order.
    ``done`` is called once per finished task (a progress bar)."""

    name = ""
    workers = 1

    def map(self, fn: Callable[..., Any], items: Sequence[tuple[Any, ...]],
            done: Callable[[], None] | None = None) -> list[Any]:
        raise NotImplementedError

    def close(self) -> None:
        pass


def _ignore_sigint() -> None:
    """A pool worker's initializer: only the parent acts on Ctrl-C (it
    terminates the pool), so a worker prints no traceback."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _call(packed: tuple[Callable[..., Any], tuple[Any, ...]]) -> Any:
    fn, args = packed
    return fn(*args)


class LocalExecutor(Executor):
    """A process pool over this machine's cores (``workers=1``: in this process)."""

    name = "local"

    def __init__(self, workers: int | None = None) -> None:
        self.workers = max(1, workers or os.cpu_count() or 1)
        self._pool: Any = None

    def map(self, fn: Callable[..., Any], items: Sequence[tuple[Any, ...]],
            done: Callable[[], None] | None = None) -> list[Any]:
        if self.workers == 1 or len(items) <= 1:
            out = []
            for args in items:
                out.append(fn(*args))
                if done:
                    done()
            return out
        if self._pool is None:
            methods = multiprocessing.get_all_start_methods()
            ctx = multiprocessing.get_context("fork" if "fork" in methods else "spawn")
            # forked workers share the parent's pages until they write to
            # them; the cyclic collector's passes over inherited objects
            # write to every one (copying the loaded vocabularies' pages into
            # each worker): frozen objects are left out of those passes
            gc.collect()
            gc.freeze()
            try:
                self._pool = ctx.Pool(self.workers, initializer=_ignore_sigint)
            finally:
                gc.unfreeze()
        out = []
        try:
            for result in self._pool.imap(_call, [(fn, args) for args in items], chunksize=1):
                out.append(result)
                if done:
                    done()
        except BaseException:  # Ctrl-C, or a task that failed: the other tasks are not waited for
            self.terminate()
            raise
        return out

    def close(self) -> None:
        """Let the workers finish and end them (after a successful map)."""
        if self._pool is not None:
            self._pool.close()
            self._pool.join()
            self._pool = None

    def terminate(self) -> None:
        """End the workers now, whatever they are doing (Ctrl-C, an error)."""
        if self._pool is not None:
            pool, self._pool = self._pool, None
            pool.terminate()
            pool.join()

    def restart(self) -> None:
        """A fresh pool at the next map (forked workers inherit what the
        parent has loaded since)."""
        self.close()


class DaskExecutor(Executor):
    """Dask: its local process scheduler, or a ``dask.distributed`` cluster
    when ``address`` names a scheduler (workers must see the same files)."""

    name = "dask"

    def __init__(self, workers: int | None = None, address: str | None = None) -> None:
        try:
            import dask  # noqa: F401
        except ImportError:
            from ..errors import InputError

            raise InputError("--executor dask needs Dask: pip install 'fidelity[scan-dask]'") from None
        self.workers = max(1, workers or os.cpu_count() or 1)
        self.address = address
        self._client: Any = None

    def map(self, fn: Callable[..., Any], items: Sequence[tuple[Any, ...]],
            done: Callable[[], None] | None = None) -> list[Any]:
        if self.address:
            if self._client is None:
                from distributed import Client

                # typed as Any: distributed's Client is unannotated in some releases and
                # absent where only dask is installed, so no `type: ignore` fits both
                client_cls: Any = Client
                self._client = client_cls(self.address)
            futures = [self._client.submit(fn, *args, pure=False) for args in items]
            out = self._client.gather(futures)
        else:
            from dask.base import compute
            from dask.delayed import delayed

            tasks = [delayed(fn, pure=False)(*args) for args in items]
            scheduler = "sync" if self.workers == 1 else "processes"
            out = list(compute(*tasks, scheduler=scheduler, num_workers=self.workers))  # type: ignore[no-untyped-call]  # dask's compute is unannotated
        if done:
            for _ in items:
                done()
        return list(out)

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None


def make_executor(name: str, workers: int | None = None, address: str | None = None) -> Executor:
    if name == "local":
        return LocalExecutor(workers)
    if name == "dask":
        return DaskExecutor(workers, address)
    from ..errors import InputError

    raise InputError(f"unknown executor {name!r} (known: {', '.join(EXECUTORS)})")
