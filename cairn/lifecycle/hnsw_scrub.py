"""Zero the unused element slots of Chroma's HNSW segment files after a forget.

Chroma 1.5 persists each collection's HNSW index as `header.bin`, `data_level0.bin` (one fixed-size slot
per element: vector, links, label), `length.bin` (one int per element) and `link_lists.bin`, sized for the
index's capacity when it has no elements yet. The slots past the element count are written from memory the
process never initialised: in a long-running daemon that memory held earlier strings, so a forgotten
project's path turned up in `length.bin` after a forget. hnswlib reads only slots below the count (a slot
is written in full when an element takes it), so zeroing the rest changes nothing Chroma reads.

The layout is hnswlib's persistent format, version 1 (what chromadb 1.5 writes). A directory whose
header does not read as exactly that, or whose file sizes do not match it, is left alone.
"""

from __future__ import annotations

import struct
from pathlib import Path

#: Persistent-index version, then hnswlib's header: offsetLevel0, max_elements, cur_element_count,
#: size_data_per_element, label_offset, offsetData, maxlevel, enterpoint_node, maxM, maxM0, M, mult,
#: ef_construction.
_HEADER = struct.Struct("<iQQQQQQiIQQQdQ")
_VERSION = 1
_INT = 4


def scrub_segments(chroma_dir: Path) -> int:
    """Zero the unused slots of every HNSW segment under `chroma_dir`; the number of segments scrubbed."""
    scrubbed = 0
    for header in sorted(chroma_dir.glob("*/header.bin")):
        if _scrub(header.parent):
            scrubbed += 1
    return scrubbed


def _scrub(segment: Path) -> bool:
    try:
        raw = (segment / "header.bin").read_bytes()
        if len(raw) < _HEADER.size:
            return False
        version, _, capacity, count, slot, *_ = _HEADER.unpack_from(raw)
        data, lengths = segment / "data_level0.bin", segment / "length.bin"
        if version != _VERSION or count > capacity or slot <= 0:
            return False
        # An index with elements is written with as many slots as it has; an empty one with all its capacity.
        if data.stat().st_size not in (count * slot, capacity * slot):
            return False
        if lengths.stat().st_size not in (count * _INT, capacity * _INT):
            return False
        for path, offset in ((data, count * slot), (lengths, count * _INT)):
            # Chroma may have persisted the index since the header was read (the daemon's vector loop
            # is not paused for a forget): then the slots are no longer known to be unused.
            if (segment / "header.bin").read_bytes() != raw:
                return False
            _zero_from(path, offset)
    except OSError:
        return False
    return True


def _zero_from(path: Path, offset: int) -> None:
    """Overwrite `path` with zeros from `offset` to its end, in place (its size stays)."""
    size = path.stat().st_size
    if offset >= size:
        return
    with path.open("r+b") as out:
        out.seek(offset)
        remaining = size - offset
        block = b"\0" * min(remaining, 1 << 20)
        while remaining:
            step = min(remaining, len(block))
            out.write(block[:step])
            remaining -= step
