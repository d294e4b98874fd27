"""Neuron skeletons from SWC: import, query a box, read one neuron, export it back to SWC.

SWC is the plain-text format of neuron morphologies (``id type x y z radius parent``). Here
a file of five synthetic neurons (five trees) is written, imported (one skeleton object per
tree, with ``radius`` and ``swc_type`` kept), queried by box — whole neurons, or only their
nodes and edges inside the box — and one neuron is exported back to SWC.

Run: python examples/skeletons_from_swc.py [OUTPUT_DIR]
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import numpy as np

import zarr_vectors as zv


def random_neuron(rng: np.random.Generator, soma: np.ndarray, first_id: int) -> list[str]:
    """SWC lines of one random branching tree grown from ``soma`` (ids from ``first_id``)."""
    lines = [f"{first_id} 1 {soma[0]:.3f} {soma[1]:.3f} {soma[2]:.3f} 8.0 -1"]
    tips = [(first_id, soma, rng.normal(0, 1, 3))]
    next_id = first_id + 1
    while tips and next_id < first_id + 400:
        parent, at, heading = tips.pop(0)
        heading = heading / np.linalg.norm(heading) + rng.normal(0, 0.3, 3)
        at = at + 4.0 * heading / np.linalg.norm(heading)
        kind = 3 if at[2] < soma[2] else 4  # basal below the soma, apical above
        lines.append(f"{next_id} {kind} {at[0]:.3f} {at[1]:.3f} {at[2]:.3f} 1.0 {parent}")
        tips.append((next_id, at, heading))
        if rng.random() < 0.08:  # a branch point
            tips.append((next_id, at, rng.normal(0, 1, 3)))
        next_id += 1
    return lines


def main(out_dir: Path) -> None:
    """Import five neurons from SWC, query them, and export one."""
    rng = np.random.default_rng(5)
    swc = out_dir / "neurons.swc"
    lines = ["# five synthetic neurons"]
    for k in range(5):
        lines += random_neuron(rng, rng.uniform(50, 250, 3), first_id=1000 * k + 1)
    swc.write_text("\n".join(lines) + "\n")

    store = zv.convert(swc, out_dir / "neurons.zarrvectors", chunk_shape=50.0, overwrite=True)
    assert isinstance(store, zv.VectorStore)
    print(store)

    box = ([100, 100, 100], [200, 200, 200])
    whole = store.query(box)
    clipped = store.query(box, clip=True)
    print(
        f"neurons meeting the box: {whole.object_ids.tolist()}; "
        f"{len(clipped)} of their nodes and {len(clipped.edges)} edges lie inside it"
    )

    neuron = store.read_objects([2])
    print(
        f"neuron 2: {len(neuron)} nodes, {len(neuron.edges)} edges, "
        f"mean radius {neuron.attributes['radius'].mean():.2f}"
    )
    out = zv.convert(store, out_dir / "neuron_2.swc", ids=[2], overwrite=True)
    written = [ln for ln in out.read_text().splitlines() if ln and not ln.startswith("#")]
    assert len(written) == len(neuron)
    print(f"exported {out.name}: {len(written)} nodes")


if __name__ == "__main__":
    if len(sys.argv) > 1:
        main(Path(sys.argv[1]))
    else:
        with tempfile.TemporaryDirectory() as tmp:
            main(Path(tmp))
