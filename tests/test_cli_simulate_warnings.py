"""`burster simulate` and what its simulated controller logs: warnings summarized once (each at its
simulated time under --explain), and burst nodes cut off by a join timeout shorter than the boots."""

from __future__ import annotations

import json
import logging
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from burster.cli import main
from burster.plan import Plan, Terminate
from burster.reconciler import PassReport
from burster.sim.controller_log import ControllerLog
from burster.sim.summary import NeverJoined
from tests.test_budget_period import ledger_entry

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _short_join_timeout(tmp_path: Path) -> Path:
    path = tmp_path / "burster.toml"
    path.write_text("[policy]\njoin_timeout_s = 200\n")  # above cost.launch_latency_s (180), below slow boots
    return path


def test_a_join_timeout_below_the_boots_is_reported_with_its_bill_and_its_warnings_once(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = _short_join_timeout(tmp_path)
    assert main(["simulate", "--demo", "--start-day", "1", "--days", "1", "--json", "--config", str(config)]) == 0
    captured = capsys.readouterr()
    out = json.loads(captured.out)
    assert out["never_joined_nodes"] > 0 and 0 < out["never_joined_usd"] < out["cloud_usd"]
    lines = captured.err.splitlines()
    assert not [line for line in lines if line.startswith("blocking ")]  # no warning per node on stderr
    (logged,) = [line for line in lines if line.startswith("note: the simulated controller logged")]
    assert "its node never came up or joined the pool in time" in logged
    (note,) = [line for line in lines if line.startswith(f"note: {out['never_joined_nodes']} burst node(s)")]
    assert "policy.join_timeout_s (200 s)" in note and f"${out['never_joined_usd']:,.2f}" in note
    assert "azure 200 s" in note


def test_the_default_demo_cuts_off_no_boot_and_logs_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", "--demo", "--days", "1", "--json"]) == 0
    captured = capsys.readouterr()
    out = json.loads(captured.out)
    assert (out["never_joined_nodes"], out["never_joined_usd"]) == (0, 0.0)
    assert "note:" not in captured.err


def test_explain_prints_each_warning_at_its_simulated_time(tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    config = _short_join_timeout(tmp_path)
    assert main(["simulate", "--demo", "--start-day", "1", "--days", "1", "--explain", "--config", str(config)]) == 0
    captured = capsys.readouterr()
    lines = captured.out.splitlines()
    warned = [i for i, line in enumerate(lines) if "  warning: blocking " in line]
    assert warned
    for i in warned:  # after the terminate it came with, at that pass's simulated time
        at = lines[i][:19]
        before = [line for line in lines[:i] if line.startswith(f"{at}  terminate: ")]
        assert before and "join timeout 200s" in before[-1]
    assert "note: the simulated controller logged" not in captured.err


def test_never_joined_bills_only_nodes_terminated_at_the_join_timeout() -> None:
    seen = NeverJoined()
    plan = Plan(actions=(Terminate(("n-1", "n-2"), request_id="unjoined-n-1", reason="join", never_joined=True),
                         Terminate(("n-3",), request_id="idle-n-3", reason="idle")))
    seen.observe(PassReport(T0, plan))
    seen.observe(PassReport(T0 + timedelta(seconds=10), plan))  # made again: counted once
    ledger = [replace(ledger_entry("t", usd, T0, 0.1), node_id=n)
              for n, usd in (("n-1", "1.25"), ("n-2", "0.5"), ("n-3", "9"), ("n-1", "0.25"))]
    assert seen.node_ids == {"n-1", "n-2"} and seen.usd(ledger) == 2.0


def test_the_controller_log_counts_by_kind_and_restores_the_logger() -> None:
    logger = logging.getLogger("burster.reconcile")
    log = ControllerLog(lambda: T0, echo=False)
    with log.attached():
        for key in ("a", "b", "a"):
            logger.warning("blocking %s: its node never came up", key)
        logger.warning("provider %s degraded this pass", "aws")
        logger.info("not a warning")
    assert logger.propagate and log not in logger.handlers
    assert log.summary(kinds=1) == ('note: the simulated controller logged 4 warning(s): 3x like "blocking a: '
                                    'its node never came up"; 1 other kind(s) (--explain prints each at its '
                                    'simulated time)')
    assert ControllerLog(lambda: T0, echo=False).summary() is None
