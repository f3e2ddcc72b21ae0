"""Each index has its own collections (and contexts): the default SQLite file, each `--index NAME`,
and each PostgreSQL database, whose list lives in the database (api_lists.py). A config of
before (one list shared by the default index and every `--index URL`) is moved on first use."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from .conftest import REPO, CliResult
from .postgres_fixture import requires_postgres
from .test_postgres_bm25_sql import undo_version_9


def _folder(root: Path, name: str, files: dict[str, str]) -> Path:
    folder = root / name
    for rel, text in files.items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_text(text, encoding="utf-8")
    return folder


BETA = "# Beta\n\nThe beta notes rotate keys.\n"


@pytest.fixture
def two_folders(tmp_path: Path) -> tuple[Path, Path]:
    return (
        _folder(tmp_path, "alpha", {"a.md": "# Alpha\n\nThe alpha runbook rotates certificates.\n"}),
        _folder(
            tmp_path, "beta", {"b.md": "# Beta\n\nThe beta notes rotate keys.\n", "c.md": "# C\n\nk\n keys"}
        ),
    )


def _ok(result: CliResult) -> CliResult:
    assert result.exit_code == 0, result.stderr
    return result


def _listed(cli: Callable[..., CliResult], *index: str) -> dict[str, tuple[str, int]]:
    data = _ok(cli(*index, "collection", "list", "--json")).json()
    return {c["collection"]["name"]: (c["collection"]["path"], c["documents"]) for c in data}


def _searched(cli: Callable[..., CliResult], *args: str) -> list[str]:
    data = _ok(cli(*args, "--json")).json()
    return sorted(f"{hit['collection']}/{hit['path']}" for hit in data["results"])


def test_named_sqlite_indexes_each_have_their_own_collections(cli, two_folders) -> None:
    alpha, beta = two_folders
    _ok(cli("collection", "add", alpha, "--name", "x"))
    _ok(cli("--index", "other", "collection", "add", beta, "--name", "x"))
    assert _listed(cli) == {"x": (str(alpha), 1)}
    assert _listed(cli, "--index", "other") == {"x": (str(beta), 2)}
    _ok(cli("--index", "other", "context", "add", "x", "beta's own note"))
    assert _ok(cli("context", "list", "--json")).json() == []
    assert _searched(cli, "--index", "other", "search", "keys", "-c", "x") == [
        "x/b.md",
        "x/c.md",
    ]
    _ok(cli("--index", "other", "collection", "rename", "x", "y"))
    _ok(cli("collection", "remove", "x"))
    assert _listed(cli) == {}
    assert _listed(cli, "--index", "other") == {"y": (str(beta), 2)}


def _toml(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def _config(config_dir: Path, name: str = "index") -> dict:
    import tomllib

    return tomllib.loads((config_dir / f"{name}.toml").read_text(encoding="utf-8"))


@requires_postgres
@pytest.mark.sqlite_only("the default index must be the SQLite file beside the database one")
def test_a_database_index_has_its_own_collections_beside_the_sqlite_one(
    cli, two_folders, postgres_url: str, isolated: Path
) -> None:
    alpha, beta = two_folders
    pg = ("--index", postgres_url)
    _ok(cli("collection", "add", alpha, "--name", "docs"))
    # The same name in the database: no "already exists", and neither list shows the other's.
    _ok(cli(*pg, "collection", "add", beta, "--name", "docs"))
    _ok(cli(*pg, "collection", "add", alpha, "--name", "team"))
    assert _listed(cli) == {"docs": (str(alpha), 1)}
    assert _listed(cli, *pg) == {"docs": (str(beta), 2), "team": (str(alpha), 1)}
    assert sorted(_config(isolated / "config")["collections"]) == ["docs"]
    # Contexts go with the index's collections.
    _ok(cli(*pg, "context", "add", "team", "the team's runbooks"))
    _ok(cli(*pg, "context", "add", "/", "shared by the team"))
    assert _ok(cli("context", "list", "--json")).json() == []
    assert {c["path"] for c in _ok(cli(*pg, "context", "list", "--json")).json()} == {"/", "tansaku://team"}
    # Every command sees the selected index's collections only.
    assert _searched(cli, *pg, "search", "keys", "-c", "docs") == ["docs/b.md", "docs/c.md"]
    assert _searched(cli, "search", "keys", "-c", "docs") == []
    assert cli("search", "rotates", "-c", "team").exit_code != 0  # no such collection here
    status = _ok(cli(*pg, "status", "--json")).json()
    assert sorted(c["collection"]["name"] for c in status["collections"]) == ["docs", "team"]
    update = _ok(cli(*pg, "update", "--json")).json()
    assert sorted(c["name"] for c in update["collections"]) == ["docs", "team"]
    assert sorted(c["name"] for c in _ok(cli("update", "--json")).json()["collections"]) == ["docs"]
    # A second member (another config folder, the same database) sees the same list.
    os.environ["TANSAKU_CONFIG_DIR"] = str(isolated / "member2")
    assert _listed(cli, *pg) == {"docs": (str(beta), 2), "team": (str(alpha), 1)}
    os.environ["TANSAKU_CONFIG_DIR"] = str(isolated / "config")
    # rename and remove change the database's list (with its contexts), not the file's.
    _ok(cli(*pg, "collection", "rename", "team", "ops"))
    assert {c["path"] for c in _ok(cli(*pg, "context", "list", "--json")).json()} == {"/", "tansaku://ops"}
    _ok(cli(*pg, "collection", "remove", "docs"))
    assert _listed(cli, *pg) == {"ops": (str(alpha), 1)}
    assert _listed(cli) == {"docs": (str(alpha), 1)}
    # The list is a table the migrations created.
    import psycopg

    with psycopg.connect(postgres_url) as conn:
        assert conn.execute("SELECT name FROM collections").fetchall() == [("ops",)]


def _today_config(config_dir: Path, collections: dict[str, Path], extra: str = "") -> None:
    lines = [extra] if extra else []
    for name, folder in collections.items():
        lines += [f"[collections.{name}]", f'path = "{folder}"', 'masks = ["**/*.md"]', ""]
    lines += [
        "[contexts]",
        '"/" = "everything"',
        *(f'"tansaku://{name}" = "about {name}"' for name in collections),
    ]
    _toml(config_dir / "index.toml", "\n".join(lines) + "\n")


@requires_postgres
def test_todays_shared_list_is_moved_to_the_index_holding_each_collection(
    cli, tmp_path: Path, postgres_url: str, isolated: Path
) -> None:
    """A config of today: one list for the default SQLite index and `--index URL`. On first use of
    the URL, the collections whose documents are in the database join its list; those the SQLite
    index holds stay in the file (one held by both is in both); one held by neither stays with the
    default index. Nothing is lost, and running it again changes nothing."""
    from tansaku.store.postgres.backend import PostgresBackend

    folders = {
        name: _folder(tmp_path, name, {f"{name}.md": f"# {name}\n\nwords of {name}\n"})
        for name in ("local", "team", "both", "nowhere")
    }
    config_dir = isolated / "config"
    pg = ("--index", postgres_url)
    # Build today's state with today's rules: the file lists every collection; each index holds
    # the documents of those updated into it.
    _today_config(config_dir, {"local": folders["local"], "both": folders["both"]})
    _ok(cli("update"))
    builder = isolated / "builder"  # today's code would have run `--index URL update` here
    url_line = f'[index]\nurl = "{postgres_url}"\n'
    _today_config(builder, {"team": folders["team"], "both": folders["both"]}, url_line)
    os.environ["TANSAKU_CONFIG_DIR"] = str(builder)
    _ok(cli("update"))
    os.environ["TANSAKU_CONFIG_DIR"] = str(config_dir)
    undo_version_9(postgres_url)  # postings as schema 7 kept them
    with PostgresBackend(postgres_url).unchecked() as conn:  # a database of schema 7, as today's
        conn.execute("DROP TABLE collections")
        conn.execute("DROP TABLE contexts")
        conn.execute("UPDATE tansaku_schema SET version = 7")
    _today_config(config_dir, folders)

    # Reading an index of schema 7 moves nothing yet (update upgrades it), but already lists
    # the collections the database holds.
    assert set(_listed(cli, *pg)) == {"team", "both"}
    assert sorted(_config(config_dir)["collections"]) == ["both", "local", "nowhere", "team"]
    _ok(cli(*pg, "update"))  # upgrades to the current schema
    for _ in range(2):  # the move, then again: nothing changes
        assert _listed(cli, *pg) == {"team": (str(folders["team"]), 1), "both": (str(folders["both"]), 1)}
        assert _listed(cli) == {
            "local": (str(folders["local"]), 1),
            "both": (str(folders["both"]), 1),
            "nowhere": (str(folders["nowhere"]), 0),
        }
        file = _config(config_dir)
        assert sorted(file["collections"]) == ["both", "local", "nowhere"]
        assert file["contexts"] == {
            "/": "everything",
            "tansaku://both": "about both",
            "tansaku://local": "about local",
            "tansaku://nowhere": "about nowhere",
        }
        pg_contexts = {c["path"]: c["text"] for c in _ok(cli(*pg, "context", "list", "--json")).json()}
        assert pg_contexts == {
            "/": "everything",
            "tansaku://team": "about team",
            "tansaku://both": "about both",
        }
    # The name "team" is free in the default index now.
    _ok(cli("collection", "add", folders["nowhere"], "--name", "team"))


@requires_postgres
def test_a_config_whose_index_is_the_database_moves_its_whole_list(
    cli, tmp_path: Path, postgres_url: str, isolated: Path
) -> None:
    """``[index] url`` in the config: its collections and contexts all go to the database, also
    those written into the file by hand later."""
    folder = _folder(tmp_path, "runbooks", {"r.md": "# R\n\nrestore\n"})
    config_dir = isolated / "config"
    url_line = f'[index]\nurl = "{postgres_url}"\n'
    _today_config(config_dir, {"runbooks": folder}, extra=url_line)
    _ok(cli("update"))  # a fresh database: the file's list is the index's, created by update
    for _ in range(2):
        assert _listed(cli) == {"runbooks": (str(folder), 1)}
        file = _config(config_dir)
        assert file["collections"] == {} and file["contexts"] == {}
        assert file["index"]["url"] == postgres_url
    assert {c["path"] for c in _ok(cli("context", "list", "--json")).json()} == {"/", "tansaku://runbooks"}
    hand = _folder(tmp_path, "hand", {"h.md": "# H\n\nhand\n"})
    text = (config_dir / "index.toml").read_text(encoding="utf-8")
    text = text.replace("[collections]\n", f'[collections.hand]\npath = "{hand}"\n')
    (config_dir / "index.toml").write_text(text, encoding="utf-8")
    _ok(cli("update", "-c", "hand"))
    assert set(_listed(cli)) == {"runbooks", "hand"}
    assert _config(config_dir)["collections"] == {}


@requires_postgres
@pytest.mark.sqlite_only("the default index must be the SQLite file beside the database one")
def test_a_real_process_sees_only_the_selected_index(two_folders, postgres_url: str, isolated: Path) -> None:
    alpha, beta = two_folders
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [sys.executable, "-m", "tansaku", *args], env=env, capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0, done.stderr
        return done

    run("collection", "add", str(alpha), "--name", "x")
    run("--index", postgres_url, "collection", "add", str(beta), "--name", "x")
    run("--index", "other", "collection", "add", str(alpha), "--name", "x")
    for index, expected in (((), 1), (("--index", "other"), 1), (("--index", postgres_url), 2)):
        listed = json.loads(run(*index, "collection", "list", "--json").stdout)
        assert [(c["collection"]["name"], c["documents"]) for c in listed] == [("x", expected)]
