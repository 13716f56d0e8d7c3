"""``memhub get | list | delete | search`` and ``import --force-user``, run as the CLI runs them."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from memhub import AsyncMemory, MemhubSettings
from memhub._portal import run_sync
from memhub.cli import main
from memhub.cli.imports import database_label

Cli = Callable[..., tuple[int, str, str]]


@pytest.fixture
def cli(
    db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> Cli:
    monkeypatch.setenv("MEMHUB_DATA_DIR", str(tmp_path))

    def run(*argv: str) -> tuple[int, str, str]:
        code = main(["--database-url", db_url, *argv])
        out = capsys.readouterr()
        return code, out.out, out.err

    return run


async def _seed(settings: MemhubSettings) -> str:
    async with AsyncMemory(settings=settings) as memory:
        added = await memory.add("I keep bees.", user_id="ada", infer=False, wait=True)
    return str(added["results"][0]["id"])


def test_list_get_search_delete_show_ids(cli: Cli, settings: MemhubSettings) -> None:
    memory_id = run_sync(_seed(settings))
    code, out, _ = cli("list", "--user-id", "ada")
    assert code == 0 and out.startswith(memory_id) and out.rstrip().endswith("I keep bees.")
    code, out, _ = cli("search", "bees", "--user-id", "ada")
    assert code == 0 and out.split()[0] == memory_id
    code, out, _ = cli("get", memory_id)
    assert code == 0 and json.loads(out)["memory"] == "I keep bees."
    assert cli("delete", memory_id)[:2] == (0, f"deleted {memory_id}\n")
    code, out, err = cli("list", "--user-id", "ada")
    assert (code, out, err) == (0, "", "no memories for user ada\n")
    code, out, err = cli("search", "bees", "--user-id", "ada")
    assert code == 0 and out == "" and "no memories of user ada match 'bees'" in err
    code, _, err = cli("get", memory_id)
    assert code == 1 and f"no memory {memory_id}" in err


def test_import_force_user_says_where_the_data_went(
    cli: Cli, settings: MemhubSettings, tmp_path: Path, db_url: str
) -> None:
    path = tmp_path / "in.jsonl"
    lines = [{"user_id": "a", "text": "one"}, {"user_id": "b", "text": "two"}, {"text": "three"}]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    code, _, err = cli("import", str(path), "--force-user", "zoe", "--no-infer")
    assert code == 0
    assert "imported 3 of 3 items" in err and "into user_id=zoe (3)" in err
    assert "database: postgresql://" in err

    async def users() -> dict[str, int]:
        async with AsyncMemory(settings=settings) as memory:
            return {u: len((await memory.get_all(user_id=u))["results"]) for u in ("a", "b")}

    assert run_sync(users()) == {"a": 0, "b": 0}
    code, out, _ = cli("list", "--user-id", "zoe")
    assert len(out.splitlines()) == 3


def test_database_label_hides_the_password(tmp_path: Path) -> None:
    url = "postgresql://app:s3cret@db.example:5432/mem"
    assert (
        database_label(MemhubSettings(database_url=url))
        == "postgresql://app:***@db.example:5432/mem"
    )
    assert "embedded" in database_label(MemhubSettings(data_dir=tmp_path))


async def _seed_retired(settings: MemhubSettings) -> str:
    async with AsyncMemory(settings=settings) as memory:
        added = await memory.add("I keep wasps.", user_id="ada", infer=False, wait=True)
        memory_id = str(added["results"][0]["id"])
        await memory.retire(memory_id, user_id="ada", actor="mcp", reason="delete_memory")
    return memory_id


def test_list_retired_and_restore(cli: Cli, settings: MemhubSettings) -> None:
    memory_id = run_sync(_seed_retired(settings))
    assert cli("list", "--user-id", "ada")[1] == ""
    code, out, _ = cli("list", "--user-id", "ada", "--retired")
    assert code == 0 and out.startswith(f"{memory_id}  retired ") and "by mcp" in out
    assert cli("restore", memory_id, "--user-id", "ada")[:2] == (
        0,
        f"restored {memory_id}: I keep wasps.\n",
    )
    assert cli("list", "--user-id", "ada")[1].rstrip().endswith("I keep wasps.")
    code, _, err = cli("restore", memory_id)
    assert code == 1 and err.startswith("memhub: memory") and "is current" in err
    code, _, err = cli("restore", memory_id, "--user-id", "bob")
    assert code == 1 and "no memory" in err


def test_changes_lists_what_models_changed_and_undo_takes_its_id(
    cli: Cli, settings: MemhubSettings
) -> None:
    memory_id = run_sync(_seed_retired(settings))
    code, out, _ = cli("changes", "--user-id", "ada")
    assert code == 0
    head, before, after, why = out.splitlines()
    change_id = head.split()[0]
    assert "RETIRE by mcp" in head and before.endswith("I keep wasps.")
    assert after.endswith("None") and why.endswith("delete_memory")
    code, out, _ = cli("changes", "--user-id", "ada", "--json")
    assert json.loads(out)["memory_id"] == memory_id
    code, _, err = cli("undo", change_id, "--user-id", "bob")
    assert code == 1 and "no change" in err
    assert cli("undo", change_id, "--user-id", "ada")[:2] == (
        0,
        f"undid change {change_id}: {memory_id} is now: I keep wasps.\n",
    )
    assert "(undone)" in cli("changes", "--user-id", "ada")[1]
    code, _, err = cli("changes", "--user-id", "nobody")
    assert code == 0 and "no model changes for user nobody" in err
