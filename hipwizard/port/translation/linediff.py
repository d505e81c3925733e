"""A line diff that stays near-linear on real code: for an external tool's output (hipify-perl/-clang).

``line_opcodes(a, b)`` gives difflib-style opcodes. The common head and tail are stripped; the middle is
anchored on lines that occur exactly once on each side, in order (patience diff: the longest increasing run
of such pairs, O(n log n)); difflib only runs inside the gaps between anchors, which are small on code a
translator rewrote line by line. A gap too large for difflib (``GAP_LIMIT``: the product of its sides'
lengths; a file of many repeated lines has no unique ones to anchor on) is aligned greedily: equal lines
pair up, and after a difference the nearest point where lines agree again (within ``WINDOW`` lines)
resumes the pairing; linear in the gap, and close to difflib's hunks on a translator's output.
"""

from __future__ import annotations

import bisect
import difflib

Opcode = tuple[str, int, int, int, int]
GAP_LIMIT = 2_000_000  # len(a_gap) * len(b_gap) above which difflib is not run (its cost grows with it)
WINDOW = 40  # how far the greedy alignment looks for lines that agree again
RESYNC = 3  # how many lines must agree to resume pairing


def line_opcodes(a: list[str], b: list[str]) -> list[Opcode]:
    """Opcodes ("equal", "replace", "delete", "insert") turning ``a`` into ``b``, as difflib would."""
    blocks: list[tuple[int, int, int]] = []
    _match(a, b, 0, len(a), 0, len(b), blocks, 0)
    return _to_opcodes(blocks, len(a), len(b))


def _match(a, b, alo, ahi, blo, bhi, out, depth) -> None:
    """Append the matching blocks (i, j, n) of a[alo:ahi] and b[blo:bhi], in order."""
    head = 0
    while alo + head < ahi and blo + head < bhi and a[alo + head] == b[blo + head]:
        head += 1
    if head:
        out.append((alo, blo, head))
    alo, blo = alo + head, blo + head
    tail = 0
    while alo < ahi - tail and blo < bhi - tail and a[ahi - 1 - tail] == b[bhi - 1 - tail]:
        tail += 1
    ahi2, bhi2 = ahi - tail, bhi - tail
    if alo < ahi2 and blo < bhi2:
        anchors = _unique_anchors(a, b, alo, ahi2, blo, bhi2) if depth < 8 else []
        if anchors:
            i0, j0 = alo, blo
            for i, j in anchors:
                _match(a, b, i0, i, j0, j, out, depth + 1)
                out.append((i, j, 1))
                i0, j0 = i + 1, j + 1
            _match(a, b, i0, ahi2, j0, bhi2, out, depth + 1)
        else:
            _small_gap(a, b, alo, ahi2, blo, bhi2, out)
    if tail:
        out.append((ahi2, bhi2, tail))


def _unique_anchors(a, b, alo, ahi, blo, bhi) -> list[tuple[int, int]]:
    """Pairs (i, j) of lines unique on both sides, the longest run increasing in both i and j."""
    count_a: dict[str, int] = {}
    for i in range(alo, ahi):
        count_a[a[i]] = count_a.get(a[i], 0) + 1
    count_b: dict[str, int] = {}
    where_b: dict[str, int] = {}
    for j in range(blo, bhi):
        line = b[j]
        if count_a.get(line) == 1:
            count_b[line] = count_b.get(line, 0) + 1
            where_b[line] = j
    pairs = [(i, where_b[a[i]]) for i in range(alo, ahi) if count_b.get(a[i]) == 1]
    if not pairs:
        return []
    # patience: longest increasing subsequence of j over pairs ordered by i
    tails: list[int] = []  # tails[k] = smallest j ending an increasing run of length k+1
    tail_at: list[int] = []  # index into pairs of that run's end
    back = [-1] * len(pairs)
    for n, (_, j) in enumerate(pairs):
        k = bisect.bisect_left(tails, j)
        if k == len(tails):
            tails.append(j)
            tail_at.append(n)
        else:
            tails[k] = j
            tail_at[k] = n
        back[n] = tail_at[k - 1] if k else -1
    run, n = [], tail_at[-1]
    while n != -1:
        run.append(pairs[n])
        n = back[n]
    return run[::-1]


def _small_gap(a, b, alo, ahi, blo, bhi, out) -> None:
    na, nb = ahi - alo, bhi - blo
    if na * nb <= 64 and set(a[alo:ahi]).isdisjoint(b[blo:bhi]):
        return  # the usual hunk (every line renamed): nothing in common, one replacement
    if na * nb <= GAP_LIMIT:
        sm = difflib.SequenceMatcher(None, a[alo:ahi], b[blo:bhi], autojunk=False)
        out.extend((alo + i, blo + j, n) for i, j, n in sm.get_matching_blocks() if n)
    else:
        _greedy(a, b, alo, ahi, blo, bhi, out)


def _greedy(a, b, alo, ahi, blo, bhi, out) -> None:
    """Linear alignment of a big gap: pair equal lines; after a difference, skip to the nearest offsets
    (fewest lines skipped on both sides) where the lines agree again, else pair the two lines as changed."""
    i, j = alo, blo
    while i < ahi and j < bhi:
        if a[i] == b[j]:
            out.append((i, j, 1))
            i, j = i + 1, j + 1
            continue
        found = None
        for d in range(1, WINDOW):
            for di in range(d + 1):
                dj = d - di
                # same-length changes (a line rewritten in place) resync on one equal line; an insertion or a
                # deletion needs RESYNC equal lines, so a common line like "}" does not derail it
                need = 1 if di == dj else RESYNC
                if i + di < ahi and j + dj < bhi and a[i + di] == b[j + dj] and all(
                        i + di + k >= ahi or j + dj + k >= bhi or a[i + di + k] == b[j + dj + k] for k in range(1, need)):
                    found = (di, dj)
                    break
            if found:
                break
        if found is None:
            i, j = i + 1, j + 1
        else:
            i, j = i + found[0], j + found[1]


def _to_opcodes(blocks: list[tuple[int, int, int]], la: int, lb: int) -> list[Opcode]:
    # adjacent blocks fuse, as in difflib's get_matching_blocks
    fused: list[list[int]] = []
    for i, j, n in blocks:
        if fused and fused[-1][0] + fused[-1][2] == i and fused[-1][1] + fused[-1][2] == j:
            fused[-1][2] += n
        else:
            fused.append([i, j, n])
    ops: list[Opcode] = []
    i = j = 0
    for ai, bj, n in fused + [[la, lb, 0]]:
        tag = "replace" if i < ai and j < bj else "delete" if i < ai else "insert" if j < bj else ""
        if tag:
            ops.append((tag, i, ai, j, bj))
        if n:
            ops.append(("equal", ai, ai + n, bj, bj + n))
        i, j = ai + n, bj + n
    return ops
