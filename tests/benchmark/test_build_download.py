"""The download path of `build`: verified against checksums in the recipe, served from 127.0.0.1."""

from __future__ import annotations

import hashlib
import http.server
import threading
from pathlib import Path

import pytest
import yaml

from gradebench.benchmark.inputs import embedded_path
from gradebench.experiments.build import build
from gradebench.cli import main
from gradebench.errors import ChecksumError
from gradebench.recipes import load_recipe


class _Server:
    """Serves ``files`` (name -> bytes) on 127.0.0.1; any other name gets ``fallback`` or 404."""

    def __init__(self, files: dict[str, bytes], fallback: bytes | None = None) -> None:
        self.requests: list[str] = []
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 - http.server API
                name = self.path.rsplit("/", 1)[-1]
                outer.requests.append(name)
                body = files.get(name, fallback)
                if body is None:
                    self.send_error(404)
                    return
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/dataset/"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()


def _demo_csv() -> bytes:
    return next(embedded_path(load_recipe("demo")).glob("*.csv")).read_bytes()


def _recipe(tmp_path: Path, body: bytes, base_url: str = "https://example.invalid/") -> Path:
    p = tmp_path / "served.yaml"
    p.write_text(
        yaml.safe_dump(
            {
                "extends": "esnli",
                "name": "served",
                "source": {
                    "base_url": base_url,
                    "files": [
                        {"filename": "esnli_dev.csv", "split": "validation", "sha256": hashlib.sha256(body).hexdigest()}
                    ],
                },
            }
        )
    )
    return p


def test_build_from_local_server_then_from_cache(tmp_path):
    body = _demo_csv()
    recipe = _recipe(tmp_path, body)
    with _Server({"esnli_dev.csv": body}) as srv:
        first = build(recipe, source=srv.url, out=tmp_path / "out", progress=False)
        assert srv.requests == ["esnli_dev.csv"]
    assert first.splits["validation"]["queries"] == 48
    # the server is gone: the verified copy in the cache is used, with no request
    again = build(recipe, source=srv.url, out=tmp_path / "out2", progress=False)
    assert again.fingerprint == first.fingerprint
    # same bytes read from a local path give the same fingerprint (inputs hashed by content)
    local = tmp_path / "local"
    local.mkdir()
    (local / "esnli_dev.csv").write_bytes(body)
    assert build(recipe, source=local, out=tmp_path / "out3", progress=False).fingerprint == first.fingerprint


def test_checksum_mismatch_deletes_and_fails(tmp_path, capsys):
    # the real esnli recipe pins the authors' files; our server returns other bytes
    with _Server({}, fallback=b"pairID,gold_label\nnot,the,real,file\n") as srv:
        with pytest.raises(ChecksumError):
            build("esnli", source=srv.url, out=tmp_path / "out", progress=False)
        code = main(["build", "esnli", "--source", srv.url, "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "esnli_train_1.csv" in err
    cache = Path(__import__("os").environ["GRADEBENCH_CACHE"])
    assert not [p for p in cache.rglob("*") if p.is_file()]  # nothing kept
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").rglob("*.parquet"))


@pytest.mark.parametrize(
    ("recipe", "fixture", "files"),
    [
        ("winowhy", "winowhy", {"winowhy.json": "test", "cat_ref.json": "test"}),
        ("chaosnli-snli", "chaosnli/chaosNLI_v1.0", {"chaosNLI_snli.jsonl": "test"}),
    ],
)
def test_download_path_of_other_builders(tmp_path, monkeypatch, recipe, fixture, files):
    """The engine's download path is generic: verified files land in the cache and the builder locates them."""
    from tests.conftest import FIXTURES

    monkeypatch.setenv("GRADEBENCH_CACHE", str(tmp_path / "cache"))
    bodies = {name: (FIXTURES / fixture / name).read_bytes() for name in files}
    with _Server(bodies) as server:
        spec = {
            "extends": recipe,
            "name": f"{recipe}-served",
            "source": {
                "base_url": server.url,
                "files": [
                    {"filename": name, "split": split, "sha256": hashlib.sha256(bodies[name]).hexdigest()}
                    for name, split in files.items()
                ],
            },
        }
        path = tmp_path / "r.yaml"
        path.write_text(yaml.safe_dump(spec), encoding="utf-8")
        served = build(path, out=tmp_path / "out", progress=False)
        assert sorted(server.requests) == sorted(files)
    local = build(recipe, source=FIXTURES / fixture / next(iter(files)), out=tmp_path / "local", progress=False)
    assert served.splits == local.splits
    again = build(path, out=tmp_path / "out", progress=False)  # from the verified cache, no server
    assert again.cached
