"""The prefix caches' store: every token prefix written and still live, found
by longest match (a trie of token blocks with lifetimes), for the plain
prefix caches of :class:`fidelity.cache.simulator.Simulator` (OpenAI,
DeepSeek, Gemini, DashScope implicit, engines without a capacity). Its
results are a plain block trie's with a last-use stamp per node; the design:
``docs/prefix-store.md``.
"""

from __future__ import annotations

import sys
from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Hashable
from heapq import heapify, heappop, heappush
from itertools import compress, repeat
from operator import eq, itemgetter
from typing import Any

from ._base import as_token_array
from .append_file import AppendFile
from .packed_ids import ITEM, agreeing_blocks, common_tokens, first_id, packed, token_bytes_or_array

__all__ = ["PrefixStore"]

_NEG_INF = float("-inf")
#: children of one node past which it keeps them sorted by their bytes
_MANY = 16
_BLOCK = itemgetter(1)
#: the hash full blocks are keyed by (a module attribute, so that a test can
#: make every block clash)
_hash = hash
#: the key of a node no longer in the trie
_GONE = (-1, b"")
#: packed ids are native ``array('q')`` bytes, which :func:`first_id` reads as little-endian
_LITTLE_ENDIAN = sys.byteorder == "little"


class PrefixStore:
    """The prefix trie of one partition of an automatic prefix cache.

    ``unit``: tokens per trie block (shorter matches extend into the
    children of the deepest live block). ``ttl``: seconds an entry lives
    after its last use (``None``: no limit). ``expire``: drop dead blocks
    before each write (writes come in time order). ``records_in_memory``:
    the packed ids of at most this many requests stay in memory, the rest in
    a temporary file (the same answers).

    Liveness: a request that uses a block uses every block before it, so
    along a path the last use never increases with depth.
    """

    ROOT = 0

    def __init__(self, unit: int, ttl: float | None = None, expire: bool = False,
                 records_in_memory: int | None = None) -> None:
        if unit < 1:
            raise ValueError("unit must be at least 1")
        if records_in_memory is not None and records_in_memory < 1:
            raise ValueError("records_in_memory must be at least 1")
        self.unit = unit
        self.ttl = ttl
        #: dead blocks are dropped before each write (the caller writes in
        #: time order and asks about no earlier time)
        self.expire = expire and ttl is not None
        # nodes (ROOT is node 0 and belongs to no segment)
        self._children: dict[tuple[int, int], int] = {}  # (parent, hash of a full block) -> node
        # (parent, full block bytes) -> node, for a block whose hash a sibling's took first
        self._clash: dict[tuple[int, bytes], int] = {}
        self._kids: list[list[int]] = [[]]  # live children, in creation order
        # (parent, hash) of a full block (its key in ``_children``); (parent,
        # bytes) of a partial one (in no dict) or of a clashing one (``_clash``)
        self._key: list[tuple[int, Any]] = [(-1, b"")]
        self._first = array("q", [0])  # the first token id of each node's block
        self._depth: list[int] = [0]
        self._seg: list[int] = [-1]
        # segments: chains of nodes last used by the same request
        self._nodes: list[list[int]] = []
        self._stamp: list[int] = []  # request id of the last use
        self._leafy: list[bool] = []  # the chain ends in a partial block
        self._ver: list[int] = []  # bumped when the expiry queue's entry changes
        # requests, by id
        self._labels: list[Hashable] = []
        self._rtime: list[float] = []  # -inf where the time was unknown
        self._data: list[bytes | None] = []  # kept while a segment names the request (None: in the file)
        self._refs: list[int] = []  # segments naming the request
        # with ``records_in_memory``: the requests whose bytes are in memory,
        # least recently used first; the others' are in a temporary file
        self._keep = records_in_memory
        self._resident: dict[int, None] = {}
        self._at: dict[int, tuple[int, int]] = {}  # request id -> (offset, length) in the file
        self._file = AppendFile("fidelity-prefix-store-")
        self._heap: list[tuple[int, int, int, int]] = []  # (stamp, -bottom depth, segment, version)
        # the children of nodes with many, sorted by their bytes: node -> (bytes, children)
        self._sorted: dict[int, tuple[list[bytes], list[int]]] = {}
        #: Python-level steps taken (trie look-ups and new blocks): the
        #: benchmark's measure that work per request follows new tokens
        self.steps = 0

    # -- walking ---------------------------------------------------------------
    def _walk(self, req: bytes, nfull: int) -> list[tuple[int, int]]:
        """The full blocks of the request (packed ids ``req``) present in the
        trie, from the root down (ignoring lifetimes), as ``(segment, count)``
        parts: the first ``count`` nodes of each segment."""
        u = self.unit * ITEM
        children, seg_of, nodes_of = self._children, self._seg, self._nodes
        parts: list[tuple[int, int]] = []
        node, i = self.ROOT, 0
        while i < nfull:
            block = req[i * u : (i + 1) * u]
            child = children.get((node, _hash(block)), -1)
            count = 0 if child < 0 else self._along(req, child, i, nfull)
            if not count:  # not stored, or the hash is another block's: this one's bytes key it, if stored
                child = self._clash.get((node, block), -1)
                if child < 0:
                    break
                count = self._along(req, child, i, nfull)
                assert count
            s = seg_of[child]
            parts.append((s, count))
            node = nodes_of[s][count - 1]
            i += count
        self.steps += len(parts) + (i < nfull)  # look-ups made
        return parts

    def _along(self, req: bytes, child: int, i: int, nfull: int) -> int:
        """How many nodes of ``child``'s segment, from ``child`` on, hold the
        request's blocks from block ``i`` (0: not even ``child``: a node below
        the top of its segment was found through a hash another block shares)."""
        s = self._seg[child]
        nodes = self._nodes[s]
        if nodes[0] != child:
            return 0
        u = self.unit * ITEM
        rid = self._stamp[s]
        rec = self._record(rid)
        assert rec is not None
        return agreeing_blocks(req, memoryview(rec).cast("B"), i * u, min(len(nodes) - self._leafy[s], nfull - i), u)

    def _match(self, req: bytes, n_tokens: int, parts: list[tuple[int, int]], now: float | None,
               ) -> tuple[int, Hashable | None]:
        """:meth:`longest` from the walked ``parts`` of the request's full blocks."""
        unit, ttl = self.unit, self.ttl
        check = ttl is not None and now is not None
        rtime, stamp = self._rtime, self._stamp
        nfull = n_tokens // unit
        k = 0
        node = self.ROOT
        best_seg = -1
        for s, count in parts:
            # liveness is a prefix of the path
            if k >= nfull or (check and rtime[stamp[s]] + ttl < now):  # type: ignore[operator]
                break
            count = min(count, nfull - k)
            k += count
            node = self._nodes[s][count - 1]
            best_seg = s
        depth = k * unit
        # extend into the children of the deepest live block (partial blocks,
        # and full blocks that match only part of the way)
        rest_b = req[depth * ITEM : min(n_tokens, depth + unit) * ITEM]
        extra = 0
        if rest_b:
            kids = self._kids[node]
            if len(kids) > _MANY:
                extra, best_seg = self._sorted_match(node, rest_b, best_seg, now if check else None)
            else:
                seg_of, firsts = self._seg, self._first
                first = first_id(rest_b)
                for c in kids:
                    if firsts[c] != first:  # shares no token: the usual sibling
                        continue
                    s = seg_of[c]
                    if check and rtime[stamp[s]] + ttl < now:  # type: ignore[operator]
                        continue
                    n = common_tokens(self._block(c), rest_b)
                    # the longest; of equally long ones, the latest used (a
                    # rule that does not depend on which node came first)
                    if n > extra or (n == extra and n and stamp[s] > stamp[best_seg]):
                        extra, best_seg = n, s
        if best_seg < 0:
            return 0, None
        return depth + extra, self._labels[self._stamp[best_seg]]

    def _sorted_match(self, node: int, rest_b: bytes, best_seg: int, now: float | None) -> tuple[int, int]:
        """The loop of :meth:`_match` over the many children of ``node``, from
        where ``rest_b`` sorts among their bytes outwards (docs/prefix-store.md):
        ``(tokens shared, segment)``, ``(0, best_seg)`` when none shares a token."""
        keys, nodes = self._order(node)
        seg_of, stamp, rtime, ttl = self._seg, self._stamp, self._rtime, self.ttl
        m = len(keys)
        extra = 0
        # two runs away from where rest_b sorts, each sharing less and less:
        # merged, the children come in order of what they share, most first
        lo = bisect_left(keys, rest_b)
        hi = lo
        n_lo = common_tokens(keys[lo - 1], rest_b) if lo else 0
        n_hi = common_tokens(keys[hi], rest_b) if hi < m else 0
        while True:
            if n_lo >= n_hi:
                n, j = n_lo, lo - 1
                lo -= 1
                n_lo = common_tokens(keys[lo - 1], rest_b) if lo > 0 else 0
            else:
                n, j = n_hi, hi
                hi += 1
                n_hi = common_tokens(keys[hi], rest_b) if hi < m else 0
            if not n or n < extra:
                return extra, best_seg  # no child left shares more
            s = seg_of[nodes[j]]
            if now is not None and rtime[stamp[s]] + ttl < now:  # type: ignore[operator]
                continue
            if n > extra or stamp[s] > stamp[best_seg]:
                extra, best_seg = n, s

    def _order(self, node: int) -> tuple[list[bytes], list[int]]:
        """The children of ``node`` sorted by their bytes, as two parallel
        lists (made on first use, kept in step by :meth:`_adopt` and :meth:`_unlink`)."""
        got = self._sorted.get(node)
        if got is None:
            pairs = sorted((self._block(c), c) for c in self._kids[node])
            got = self._sorted[node] = ([b for b, _ in pairs], [c for _, c in pairs])
        return got

    def _adopt(self, parent: int, child: int, block: bytes) -> None:
        """``child`` (holding ``block``) is a new child of ``parent``, after
        any with the same bytes."""
        self._kids[parent].append(child)
        got = self._sorted.get(parent)
        if got is not None:
            i = bisect_right(got[0], block)
            got[0].insert(i, block)
            got[1].insert(i, child)

    def _child_holding(self, node: int, block: bytes) -> int | None:
        """The first child of ``node`` whose bytes are ``block``, if any."""
        kids = self._kids[node]
        if len(kids) > _MANY:
            keys, nodes = self._order(node)
            i = bisect_left(keys, block)
            return nodes[i] if i < len(keys) and keys[i] == block else None
        # (a full block's key holds its hash, never equal to a partial block's bytes)
        return next(compress(kids, map(eq, map(_BLOCK, map(self._key.__getitem__, kids)), repeat(block))), None)

    def _block(self, v: int) -> bytes:
        """The bytes of node ``v``'s block: its key's, or for a full block
        the slice of the ids of the request that last used its segment."""
        held = self._key[v][1]
        if type(held) is bytes:
            return held
        rid = self._stamp[self._seg[v]]
        rec = self._record(rid)
        u = self.unit * ITEM
        at = (self._depth[v] - 1) * u
        return memoryview(rec).cast("B")[at : at + u].tobytes()

    def longest(self, tokens: Any, now: float | None) -> tuple[int, Hashable | None]:
        """The longest live common prefix of ``tokens`` (``array('q')``,
        packed bytes, or any sequence of ints) with anything stored, and the
        label of the latest request that used it (ties: the one used last)."""
        req = packed(token_bytes_or_array(tokens))
        n = len(req) // ITEM
        return self._match(req, n, self._walk(req, n // self.unit), now)

    # -- storing ---------------------------------------------------------------
    def feed(self, tokens: Any, output: Any, now: float | None, label: Hashable) -> tuple[int, Hashable | None]:
        """:meth:`longest` for the prompt ``tokens``, then write the prompt
        followed by ``output`` (empty: the prompt alone), with one walk: every
        block of it is now used by this request at ``now``. The store keeps
        ``tokens`` itself, not a copy: do not change it afterwards."""
        record = tokens = token_bytes_or_array(tokens)
        if len(output):  # a new array (or bytes): the caller's stay as they are
            record = tokens + packed(token_bytes_or_array(output)) if isinstance(tokens, bytes) else tokens + as_token_array(output)
        req = packed(record)
        if self.expire and now is not None:
            self._expire(now)
        n = len(tokens) // ITEM if isinstance(tokens, bytes) else len(tokens)
        parts = self._walk(req, len(req) // (self.unit * ITEM))
        found = self._match(req, n, parts, now)
        self._store(req, record, parts, now, label)
        return found

    def _new_seg(self, nodes: list[int], stamp: int, leafy: bool) -> int:
        s = len(self._nodes)
        self._nodes.append(nodes)
        self._stamp.append(stamp)
        self._leafy.append(leafy)
        self._ver.append(0)
        if len(nodes) > leafy:  # it has full blocks: a walk may jump along it
            self._refs[stamp] += 1
        seg_of = self._seg
        for v in nodes:
            seg_of[v] = s
        return s

    def _restamp(self, s: int, rid: int) -> None:
        old = self._stamp[s]
        if old == rid:
            return
        self._stamp[s] = rid
        if len(self._nodes[s]) > self._leafy[s]:
            self._refs[rid] += 1
            self._unref(old)

    def _unref(self, rid: int) -> None:
        self._refs[rid] -= 1
        if not self._refs[rid]:
            self._data[rid] = None
            if self._keep is not None:
                self._resident.pop(rid, None)
                self._at.pop(rid, None)  # its bytes in the file are not read again

    # -- records out of memory (``records_in_memory``) -----------------------------
    def _record(self, rid: int) -> Any:
        """The bytes of request ``rid`` (read back from the file if they
        went there), now the most recently used."""
        rec = self._data[rid]
        if self._keep is None:  # all in memory
            return rec
        if rec is None:
            at = self._at.get(rid)
            if at is None:
                return None
            rec = self._data[rid] = self._file.read(*at)
        else:
            self._resident.pop(rid, None)
        self._hold(rid)
        return rec

    def _hold(self, rid: int) -> None:
        """Request ``rid``'s bytes stay in memory; the least recently used
        beyond ``records_in_memory`` go to the file (once: they never change)."""
        resident = self._resident
        resident[rid] = None
        while len(resident) > self._keep:  # type: ignore[operator]
            old = next(iter(resident))
            del resident[old]
            if old not in self._at:
                view = memoryview(self._data[old]).cast("B")  # type: ignore[arg-type]
                self._at[old] = (self._file.append(view), len(view))
            self._data[old] = None

    def _new_leaf(self, parent: int, block: bytes, seg: int) -> int:
        """A node for a partial block (``block``, shorter than a unit): in
        no dict, its key holds its bytes."""
        self.steps += 1
        nid = len(self._kids)
        self._kids.append([])
        self._key.append((parent, block))
        self._first.append(first_id(block))
        self._depth.append(self._depth[parent] + 1)
        self._seg.append(seg)
        self._adopt(parent, nid, block)
        return nid

    def _new_chain(self, parent: int, data: bytes, k: int, nfull: int, seg: int) -> int:
        """Nodes for the full blocks ``k`` to ``nfull`` of the packed ids
        ``data``, a chain under ``parent`` in segment ``seg`` (built with list
        operations); the last."""
        u = self.unit * ITEM
        blocks = [data[i * u : (i + 1) * u] for i in range(k, nfull)]
        m = len(blocks)
        first = len(self._kids)
        ids = range(first, first + m)
        pairs: list[tuple[int, Any]] = list(zip([parent, *ids[:-1]], map(_hash, blocks)))
        if pairs[0] in self._children:  # a sibling's block has this hash (the others have new parents)
            pairs[0] = (parent, blocks[0])
            self._clash[(parent, blocks[0])] = first
            self._children.update(zip(pairs[1:], ids[1:]))
        else:
            self._children.update(zip(pairs, ids))
        self._key += pairs
        if _LITTLE_ENDIAN:  # each block's first id (first_id's reading), strided in C
            self._first.extend(memoryview(data).cast("q")[k * self.unit : nfull * self.unit : self.unit])
        else:
            self._first.extend(map(first_id, blocks))
        self._kids += [[j] for j in ids[1:]]
        self._kids.append([])
        self._adopt(parent, first, blocks[0])
        top = self._depth[parent] + 1
        self._depth += range(top, top + m)
        self._seg += [seg] * m
        self._nodes[seg] += ids
        self.steps += m
        return first + m - 1

    def _store(self, data: bytes, record: Any, parts: list[tuple[int, int]], now: float | None,
               label: Hashable) -> None:
        rid = len(self._labels)
        self._labels.append(label)
        self._rtime.append(_NEG_INF if now is None else now)
        self._data.append(record)
        self._refs.append(0)  # segments with full blocks that name it (a leaf alone needs no bytes)
        nodes_of = self._nodes
        touched: list[int] = []
        for s, count in parts:
            nodes = nodes_of[s]
            if count < len(nodes):  # the request leaves this chain part-way: split it
                self._new_seg(nodes[count:], self._stamp[s], self._leafy[s])
                del nodes[count:]
                self._leafy[s] = False
                touched.append(len(nodes_of) - 1)  # its queue entry moves with it
            self._restamp(s, rid)
            touched.append(s)
        u = self.unit * ITEM
        nfull = len(data) // u
        k = sum(c for _, c in parts)
        cur = parts[-1][0] if parts else -1
        node = nodes_of[cur][-1] if parts else self.ROOT
        if k < nfull:
            if cur < 0:
                cur = self._new_seg([], rid, False)
                self._refs[rid] += 1  # full blocks follow
                touched.append(cur)
            self._drop_leaves_under(node, data[k * u : (k + 1) * u])
            node = self._new_chain(node, data, k, nfull, cur)
        if len(data) > nfull * u:
            tail = data[nfull * u :]
            leaf = self._child_holding(node, tail)
            if leaf is not None:  # a leaf is a segment of its own: join it to this chain
                ls = self._seg[leaf]
                if cur >= 0:
                    self._nodes[ls] = []
                    self._ver[ls] += 1  # its queue entry is void (a leaf alone holds no bytes)
                    nodes_of[cur].append(leaf)
                    self._seg[leaf] = cur
                    self._leafy[cur] = True
                else:
                    self._restamp(ls, rid)
                    touched.append(ls)
            else:
                if cur < 0:
                    cur = self._new_seg([], rid, False)
                    touched.append(cur)
                self._drop_leaves_under(node, tail)
                leaf = self._new_leaf(node, tail, cur)
                nodes_of[cur].append(leaf)
                self._leafy[cur] = True
        if not self._refs[rid]:
            self._data[rid] = None
        elif self._keep is not None:
            self._hold(rid)
        if self.expire:
            for s in touched:
                self._queue(s)

    def _drop_leaves_under(self, node: int, block: bytes) -> None:
        """Drop the partial blocks under ``node`` that ``block`` (about to be
        stored there) starts with: it wins every tie with them, so they would
        never be found again (docs/scan.md). A node with many children keeps
        them (the sorted index does not find prefixes in one look-up)."""
        kids = self._kids[node]
        if len(kids) > _MANY:
            return
        key, u = self._key, self.unit * ITEM
        for c in [c for c in kids if type(key[c][1]) is bytes and len(key[c][1]) < u and block.startswith(key[c][1])]:
            s = self._seg[c]
            if self._nodes[s] == [c]:  # (a leaf under the node a walk ended at is a segment of its own)
                self._drop(s)

    def _unlink(self, v: int) -> None:
        """Take node ``v`` out of the trie: out of its dict, its parent's
        children and their sorted index."""
        pair = self._key[v]
        keyed = self._children if type(pair[1]) is int else self._clash
        if keyed.get(pair) == v:  # (a partial block is in neither)
            del keyed[pair]
        self._kids[pair[0]].remove(v)
        got = self._sorted.get(pair[0])
        if got is not None:
            i = got[1].index(v)  # a list of ints: searched in C
            del got[0][i], got[1][i]
        self._sorted.pop(v, None)
        self._seg[v] = -1
        self._key[v] = _GONE  # (its bytes, for a partial block)

    # -- expiry (with ``expire``) ---------------------------------------------
    def _queue(self, s: int) -> None:
        nodes = self._nodes[s]
        if nodes:
            self._ver[s] += 1
            heappush(self._heap, (self._stamp[s], -self._depth[nodes[-1]], s, self._ver[s]))

    def _expire(self, now: float) -> None:
        """Drop every block whose lifetime ended before ``now`` (the queue is
        in last-use order, so the dead segments come first)."""
        heap, rtime, ttl = self._heap, self._rtime, self.ttl
        while heap and rtime[heap[0][0]] + ttl < now:  # type: ignore[operator]
            _, _, s, ver = heappop(heap)
            if ver == self._ver[s]:
                self._drop(s)
        self._tidy()

    def _drop(self, s: int) -> None:
        """Take every block of segment ``s`` out of the trie, the deepest first."""
        nodes = self._nodes[s]
        if len(nodes) > self._leafy[s]:
            self._unref(self._stamp[s])
        while nodes:
            self._unlink(nodes.pop())
        self._leafy[s] = False

    def _tidy(self) -> None:
        heap = self._heap
        if len(heap) > 4 * len(self._nodes) + 64:  # drop void entries now and then
            self._heap = [e for e in heap if e[3] == self._ver[e[2]]]
            heapify(self._heap)
