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
    """

    check_id: str
    severity: Severity
    path: str
    message: str

    def __str__(self) -> str:
        where = self.path or "/"
        return f"{self.severity.upper():7s} {self.check_id} [{where}] {self.message}"

    def to_json(self) -> dict[str, str]:
        """The problem as a JSON object."""
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
        """Record a problem."""
        self.problems.append(Problem(check_id, severity, path, message))

    def note(self, text: str) -> None:
        """Record a remark on how the validation ran (shown by :meth:`summary`)."""
        if text not in self.notes:
            self.notes.append(text)

    def ids(self) -> set[str]:
        """The check ids that reported a problem."""
        return {p.check_id for p in self.problems}

    def summary(self) -> str:
        """Human-readable multi-line summary."""
        verdict = "valid" if self.ok else "INVALID"
        head = (
            f"{self.store}: {verdict} at level {self.level} "
            f"({len(self.errors)} errors, {len(self.warnings)} warnings, "
            f"{len(self.checks_run)} checks)"
        )
        notes = [f"  note: {n}" for n in self.notes]
        return "\n".join([head, *notes, *(f"  {p}" for p in self.problems)])

    def to_json(self) -> dict[str, Any]:
        """The report as a JSON object."""
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
