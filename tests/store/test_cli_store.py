"""`burster simulate --store URL`: the simulated controller keeps its state and ledger in a database."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

import pytest
import sqlalchemy as sa

from burster.cli import main


def test_a_simulation_keeps_its_ledger_in_the_store(store_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["simulate", "--demo", "--start-day", "4", "--days", "1", "--json"]
    assert main(argv) == 0
    in_memory = json.loads(capsys.readouterr().out)
    assert main([*argv, "--store", store_url]) == 0
    stored = json.loads(capsys.readouterr().out)
    engine = sa.create_engine(store_url)
    with engine.connect() as conn:
        rows = conn.exec_driver_sql("SELECT usd, market FROM burster_ledger WHERE cluster = 'default'").all()
        charged = conn.exec_driver_sql("SELECT count(DISTINCT node_id) FROM burster_ledger").scalar()
        live = conn.exec_driver_sql("SELECT count(*) FROM burster_nodes WHERE state NOT IN ('terminated', "
                                    "'failed')").scalar()
    engine.dispose()
    assert {k: v for k, v in stored.items() if k != "wall_s"} == {k: v for k, v in in_memory.items() if k != "wall_s"}
    assert charged == stored["launches"] > 100 and live == 0  # a node handed to another team's job: two rows
    assert float(sum(Decimal(str(usd)) for usd, _ in rows)) == pytest.approx(stored["cloud_usd"], abs=0.01)
    spot = sum(Decimal(str(usd)) for usd, market in rows if market == "spot")
    assert float(spot) == pytest.approx(stored["cloud_usd_spot"], abs=0.01)
    by_provider: dict[str, Decimal] = {}
    for provider, _, usd, _ in _spend_query(store_url):  # docs/state.md's query, as a user runs it
        by_provider[provider] = by_provider.get(provider, Decimal(0)) + Decimal(str(usd))
    assert {p: round(float(usd), 2) for p, usd in by_provider.items()} == stored["cloud_usd_by_provider"]


def _spend_query(url: str) -> list[tuple[str, str, object, float]]:
    doc = (Path(__file__).parents[2] / "docs" / "state.md").read_text()
    query = doc.split("```sql\n", 1)[1].split("```", 1)[0]
    engine = sa.create_engine(url)
    with engine.connect() as conn:
        rows = [tuple(r) for r in conn.exec_driver_sql(query).all()]
    engine.dispose()
    return rows  # type: ignore[return-value]


def test_a_store_that_holds_state_already_is_refused(sqlite_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["simulate", "--demo", "--start-day", "4", "--days", "1", "--json", "--store", sqlite_url]
    assert main(argv) == 0
    capsys.readouterr()
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "already holds state for cluster 'default'" in err and "[controller] cluster" in err


def test_a_simulation_that_cannot_run_leaves_no_store_behind(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "sim.db"
    assert main(["simulate", "--demo", "--start-day", "50", "--store", f"sqlite:///{db}"]) == 2
    assert "no jobs submitted in day 50" in capsys.readouterr().err
    assert not db.exists()


def test_a_bad_store_url_is_a_usage_error_without_its_password(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", "--demo", "--days", "0.25", "--store", "sim.db"]) == 2
    assert "burster: error: --store: store.url 'sim.db' is not a database URL" in capsys.readouterr().err
    assert main(["simulate", "--demo", "--days", "0.25", "--store",
                 "postgresql+psycopg2://sim:s3cret-pw@127.0.0.1:1/sim"]) == 2
    err = capsys.readouterr().err
    assert "burster: error: --store: state store 'postgresql+psycopg2://***@127.0.0.1:1/sim' cannot be opened" in err
    assert "s3cret-pw" not in err
