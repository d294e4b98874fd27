"""Validation results: problems with stable check ids (spec §11)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = ["Problem", "Severity", "ValidationReport"]

Severity = Literal["error", "warning"]


@dataclass(frozen=True, slots=True)
class Problem:
    """One finding of the validator.

    Attributes
    ----------
    check_id
        Stable identifier of the check, e.g. ``"L2.chunk_shape_positive"`` (spec §11).
    severity
        ``"error"`` (the store violates the spec) or ``"warning"``.
    path
        Store path the problem concerns (``""`` for the root).
    message
        What is wrong and what was expected.

    Examples
    --------
    >>> import zarr_vectors as zv
    >>> report = zv.validate("no-such-store.zarr")
    >>> problem = report.problems[0]
    >>> problem.check_id, problem.severity
    ('L1.store_exists', 'error')
    """

    check_id: str
    severity: Severity
    path: str
    message: str

    def __str__(self) -> str:
        where = self.path or "/"
        return f"{self.severity.upper():7s} {self.check_id} [{where}] {self.message}"

    def to_json(self) -> dict[str, str]:
        """The problem as a JSON object.

        Examples
        --------
        >>> import zarr_vectors as zv
        >>> problem = zv.Problem("L2.chunk_shape_positive", "error", "zarr.json", "is -1")
        >>> problem.to_json()["check_id"]
        'L2.chunk_shape_positive'
        >>> print(problem)
        ERROR   L2.chunk_shape_positive [zarr.json] is -1
        """
        return {
            "check_id": self.check_id,
            "severity": self.severity,
            "path": self.path,
            "message": self.message,
        }


@dataclass(slots=True)
class ValidationReport:
    """The outcome of :func:`zarr_vectors.validate`.

    Attributes
    ----------
    store
        What was validated.
    level
        The highest level checked (levels are cumulative).
    problems
        Every finding, errors and warnings, in the order found.
    checks_run
        Ids of the checks that were evaluated.
    notes
        Remarks on how the validation ran (e.g. that only a sample of chunks was read).

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import numpy as np
    >>> import zarr_vectors as zv
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "cells.zarr"
    >>> zv.write_points(path, np.ones((10, 3), dtype=np.float32), chunk_shape=10.0)
    >>> report = zv.validate(path, level=3)
    >>> report.ok, report.level, report.errors, report.warnings
    (True, 3, [], [])
    >>> report
    <ValidationReport ok level=3 errors=0 warnings=0>
    """

    store: str
    level: int
    problems: list[Problem] = field(default_factory=list)
    checks_run: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when no check reported an error (warnings allowed)."""
        return not self.errors

    @property
    def errors(self) -> list[Problem]:
        """Problems of severity ``"error"``."""
        return [p for p in self.problems if p.severity == "error"]

    @property
    def warnings(self) -> list[Problem]:
        """Problems of severity ``"warning"``."""
        return [p for p in self.problems if p.severity == "warning"]

    def add(self, check_id: str, severity: Severity, path: str, message: str) -> None:
        """Record a problem.

        Examples
        --------
        >>> import zarr_vectors as zv
        >>> report = zv.ValidationReport(store="cells.zarr", level=2)
        >>> report.add("L2.chunk_shape_positive", "error", "zarr.json", "chunk_shape is -1")
        >>> report.ok, [p.check_id for p in report.errors]
        (False, ['L2.chunk_shape_positive'])
        """
        self.problems.append(Problem(check_id, severity, path, message))

    def note(self, text: str) -> None:
        """Record a remark on how the validation ran (shown by :meth:`summary`).

        A remark already recorded is not recorded again.

        Examples
        --------
        >>> import zarr_vectors as zv
        >>> report = zv.ValidationReport(store="cells.zarr", level=3)
        >>> report.note("sampled 4 of 100 chunks")
        >>> report.note("sampled 4 of 100 chunks")
        >>> report.notes
        ['sampled 4 of 100 chunks']
        """
        if text not in self.notes:
            self.notes.append(text)

    def ids(self) -> set[str]:
        """The check ids that reported a problem.

        Examples
        --------
        >>> import zarr_vectors as zv
        >>> zv.validate("no-such-store.zarr").ids()
        {'L1.store_exists'}
        """
        return {p.check_id for p in self.problems}

    def summary(self) -> str:
        """Human-readable multi-line summary.

        Examples
        --------
        >>> import zarr_vectors as zv
        >>> report = zv.ValidationReport(store="cells.zarr", level=2, checks_run=["L1.a"])
        >>> report.add("L2.units", "warning", "zarr.json", "no unit")
        >>> print(report.summary())
        cells.zarr: valid at level 2 (0 errors, 1 warnings, 1 checks)
          WARNING L2.units [zarr.json] no unit
        """
        verdict = "valid" if self.ok else "INVALID"
        head = (
            f"{self.store}: {verdict} at level {self.level} "
            f"({len(self.errors)} errors, {len(self.warnings)} warnings, "
            f"{len(self.checks_run)} checks)"
        )
        notes = [f"  note: {n}" for n in self.notes]
        return "\n".join([head, *notes, *(f"  {p}" for p in self.problems)])

    def to_json(self) -> dict[str, Any]:
        """The report as a JSON object.

        Examples
        --------
        >>> import json
        >>> import zarr_vectors as zv
        >>> report = zv.ValidationReport(store="cells.zarr", level=1)
        >>> print(json.dumps(report.to_json(), indent=None))
        {"store": "cells.zarr", "level": 1, "ok": true, "checks_run": [], "notes": [],
         "problems": []}
        """
        return {
            "store": self.store,
            "level": self.level,
            "ok": self.ok,
            "checks_run": self.checks_run,
            "notes": self.notes,
            "problems": [p.to_json() for p in self.problems],
        }

    def __repr__(self) -> str:
        return (
            f"<ValidationReport {'ok' if self.ok else 'INVALID'} level={self.level} "
            f"errors={len(self.errors)} warnings={len(self.warnings)}>"
        )
