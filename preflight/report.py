"""What preflight found, as values: one `Finding` per thing checked, `ok`, `warn` or `fail`, with
the figure and the fix, rendered as lines like the offline plan's or as JSON.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass
from typing import Any, Literal

Status = Literal["ok", "warn", "fail"]
STATUSES: tuple[Status, ...] = ("ok", "warn", "fail")
QUOTAS_PAGE = "https://console.cloud.google.com/iam-admin/quotas?project={project}"
"""The console's Quotas & System Limits page, where quota increases are requested (Cloud
Quotas, "Set up quota alerts" links it as console.cloud.google.com/iam-admin/quotas)."""


@dataclass(frozen=True)
class Finding:
    """One thing checked. `ok`: it holds; `warn`: it may not, or it could not be read; `fail`:
    `pulumi up` would fail on it."""

    check: str
    status: Status
    subject: str
    """What was checked, e.g. `TPU v5p chips in us-east5`."""
    detail: str
    """The figure: `need 512, quota 256, in use 0`."""
    fix: str = ""
    """What to do about a warn or fail."""

    @property
    def line(self) -> str:
        text = f"{self.subject}: {self.detail}"
        return f"{text}: {self.fix}" if self.fix else text


def ok(check: str, subject: str, detail: str) -> Finding:
    return Finding(check, "ok", subject, detail)


def warn(check: str, subject: str, detail: str, fix: str = "") -> Finding:
    return Finding(check, "warn", subject, detail, fix)


def fail(check: str, subject: str, detail: str, fix: str = "") -> Finding:
    return Finding(check, "fail", subject, detail, fix)


def exit_code(findings: list[Finding]) -> int:
    """0 when nothing fails, 1 otherwise."""
    return 1 if any(f.status == "fail" for f in findings) else 0


def summary(findings: list[Finding]) -> dict[str, int]:
    counts = Counter(f.status for f in findings)
    return {status: counts[status] for status in STATUSES}


def render(findings: list[Finding], heading: str) -> str:
    width = max((len(f.check) for f in findings), default=0)
    lines = [heading, ""]
    lines += [f"  {f.status:<4}  {f.check:<{width}}  {f.line}" for f in findings]
    counts = summary(findings)
    lines += ["", ", ".join(f"{counts[s]} {s}" for s in STATUSES)]
    return "\n".join(lines)


def as_json(findings: list[Finding], **about: Any) -> dict[str, Any]:
    return {
        **about,
        "findings": [asdict(f) for f in findings],
        "summary": summary(findings),
        "exitCode": exit_code(findings),
    }
