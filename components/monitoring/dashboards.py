"""Cloud Monitoring dashboards as JSON (Dashboards API v1 `Dashboard`), derived from the
watches: one per page (capacity, queues, platform) for the stack, and one per team showing
only its queue. Google's own types (`google.cloud.monitoring_dashboard_v1.Dashboard`) parse
every dashboard in the tests."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from components.monitoring.watch import Page, Panel, Watch

PAGES: dict[Page, str] = {
    "capacity": "accelerators",
    "queues": "Kueue queues",
    "platform": "storage and controllers",
}
COLUMNS = 2


@dataclass(frozen=True)
class Board:
    """One dashboard: its resource name's role, its title and its panels."""

    role: str
    title: str
    panels: tuple[Panel, ...]
    watches: tuple[str, ...]
    """The config paths it shows."""


def _widget(panel: Panel) -> dict[str, Any]:
    return {
        "title": panel.title,
        "xyChart": {
            "dataSets": [
                {
                    "timeSeriesQuery": {"prometheusQuery": query},
                    "plotType": "LINE",
                    "legendTemplate": legend,
                    "targetAxis": "Y1",
                }
                for query, legend in panel.queries
            ],
            "yAxis": {"scale": "LINEAR"},
        },
    }


def boards(prefix: str, watches: list[Watch]) -> list[Board]:
    """The stack's pages that have something to show, then each team's page."""
    found = []
    for page, what in PAGES.items():
        on_page = [w for w in watches if w.page == page]
        if on_page:
            found.append(
                Board(
                    page,
                    f"{prefix}: {what}",
                    tuple(p for w in on_page for p in w.panels),
                    tuple(w.key for w in on_page),
                )
            )
    for w in watches:
        if w.owner:
            found.append(Board(f"team-{w.owner}", f"{prefix}: team {w.owner}", w.panels, (w.key,)))
    return found


def dashboard_json(board: Board) -> str:
    """The dashboard as the API takes it (camelCase JSON), keys sorted so that the same
    stack gives the same text."""
    body = {
        "displayName": board.title,
        "gridLayout": {"columns": str(COLUMNS), "widgets": [_widget(p) for p in board.panels]},
    }
    return json.dumps(body, sort_keys=True)
